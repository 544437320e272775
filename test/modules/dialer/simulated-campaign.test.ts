import { Readable } from 'node:stream';
import { Decimal } from 'decimal.js';
import t from 'tap';
import { createWorld, eventually } from '../sip-trunks/world.js';

/**
 * A test key's campaign: routed and priced, drawn on test credit, never dialled; its calling
 * window is kept in London wall-clock time across the spring DST change (injected clock).
 */
t.test('a test-key campaign is simulated and waits for its window across a DST change', async (t) => {
  // 29 March 2026 07:45 UTC = 08:45 BST (the clocks went forward at 01:00 UTC).
  let offset = Date.parse('2026-03-29T07:45:00Z') - Date.now();
  const clock = { now: () => new Date(Date.now() + offset) };
  const w = await createWorld(t, { dialer: { tick_ms: 50, call_poll_ms: 100 } }, { clock } as never);
  const { d, operator } = w;
  const { keys, ledger } = d.modules.services;
  const live = (await keys.create(operator.accountId, { mode: 'live', scopes: [] })).secret;
  const test = (await keys.create(operator.accountId, { mode: 'test', scopes: ['dialer:write'] })).secret;
  await ledger.grantTestCredit({
    postingKey: `tc-${operator.accountId}`,
    accountId: operator.accountId,
    amount: '5.000000',
  });
  // Nothing listens there: a simulated call reaches no route.
  const { routeId } = await w.route({ port: 9, prefix: '4475', rate: '0.020000', increment: '60/60' });
  const cliSet = (await w.api('POST', '/dialer/cli-sets', live, { name: 'x', clis: ['+15550003333'] })).body.data;

  const created = await w.api('POST', '/dialer/campaigns', test, {
    name: 'Simulated',
    routeId,
    concurrency: 3,
    maxCallDuration: 120,
    windowStartHour: 9,
    windowEndHour: 17,
    windowTz: 'Europe/London',
    cliSetId: cliSet.id,
    actions: [{ say: 'Hello' }],
  });
  t.equal(created.status, 201, created.text);
  const c = created.body.data;
  t.match(c, { environment: 'test', simulated: true, status: 'draft' });
  const numbers = Array.from({ length: 6 }, (_, i) => `+44750000000${i}`);
  t.equal((await w.api('POST', `/dialer/campaigns/${c.id}/numbers`, test, { numbers })).status, 200);

  const liveOne = await w.api('POST', '/dialer/campaigns', live, { name: 'Live', routeId });
  const refused = await w.api('PUT', `/dialer/campaigns/${liveOne.body.data.id}`, test, { name: 'renamed' });
  t.equal(refused.status, 403);
  t.equal(refused.body.error.code, 'TEST_KEY_NOT_ALLOWED', 'a test key cannot change a live campaign');

  const before = await ledger.balanceOf(operator.accountId);
  const started = await w.api('POST', `/dialer/campaigns/${c.id}/control`, test, { action: 'start' });
  t.equal(started.body.data.status, 'running', started.text);
  await new Promise((r) => setTimeout(r, 800));
  const waiting = (await w.api('GET', `/dialer/campaigns/${c.id}`, test)).body.data;
  t.equal(waiting.numbersDialed, 0, '08:45 BST is before the 09:00 window: nothing dialled');

  // 08:05 UTC is 09:05 in London now (a fixed GMT offset would still say 08:05, outside).
  offset = Date.parse('2026-03-29T08:05:00Z') - Date.now();
  const done = await eventually(async () => {
    const r = (await w.api('GET', `/dialer/campaigns/${c.id}`, test)).body.data;
    return r.status === 'completed' ? r : null;
  }, 20_000);
  t.match(done, { numbersDialed: 6, numbersAnswered: 6, numbersFailed: 0 });
  // One first 60 s block at 0.020 + 0.002 per minute per simulated call.
  t.equal(done.spent, new Decimal('0.022').times(6).toFixed(6));
  const after = await ledger.balanceOf(operator.accountId);
  t.equal(after.balance, before.balance, 'the live balance never moved');
  t.equal(new Decimal(before.testCredit).minus(after.testCredit).toFixed(6), done.spent, 'drawn on test credit');
  const calls = await d.sql<
    { simulated: boolean; createdAt: Date }[]
  >`select simulated, created_at from calls where source = 'api'`;
  t.equal(calls.length, 6);
  t.ok(
    calls.every((x) => x.simulated),
    'every call record is simulated',
  );
  const hours = (await w.api('GET', `/dialer/campaigns/${c.id}/analytics`, live)).body.data;
  t.equal(hours.headline.bestHour.hour, 9, 'the best hour is told in the campaign zone (09 BST, not 08 UTC)');
  t.equal(hours.headline.bestHour.tz, 'Europe/London');
});

