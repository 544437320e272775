import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import t from 'tap';
import { startTestDaemon } from '../../helpers/daemon.js';

const PASSWORD = 'correct horse battery staple 42';

/** `+33` then nine digits: the scrub file's i-th number. */
const nth = (i: number) => `33${String(i).padStart(9, '0')}`;

/** A CSV upload produced as it is read, never held whole: a header, `count` numbers, then `bad` invalid rows. */
function scrubFile(count: number, bad: string[]): Readable {
  let i = 0;
  return new Readable({
    read() {
      if (i === 0) this.push('number\n');
      if (i >= count) {
        this.push(bad.map((b) => `${b}\n`).join(''));
        this.push(null);
        return;
      }
      const lines: string[] = [];
      for (const end = Math.min(count, i + 10_000); i < end; i++) lines.push(`+${nth(i)}\n`);
      this.push(lines.join(''));
    },
  });
}

t.test('Switch DNC operations: gate, access, list through the dnc store, import, export, scrub', async (t) => {
  const d = await startTestDaemon(t);
  const { accounts, keys, switchSubscriptions, switchDnc } = d.modules.services;
  const acc = await accounts.createAccount({ email: `${randomUUID()}@switch-dnc.test`, password: PASSWORD });
  const key = (await keys.create(acc.id, { mode: 'live', scopes: ['switch:manage'] })).secret;
  const testKey = (await keys.create(acc.id, { mode: 'test', scopes: ['switch:manage'] })).secret;
  const dialerKey = (await keys.create(acc.id, { mode: 'live', scopes: ['dialer:write'] })).secret;
  const get = (path: string, token = key) => d.https('GET', path, { token });

  await t.test('no Switch plan: 402 on every operation', async (t) => {
    for (const path of ['/switch/dnc/summary', '/switch/dnc/entries', '/switch/dnc/honor', '/switch/dnc/export']) {
      const r = await get(path);
      t.equal(r.status, 402, path);
      t.equal(r.json.error.code, 'SWITCH_SUBSCRIPTION_REQUIRED');
    }
    const scrub = await d.https('POST', '/switch/dnc/scrub', {
      token: key,
      rawBody: 'number\n+33100000000\n',
      headers: { 'content-type': 'text/csv' },
    });
    t.equal(scrub.status, 402, 'the upload is refused before any job');
  });

  await switchSubscriptions.grant(acc.id, 'plan', null);

  await t.test('scope, test keys and bad input', async (t) => {
    const scoped = await get('/switch/dnc/summary', dialerKey);
    t.equal(scoped.status, 403);
    t.match(scoped.json.error.message, /switch:manage/);
    t.equal((await get('/switch/dnc/honor', testKey)).status, 200, 'a test key reads');
    const write = await d.https('PATCH', '/switch/dnc/honor', { token: testKey, body: { calls: true } });
    t.equal(write.status, 403);
    t.equal(write.json.error.code, 'TEST_KEY_NOT_ALLOWED');
    const empty = await d.https('PATCH', '/switch/dnc/honor', { token: key, body: {} });
    t.equal(empty.status, 400);
    t.equal(empty.json.error.code, 'VALIDATION_ERROR');
    const badNumber = await get('/switch/dnc/check?number=12');
    t.equal(badNumber.status, 400);
    t.same(badNumber.json.error.details, [{ path: 'number', message: 'must be an E.164 number' }]);
    const stranger = await get(`/switch/dnc/check?number=%2B33100000000&customerId=${randomUUID()}`);
    t.equal(stranger.status, 404, 'a customerId that is not a customer');
    const json = await d.https('POST', '/switch/dnc/scrub', { token: key, body: { numbers: [] } });
    t.equal(json.status, 400, 'a JSON body is not a file');
    const none = await get(`/switch/dnc/scrub/${randomUUID()}`);
    t.equal(none.status, 404);
  });

  await t.test('import lands in the dnc store the dialer reads; entries and export read it back', async (t) => {
    const lines = ['number,note'];
    for (let i = 0; i < 1000; i++) lines.push(`+${nth(i)},asked`);
    lines.push('330001*,range', 'nope');
    const imp = await d.https('POST', '/switch/dnc/import', {
      token: key,
      rawBody: lines.join('\n'),
      headers: { 'content-type': 'text/csv' },
    });
    t.equal(imp.status, 200, imp.text);
    t.match(imp.json.data, { rowsRead: 1002, imported: 1001, invalid: 1 });
    t.equal(await d.modules.services.dnc.isBlocked(acc.id, `+${nth(5)}`), true, 'the same list as /dnc');
    t.equal(await d.modules.services.dnc.isBlocked(acc.id, `+${nth(150_000)}`), true, 'the prefix');

    const check = await get(`/switch/dnc/check?number=%2B${nth(150_000)}`);
    t.match(check.json.data, { listed: true, match: { kind: 'prefix', value: '330001' }, refused: null });
    const page = await get('/switch/dnc/entries?kind=prefix');
    t.equal(page.json.data.length, 1);
    const summary = await get('/switch/dnc/summary');
    t.match(summary.json.data, { list: { numbers: 1000, prefixes: 1 }, honor: { calls: false, sms: false } });

    const exp = await get('/switch/dnc/export');
    t.equal(exp.status, 200);
    t.match(exp.headers['content-type'], /text\/csv/);
    const rows = exp.text.trim().split('\n');
    t.equal(rows[0], 'entry,note,source,createdAt');
    t.equal(rows.length, 1002, 'every entry once');
    t.ok(rows.includes(`${nth(999)},asked,import,${rows.find((r) => r.startsWith(nth(999)))!.split(',')[3]}`));
    t.ok(
      rows.some((r) => r.startsWith('330001*,range,import,')),
      'a prefix as import writes it',
    );

    // The export is a file import reads back: another Switch account gets the same list.
    const other = await accounts.createAccount({ email: `${randomUUID()}@switch-dnc.test`, password: PASSWORD });
    await switchSubscriptions.grant(other.id, 'trial', new Date(Date.now() + 86_400_000));
    const otherKey = (await keys.create(other.id, { mode: 'live', scopes: ['switch:manage'] })).secret;
    const again = await d.https('POST', '/switch/dnc/import', {
      token: otherKey,
      rawBody: exp.text,
      headers: { 'content-type': 'text/csv' },
    });
    t.match(again.json.data, { imported: 1001, invalid: 0 });
  });

  await t.test('a scrub of 500,000 numbers: 202, then counts and both lists', async (t) => {
    const bad = ['12', 'not a number', '+0123456789', '', '+33 1 00'];
    const started = Date.now();
    const post = await d.https('POST', '/switch/dnc/scrub', {
      token: key,
      rawBody: scrubFile(499_996, bad),
      headers: { 'content-type': 'text/csv' },
    });
    t.equal(post.status, 202, post.text);
    t.match(post.json.data, { phase: 'queued', downloads: null, maxNumbers: 500_000 });
    const id = post.json.data.id as string;
    const early = await get(`/switch/dnc/scrub/${id}?download=clean`);
    if (early.status !== 200) t.equal(early.status, 409, 'no list before the scrub is done');
    await switchDnc.idle();
    const ms = Date.now() - started;
    t.comment(`500,000-row scrub: ${ms} ms from upload to done`);
    const done = await get(`/switch/dnc/scrub/${id}`);
    // The blank row is skipped by the CSV reader; the other four bad rows are invalid.
    const listed = 1000 + 100_000;
    t.match(done.json.data, {
      phase: 'done',
      counts: { total: 500_000, listed, clean: 499_996 - listed, invalid: 4 },
      truncated: false,
      error: null,
    });
    t.equal(done.json.data.downloads.clean, `/api/v1/switch/dnc/scrub/${id}?download=clean`);

    const listedFile = await get(`/switch/dnc/scrub/${id}?download=listed`);
    t.equal(listedFile.status, 200);
    t.match(listedFile.headers['content-disposition'], /attachment/);
    const listedRows = listedFile.text.trim().split('\n');
    t.equal(listedRows[0], 'number');
    t.equal(listedRows.length - 1, listed);
    t.ok(listedRows.includes(`+${nth(999)}`) && listedRows.includes(`+${nth(199_999)}`));
    t.notOk(listedRows.includes(`+${nth(1000)}`));
    const cleanFile = await get(`/switch/dnc/scrub/${id}?download=clean`);
    const cleanRows = cleanFile.text.trim().split('\n');
    t.equal(cleanRows.length - 1, 499_996 - listed);
    t.ok(cleanRows.includes(`+${nth(1000)}`) && cleanRows.includes(`+${nth(499_995)}`));
    t.notOk(cleanRows.includes(`+${nth(100_000)}`));
    const summary = await get('/switch/dnc/summary');
    t.equal(summary.json.data.recentScrubs[0].id, id);
    t.equal((await get(`/switch/dnc/scrub/${id}`, testKey)).status, 200, 'a test key reads the job');
  });

  await t.test('a file over 500,000 rows is cut there and says so', async (t) => {
    const post = await d.https('POST', '/switch/dnc/scrub', {
      token: key,
      rawBody: scrubFile(500_010, []),
      headers: { 'content-type': 'text/csv' },
    });
    t.equal(post.status, 202, post.text);
    await switchDnc.idle();
    const done = await get(`/switch/dnc/scrub/${post.json.data.id}`);
    t.match(done.json.data, { phase: 'done', truncated: true, counts: { total: 500_000 } });
  });
});
