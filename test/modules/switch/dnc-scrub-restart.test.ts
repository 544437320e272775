import { randomUUID } from 'node:crypto';
import { rmSync, statSync } from 'node:fs';
import { Readable } from 'node:stream';
import { join } from 'node:path';
import t from 'tap';
import type { Sql } from '../../../src/db/connection.js';
import { startTestDaemon, httpsCall } from '../../helpers/daemon.js';
import { childDaemonConfig, spawnChildDaemon } from '../sip-trunks/child-daemon.js';
import { eventually } from '../sip-trunks/world.js';

/** `+33` then nine digits: the scrub file's i-th number. */
const nth = (i: number) => `33${String(i).padStart(9, '0')}`;
const file = (count: number, bad: string[] = []) =>
  ['number', ...Array.from({ length: count }, (_, i) => `+${nth(i)}`), ...bad].join('\n') + '\n';

/** The advisory lock a test trigger makes a scrub's checkpoint wait on (written out in the trigger). */
const PAUSE_LOCK = 4242;

/** A test trigger: every scrub's checkpoint of 10,000 rows or more waits while the test holds PAUSE_LOCK. */
async function pauseAtSecondCheckpoint(sql: Sql): Promise<void> {
  await sql`
    create function test_pause_scrub() returns trigger language plpgsql as $$
    begin
      if new.phase = 'scrubbing' and new.total >= 10000 then perform pg_advisory_xact_lock(4242); end if;
      return new;
    end $$`;
  await sql`create trigger test_pause_scrub before update on switch_dnc_scrubs for each row execute function test_pause_scrub()`;
}

/** The backends of this database waiting on PAUSE_LOCK. */
const waitingScrubs = (sql: Sql) => sql<{ pid: number }[]>`
  select pid from pg_locks
  where locktype = 'advisory' and not granted and objid = ${PAUSE_LOCK}
    and database = (select oid from pg_database where datname = current_database())`;

/**
 * A daemon SIGKILLed in the middle of two DNC scrubs, then started again on the same state directory
 * (the same node id). A test trigger holds every scrub at its second checkpoint (10,000 rows) until
 * the daemon is dead, so each is killed with 5,000 rows checkpointed and more written past that.
 * - The scrub whose file is still there resumes from its checkpoint: the lists are cut back to the
 *   checkpoint, the rows after it read again, and the result is exactly the file's numbers, once
 *   each. A number listed after the crash is clean when it lies before the checkpoint (scrubbed
 *   before it was listed, so not read again) and listed after it.
 * - The scrub whose uploaded file is gone fails with an error saying so.
 */
