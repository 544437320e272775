import t from 'tap';
import { createWorld } from '../sip-trunks/world.js';

/** The saved records' operations beyond the shown ones, through the daemon over HTTPS. */
t.test('templates, contact-list members, caller-ID sets and holidays', async (t) => {
  const w = await createWorld(t);
  const { d, operator } = w;
  const { keys } = d.modules.services;
  const live = (await keys.create(operator.accountId, { mode: 'live', scopes: [] })).secret;
  const scoped = (await keys.create(operator.accountId, { mode: 'live', scopes: ['dialer:write'] })).secret;
  const test = (await keys.create(operator.accountId, { mode: 'test', scopes: ['dialer:write'] })).secret;
  const api = (method: string, url: string, body?: unknown, key = live) => w.api(method, url, key, body);

  t.test('one template and how it goes out as an SMS', async (t) => {
    const plain = (
      await api('POST', '/dialer/templates', { name: 'Hi', body: 'Hello {{name}}, your code is {{ code }}.' })
    ).body.data;
    const got = await api('GET', `/dialer/templates/${plain.id}`, undefined, scoped);
    t.equal(got.status, 200, got.text);
    t.same(got.body.data, plain);
    const p = await api('GET', `/dialer/templates/${plain.id}/preview`);
    t.same(p.body.data, {
      id: plain.id,
      body: 'Hello {{name}}, your code is {{ code }}.',
      characters: 40,
      encoding: 'GSM-7',
      segments: 1,
      placeholders: ['name', 'code'],
    });
    const long = (await api('POST', '/dialer/templates', { name: 'Long', body: 'Привет '.repeat(12) })).body.data;
    t.match((await api('GET', `/dialer/templates/${long.id}/preview`)).body.data, {
      characters: 84,
      encoding: 'UCS-2',
      segments: 2,
      placeholders: [],
    });
    t.equal((await api('GET', '/dialer/templates/01a21f31-51aa-7030-82a5-2ae016cdfdf3')).status, 404);
  });

  t.test('contact-list members: renamed, added, paged, removed', async (t) => {
    const list = (
      await api('POST', '/dialer/contact-lists', { name: 'Leads', numbers: ['+447700900001', '+447700900002'] })
    ).body.data;
    const renamed = await api('PATCH', `/dialer/contact-lists/${list.id}`, { name: 'Hot leads' });
    t.match(renamed.body.data, { id: list.id, name: 'Hot leads', count: 2 });
    t.equal((await api('PATCH', `/dialer/contact-lists/${list.id}`, { name: 'x' }, test)).status, 403);
    const added = await api('POST', `/dialer/contact-lists/${list.id}/members`, {
      numbers: ['+447700900002', '+447700900003'],
      contacts: [{ number: '+447700900004', name: 'Ann', fields: { city: 'York' } }],
    });
    t.equal(added.status, 200, added.text);
    t.match(added.body.data, { added: 2, duplicates: 1, list: { count: 4 } });
    const bad = await api('POST', `/dialer/contact-lists/${list.id}/members`, { numbers: ['+1', '+447700900005'] });
    t.equal(bad.status, 400);
    t.equal(bad.body.error.details[0].path, 'numbers/0');
    const page1 = await api('GET', `/dialer/contact-lists/${list.id}/members?limit=3`);
    t.equal(page1.status, 200, page1.text);
    t.same(
      page1.body.data.map((m: { number: string }) => m.number),
      ['+447700900001', '+447700900002', '+447700900003'],
    );
    const page2 = await api('GET', `/dialer/contact-lists/${list.id}/members?limit=3&cursor=${page1.body.nextCursor}`);
    t.match(page2.body.data, [{ number: '+447700900004', name: 'Ann', fields: { city: 'York' } }]);
    t.equal(page2.body.hasMore, false);
    t.equal(
      (await api('GET', `/dialer/contact-lists/${list.id}/members`, undefined, scoped)).status,
      403,
      'full access only',
    );
    const removed = await api('DELETE', `/dialer/contact-lists/${list.id}/members/%2B447700900001`);
    t.same(removed.body.data, { number: '+447700900001', count: 3 });
    t.equal((await api('DELETE', `/dialer/contact-lists/${list.id}/members/%2B447700900001`)).status, 404);
    const detail = (await api('GET', `/dialer/contact-lists/${list.id}`)).body.data;
    t.same(detail.numbers, ['+447700900002', '+447700900003', '+447700900004']);
    t.equal(detail.count, 3);
  });

  t.test('one caller-ID set, renamed and given new caller IDs', async (t) => {
    const set = (await api('POST', '/dialer/cli-sets', { name: 'a', clis: ['+15550000001'] })).body.data;
    t.same((await api('GET', `/dialer/cli-sets/${set.id}`)).body.data, set);
    t.equal((await api('GET', `/dialer/cli-sets/${set.id}`, undefined, scoped)).status, 403, 'full access only');
    const changed = await api('PATCH', `/dialer/cli-sets/${set.id}`, {
      name: 'b',
      clis: ['+15550000002', '0015550000003', '+15550000002'],
    });
    t.equal(changed.status, 200, changed.text);
    t.match(changed.body.data, { id: set.id, name: 'b', clis: '+15550000002\n+15550000003' });
    const unknownCli = await api('GET', '/dialer/caller-ids/%2B15550000001');
    t.equal(unknownCli.status, 404, 'a caller ID no longer in a set and never used is not the account’s');
    const mine = await api('GET', '/dialer/caller-ids/%2B15550000003');
    t.match(mine.body.data, { cli: '+15550000003', status: 'active', calls: 0, sets: [{ id: set.id, name: 'b' }] });
  });

  t.test('holidays: listed by date, validated, removed', async (t) => {
    for (const [date, name] of [
      ['2026-12-25', 'Christmas'],
      ['2026-01-01', 'New year'],
    ]) {
      t.equal((await api('POST', '/dialer/holidays', { date, name })).status, 201);
    }
    t.equal((await api('POST', '/dialer/holidays', { date: '2026-02-30', name: 'No such day' })).status, 400);
    t.equal((await api('POST', '/dialer/holidays', { date: '2026-12-25', name: 'Again' })).status, 409);
    const all = (await api('GET', '/dialer/holidays')).body.data;
    t.same(
      all.map((h: { date: string }) => h.date),
      ['2026-01-01', '2026-12-25'],
    );
    t.same(
      (await api('GET', '/dialer/holidays?from=2026-06-01')).body.data.map((h: { name: string }) => h.name),
      ['Christmas'],
    );
    t.equal((await api('DELETE', `/dialer/holidays/${all[0].id}`)).status, 200);
    t.equal((await api('DELETE', `/dialer/holidays/${all[0].id}`)).status, 404);
  });
});
