import { randomUUID } from 'node:crypto';
import t from 'tap';
import { startTestDaemon } from '../../helpers/daemon.js';

t.test('do-not-call: add, list, check, import (streamed CSV), remove', async (t) => {
  const d = await startTestDaemon(t);
  const { accounts, keys } = d.modules.services;
  const email = `${randomUUID()}@dnc.test`;
  const acc = await accounts.createAccount({ email, password: 'correct horse battery staple 42' });
  const { secret } = await keys.create(acc.id, { mode: 'live', scopes: ['dialer:write'] });
  const other = await accounts.createAccount({
    email: `${randomUUID()}@dnc.test`,
    password: 'correct horse battery staple 42',
  });
  const otherKey = (await keys.create(other.id, { mode: 'live', scopes: [] })).secret;

  const add = await d.https('POST', '/dnc', {
    token: secret,
    body: { numbers: ['+44 7700 900123', '447700900124', '+447700900123'], prefixes: ['1900'], note: 'asked' },
  });
  t.equal(add.status, 200, add.text);
  t.same(add.json.data, { added: 3, duplicates: 0 }, 'a repeat in one request counts once');
  const again = await d.https('POST', '/dnc', { token: secret, body: { numbers: ['+447700900124'] } });
  t.same(again.json.data, { added: 0, duplicates: 1 });

  const bad = await d.https('POST', '/dnc', { token: secret, body: { numbers: ['12'], prefixes: ['0x'] } });
  t.equal(bad.status, 400);
  t.equal(bad.json.error.code, 'VALIDATION_ERROR');
  t.same(
    bad.json.error.details.map((x: { path: string }) => x.path),
    ['numbers/0', 'prefixes/0'],
  );

  const check = async (n: string, token = secret) =>
    (await d.https('GET', `/dnc/check?number=${encodeURIComponent(n)}`, { token })).json.data;
  t.equal((await check('+447700900123')).blocked, true);
  t.equal((await check('+19005550100')).match.kind, 'prefix', 'a prefix blocks every number under it');
  t.equal((await check('+447700900125')).blocked, false);
  t.equal((await check('+447700900123', otherKey)).blocked, false, 'lists are per account');
  t.equal(await d.modules.services.dnc.isBlocked(acc.id, '+19005551234'), true);

  // 20,000 rows with a header, a prefix, a note, bad rows, and a duplicate.
  const lines = ['number,note'];
  for (let i = 0; i < 20_000; i++) lines.push(`+3361${String(i).padStart(7, '0')},import`);
  lines.push('not-a-number', '+447700900123', '4420*', '"+33 6 99 99 99 99"');
  const imp = await d.https('POST', '/dnc/import', {
    token: secret,
    rawBody: lines.join('\n'),
    headers: { 'content-type': 'text/csv' },
  });
  t.equal(imp.status, 200, imp.text);
  t.match(imp.json.data, { rowsRead: 20_004, imported: 20_002, duplicates: 1, invalid: 1, truncated: false });
  t.same(imp.json.data.errors, [{ row: 20_002, value: 'not-a-number', message: 'must be an E.164 number' }]);
  t.equal((await check('+33610019999')).blocked, true);
  t.equal((await check('+442079460000')).match.value, '4420');
  t.equal((await check('+33699999999')).blocked, true, 'quoted cells with spaces');

  const json = await d.https('POST', '/dnc/import', { token: secret, body: { numbers: [] } });
  t.equal(json.status, 400, 'a JSON body is not a file');

  const page = await d.https('GET', '/dnc?kind=prefix&limit=1', { token: secret });
  t.equal(page.status, 200);
  t.equal(page.json.data.length, 1);
  t.equal(page.json.hasMore, true);
  const next = await d.https('GET', `/dnc?kind=prefix&limit=1&cursor=${page.json.nextCursor}`, { token: secret });
  t.equal(next.json.data[0].value, '1900');
  t.equal(next.json.hasMore, false);

  const del = await d.https('DELETE', `/dnc/${next.json.data[0].id}`, { token: secret });
  t.equal(del.status, 200);
  t.equal((await check('+19005550100')).blocked, false);
  const gone = await d.https('DELETE', `/dnc/${next.json.data[0].id}`, { token: secret });
  t.equal(gone.status, 404);
  const foreign = await d.https('DELETE', `/dnc/${page.json.data[0].id}`, { token: otherKey });
  t.equal(foreign.status, 404, 'another account cannot remove it');
});