t.test('a large contact import streams in with per-row errors and readable progress', async (t) => {
  // Generated as the request reads it: neither side ever holds the file. `make test` imports
  // 200,000 rows (the stream, its stall check and progress are the same at any size);
  // `DIALER_IMPORT_ROWS=1000000` runs the figure (58 s at load 10-11 on 2 cores, about
  // 17,000 rows/s, its longest event-loop stall 141 ms; 365 s and 2.8 s before rows were read a
  // chunk at a time). The campaign's capacity follows, so the file fills it.
  const N = Number(process.env['DIALER_IMPORT_ROWS'] ?? 200_000);
  const w = await createWorld(t, { dialer: { max_numbers_per_campaign: N } });
  const { d, operator } = w;
  const { secret } = await d.modules.services.keys.create(operator.accountId, { mode: 'live', scopes: [] });
  const { routeId } = await w.route({ port: 9, prefix: '44', rate: '0.010000' });
  const c = (await w.api('POST', '/dialer/campaigns', secret, { name: 'Big', routeId })).body.data;
  function* csv() {
    yield 'name,number,city\n';
    const CHUNK = 1_000;
    for (let from = 0; from < N; from += CHUNK) {
      let s = '';
      for (let i = from; i < from + CHUNK; i++) s += `Person ${i},+447${String(i).padStart(9, '0')},Leeds\n`;
      yield s;
    }
    yield 'Bad,12345,X\nDup,+447000000007,Y\n';
  }

  let lagMax = 0;
  let last = performance.now();
  const probe = setInterval(() => {
    const now = performance.now();
    lagMax = Math.max(lagMax, now - last - 10);
    last = now;
  }, 10);
  const progress: number[] = [];
  let finished = false;
  const watching = (async () => {
    while (!finished) {
      const r = await d.https('GET', `/dialer/campaigns/${c.id}/imports`, { token: secret });
      const job = r.json.data[0];
      if (job) progress.push(job.imported);
      if (job?.status === 'completed') return;
      await new Promise((res) => setTimeout(res, 100));
    }
  })();
  const started = Date.now();
  const res = await d.https('POST', `/dialer/campaigns/${c.id}/contacts/import`, {
    token: secret,
    rawBody: Readable.from(csv()),
    headers: { 'content-type': 'text/csv' },
  });
  const ms = Date.now() - started;
  finished = true;
  clearInterval(probe);
  await watching;
  t.equal(res.status, 200, res.text.slice(0, 300));
  t.match(res.json.data, { status: 'completed', rowsRead: N + 2, imported: N, duplicates: 1, invalid: 1 });
  t.same(res.json.data.errors, [{ row: N + 2, value: '12345', message: 'must be an E.164 number' }]);
  t.ok(
    progress.some((p) => p > 0 && p < N),
    `progress was readable while it ran (${progress.length} reads)`,
  );
  const camp = (await d.https('GET', `/dialer/campaigns/${c.id}`, { token: secret })).json.data;
  t.equal(camp.totalNumbers, N);
  const [stored] = await d.sql<{ n: number; distinct: number }[]>`
    select count(*)::int as n, count(distinct number)::int as distinct from dialer_numbers where campaign_id = ${c.id}`;
  t.same(stored, { n: N, distinct: N }, 'every row stored once');
  const [row] = await d.sql<{ name: string; fields: Record<string, string> }[]>`
    select name, fields from dialer_numbers where campaign_id = ${c.id} and number = '447000000007'`;
  t.same(
    row,
    { name: 'Person 7', fields: { city: 'Leeds' } },
    'name and other columns kept; the duplicate row ignored',
  );
  const more = await w.api('POST', `/dialer/campaigns/${c.id}/numbers`, secret, { numbers: ['+447999999999'] });
  t.equal(more.status, 400, 'a full campaign takes no more numbers');
  t.match(more.body.error, { code: 'VALIDATION_ERROR' });
  const again = await w.api('POST', `/dialer/campaigns/${c.id}/numbers`, secret, { numbers: ['+447000000007'] });
  t.match(
    again.body.data,
    { added: 0, duplicates: 1, totalNumbers: N },
    'a number it holds is a duplicate, not a new one',
  );
  // A second file into the campaign that now holds numbers: they go through the conflict check.
  const second = await d.https('POST', `/dialer/campaigns/${c.id}/contacts/import`, {
    token: secret,
    rawBody: 'number\n+447000000007\n+447000000008\n+447000000007\n',
    headers: { 'content-type': 'text/csv' },
  });
  t.match(
    second.json.data,
    { status: 'completed', rowsRead: 3, imported: 0, duplicates: 3 },
    'numbers the campaign holds, and a repeat in the file, are duplicates',
  );
  t.comment(`import of ${N} rows: ${ms} ms, longest event-loop stall ${lagMax.toFixed(0)} ms`);
  // Client and daemon share this process on a shared machine, so scheduling alone can delay a timer
  // by seconds under load; parsing and storing the whole file in one go would hold the loop for most
  // of the import. The progress reads above were answered by this same loop while it ran.
  t.ok(lagMax < Math.max(3000, ms / 20), 'the event loop kept turning');
});