t.test('DNC scrubs resume after their daemon is killed and started again', async (t) => {
  const d = await startTestDaemon(t);
  const sql = d.sql;
  const { accounts, keys, switchSubscriptions } = d.modules.services;
  const acc = await accounts.createAccount({
    email: `${randomUUID()}@switch-scrub.test`,
    password: 'correct horse battery staple 42',
  });
  await switchSubscriptions.grant(acc.id, 'plan', null);
  const key = (await keys.create(acc.id, { mode: 'live', scopes: ['switch:manage'] })).secret;
  const csv = { 'content-type': 'text/csv' };
  const imported = await d.https('POST', '/switch/dnc/import', {
    token: key,
    rawBody: `number\n+${nth(7)}\n+${nth(12_000)}\n${nth(25_000).slice(0, 8)}*\n`,
    headers: csv,
  });
  t.equal(imported.status, 200, imported.text);
  t.match(imported.json.data, { imported: 3 });

  await pauseAtSecondCheckpoint(sql);

  const overrides = childDaemonConfig(t, d.config.database.url);
  const state = (overrides.paths as { state: string }).state;
  const call = (port: number, method: string, path: string, o: { rawBody?: string } = {}) =>
    httpsCall(`https://127.0.0.1:${port}/api/v1${path}`, method, undefined, {
      insecure: true,
      token: key,
      ...(o.rawBody === undefined ? {} : { rawBody: o.rawBody, headers: csv }),
    });
  const waiting = () => waitingScrubs(sql);

  let resumed = '';
  let gone = '';
  const first = await spawnChildDaemon(t, overrides);
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${PAUSE_LOCK})`;
    const a = await call(first.ports['http']!, 'POST', '/switch/dnc/scrub', { rawBody: file(30_000, ['12', 'nope']) });
    t.equal(a.status, 202, a.text);
    const b = await call(first.ports['http']!, 'POST', '/switch/dnc/scrub', { rawBody: file(12_000) });
    t.equal(b.status, 202, b.text);
    resumed = a.json.data.id as string;
    gone = b.json.data.id as string;
    // Both scrubs wrote their second batch and wait to checkpoint it: kill the daemon there.
    await eventually(async () => (await waiting()).length === 2, 120_000);
    await first.kill();
    // The killed daemon's waiting statements must not commit when the lock is let go.
    for (const w of await waiting()) await tx`select pg_terminate_backend(${w.pid})`;
  });
  await sql`drop trigger test_pause_scrub on switch_dnc_scrubs`;

  const open = await sql<{ id: string; phase: string; total: number; cleanBytes: string; resumes: number }[]>`
    select id, phase, total, clean_bytes::text, resumes from switch_dnc_scrubs where id in (${resumed}, ${gone})`;
  t.same(
    open.map((r) => [r.phase, r.total, r.resumes]),
    [
      ['scrubbing', 5000, 0],
      ['scrubbing', 5000, 0],
    ],
    'both killed with their first batch checkpointed',
  );
  const checkpointed = open.find((r) => r.id === resumed)!;
  const written = statSync(join(state, 'switch-dnc-scrubs', acc.id, resumed, 'clean.csv')).size;
  t.ok(written > Number(checkpointed.cleanBytes), 'the clean list holds a batch past the checkpoint');
  // Numbers listed while the daemon is down: one before the checkpoint, one after it.
  const later = await d.https('POST', '/switch/dnc/import', {
    token: key,
    rawBody: `number\n+${nth(100)}\n+${nth(15_000)}\n`,
    headers: csv,
  });
  t.equal(later.status, 200, later.text);
  rmSync(join(state, 'switch-dnc-scrubs', acc.id, gone, 'input.csv'));

  const second = await spawnChildDaemon(t, overrides);
  const port = second.ports['http']!;
  const ended = await eventually(async () => {
    const rows = await sql<{ id: string; phase: string; error: string | null; resumes: number }[]>`
      select id, phase, error, resumes from switch_dnc_scrubs where id in (${resumed}, ${gone})`;
    return rows.every((r) => r.phase === 'done' || r.phase === 'failed') ? rows : null;
  }, 120_000);
  const byId = new Map(ended.map((r) => [r.id, r]));
  t.match(byId.get(gone), { phase: 'failed', resumes: 1, error: /uploaded file is gone/ }, 'no file: a clear failure');
  t.match(byId.get(resumed), { phase: 'done', resumes: 1, error: null });

  const view = await call(port, 'GET', `/switch/dnc/scrub/${resumed}`);
  t.equal(view.status, 200, view.text);
  // Listed: 7 and 12,000 (numbers), 25,000–25,999 (the prefix), 15,000 (listed after the kill).
  t.match(view.json.data, {
    phase: 'done',
    counts: { total: 30_002, listed: 1003, clean: 30_000 - 1003, invalid: 2 },
    truncated: false,
    error: null,
  });
  const lists = {
    clean: (await call(port, 'GET', `/switch/dnc/scrub/${resumed}?download=clean`)).text.trim().split('\n'),
    listed: (await call(port, 'GET', `/switch/dnc/scrub/${resumed}?download=listed`)).text.trim().split('\n'),
  };
  t.equal(lists.clean[0], 'number');
  t.equal(lists.listed[0], 'number');
  const cleanSet = new Set(lists.clean.slice(1));
  const listedSet = new Set(lists.listed.slice(1));
  t.equal(cleanSet.size, lists.clean.length - 1, 'no number twice in the clean list');
  t.equal(listedSet.size, lists.listed.length - 1, 'no number twice in the listed list');
  const everyNumber = Array.from({ length: 30_000 }, (_, i) => `+${nth(i)}`);
  t.ok(
    everyNumber.every((n) => cleanSet.has(n) !== listedSet.has(n)),
    'every number of the file in exactly one list',
  );
  t.ok(listedSet.has(`+${nth(7)}`) && listedSet.has(`+${nth(12_000)}`) && listedSet.has(`+${nth(25_500)}`));
  t.ok(cleanSet.has(`+${nth(100)}`), 'before the checkpoint: scrubbed before it was listed, not read again');
  t.ok(listedSet.has(`+${nth(15_000)}`), 'after the checkpoint: scrubbed again, now listed');
  await second.kill();
});

/**
 * A daemon stopped (SIGTERM's path: the modules' stop) in the middle of a scrub: the job stops at its
 * next read and leaves the scrub open at its checkpoint, file kept, rather than failing it; started
 * again, the daemon finishes it from there.
 */
t.test('a DNC scrub paused by a shutdown resumes when the daemon starts again', async (t) => {
  const d = await startTestDaemon(t);
  const sql = d.sql;
  const { accounts, switchDnc } = d.modules.services;
  const acc = await accounts.createAccount({
    email: `${randomUUID()}@switch-scrub.test`,
    password: 'correct horse battery staple 42',
  });
  await d.modules.services.dnc.import(acc.id, Readable.from([`number\n+${nth(3)}\n+${nth(29_999)}\n`]));
  await pauseAtSecondCheckpoint(sql);
  let id = '';
  await sql
    .begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(${PAUSE_LOCK})`;
      id = (await switchDnc.startScrub(acc.id, Readable.from([file(30_000)]))).id;
      await eventually(async () => (await waitingScrubs(sql)).length === 1, 60_000);
      // The stop waits for the job, which goes on once the lock is let go: stop first, then let go.
      const stopped = switchDnc.stop();
      return { stopped };
    })
    .then(({ stopped }) => stopped);
  await sql`drop trigger test_pause_scrub on switch_dnc_scrubs`;
  const [paused] = await sql<{ phase: string; total: number; error: string | null }[]>`
    select phase, total, error from switch_dnc_scrubs where id = ${id}`;
  t.match(paused, { phase: 'scrubbing', error: null }, 'left open, not failed');
  t.ok(paused!.total >= 10_000 && paused!.total < 30_000, `paused at a checkpoint (${paused!.total} rows)`);

  await switchDnc.start();
  await switchDnc.idle();
  const done = await switchDnc.scrub(acc.id, id);
  t.match(done, { phase: 'done', counts: { total: 30_000, listed: 2, clean: 29_998, invalid: 0 }, error: null });
  const [row] = await sql<{ resumes: number }[]>`select resumes from switch_dnc_scrubs where id = ${id}`;
  t.equal(row!.resumes, 1);
  const clean = await switchDnc.scrubFile(acc.id, id, 'clean');
  const lines: string[] = [];
  for await (const chunk of clean.stream) lines.push(String(chunk));
  const numbers = lines.join('').trim().split('\n').slice(1);
  t.equal(new Set(numbers).size, 29_998, 'each clean number once');
});
