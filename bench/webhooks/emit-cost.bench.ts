/**
 * What an emit costs PostgreSQL, in load-independent figures: backend CPU, WAL bytes, statements
 * (round trips) and planning per transaction, against the one-insert transaction anchor of
 * webhooks.bench.ts. Runs on a private cluster (bench/lib/private-pg.ts) for pg_stat_statements.
 * Run: npx tsx bench/webhooks/emit-cost.bench.ts [transactions=2000]
 */
import { createServer } from 'node:net';
import postgres from 'postgres';
import type { TransactionSql } from '../../src/db/connection.js';
import { newId } from '../../src/platform/ids.js';
import { emit } from '../../src/webhooks/emit.js';
import { startPrivatePostgres } from '../lib/private-pg.js';
import { readFileSync } from 'node:fs';
import { createTestDatabase } from '../../test/helpers/db.js';

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

/** Nanoseconds a process has run on a CPU (/proc/PID/schedstat: finer than the 10 ms ticks of stat). */
const runNs = (pid: number) => Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
/**
 * Times a process went to sleep of its own accord (/proc/PID/status): a backend sleeps once per wait
 * for its client (and per WAL flush it waits on), so it counts round trips: statements pipelined
 * together arrive in one read, awaited ones cost a wait each. Unlike CPU time, not moved by load.
 */
const waits = (pid: number) =>
  Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);

const teardowns: (() => unknown)[] = [];
const t = { teardown: (fn: () => unknown) => void teardowns.push(fn) };
const n = Number(process.argv[2] ?? 2000);

try {
  const pg = await startPrivatePostgres(await freePort());
  teardowns.push(() => pg.stop());
  process.env['SVC_TEST_PG_ADMIN_URL'] = pg.adminUrl;
  const admin = postgres(pg.adminUrl, { max: 1, onnotice: () => {} });
  teardowns.push(() => admin.end({ timeout: 1 }));
  await admin`alter system set pg_stat_statements.track_planning = on`;
  await admin`select pg_reload_conf()`;

  const { sql, url } = await createTestDatabase(t);
  const dbName = new URL(url).pathname.slice(1);
  // One connection: its backend is the one whose CPU is read.
  const db = postgres(url, { max: 1, onnotice: () => {} });
  teardowns.push(() => db.end({ timeout: 1 }));
  const pid = (await db<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!.pid;

  await sql`create table bench_changes (id uuid primary key, v integer not null)`;
  // An account with `endpoints` endpoints subscribed to every event (never dialled here).
  const account = async (endpoints: number) => {
    const id = newId();
    await sql`
      with a as (insert into accounts (id, email) values (${id}, ${id + '@bench.test'}) returning id)
      insert into webhook_endpoints (id, account_id, url, events, secret, created_at, updated_at)
      select gen_random_uuid(), a.id, 'https://127.0.0.1:1/e' || n, '{*}', 'whsec_bench', now(), now()
      from a, generate_series(1, ${endpoints}) n`;
    return id;
  };
  const none = await account(0);
  const one = await account(1);
  const change = (tx: TransactionSql, i: number) => tx`insert into bench_changes (id, v) values (${newId()}, ${i})`;
  const variants: Record<string, (tx: TransactionSql, i: number) => Promise<unknown>> = {
    base: change,
    emit0_after: async (tx, i) => {
      await change(tx, i);
      await emit(tx, { accountId: none, event: 'balance.low', data: { balance: '1.000000' } });
    },
    emit1_after: async (tx, i) => {
      await change(tx, i);
      await emit(tx, { accountId: one, event: 'balance.low', data: { balance: '1.000000' } });
    },
    emit0: (tx, i) =>
      Promise.all([change(tx, i), emit(tx, { accountId: none, event: 'balance.low', data: { balance: '1.000000' } })]),
    emit1: (tx, i) =>
      Promise.all([change(tx, i), emit(tx, { accountId: one, event: 'balance.low', data: { balance: '1.000000' } })]),
    emit0_sms: (tx, i) =>
      Promise.all([change(tx, i), emit(tx, { accountId: none, event: 'sms.sent', data: { balance: '1.000000' } })]),
  };
  const only = process.env['BENCH_VARIANTS']?.split(',');
  const runs = Object.entries(variants).map(([name, fn]) => ({ name, fn, before: async () => {} }));
  for (const ddl of (process.env['BENCH_DDL'] ?? '').split(';').filter(Boolean)) {
    let done = false;
    for (const name of ['emit0', 'emit1', 'emit0_sms'])
      runs.push({
        name: `${name}[${ddl}]`,
        fn: variants[name]!,
        before: async () => void (done || (await sql.unsafe(ddl), (done = true))),
      });
  }
  for (const { name, fn, before } of runs) {
    await before();
    if (only && !only.includes(name.replace(/\[.*/, ''))) continue;
    // Warm: plans cached (custom plans for the first five executions), buffers read.
    for (let i = 0; i < 50; i++) await db.begin((tx) => fn(tx, i));
    await admin`select pg_stat_statements_reset()`;
    const [w0] = await admin<{ lsn: string }[]>`select pg_current_wal_insert_lsn()::text as lsn`;
    const cpu0 = runNs(pid);
    const waits0 = waits(pid);
    const own0 = process.cpuUsage();
    for (let i = 0; i < n; i++) await db.begin((tx) => fn(tx, i));
    const own = process.cpuUsage(own0);
    const cpu = (runNs(pid) - cpu0) / 1e9;
    const sleeps = waits(pid) - waits0;
    const [w] = await admin<{ bytes: string }[]>`
      select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), ${w0!.lsn}::pg_lsn)::text as bytes`;
    const stmts = await admin<{ query: string; calls: number; plans: number; plan_ms: number; exec_ms: number }[]>`
      select regexp_replace(s.query, '[[:space:]]+', ' ', 'g') as query, s.calls::int, s.plans::int,
             s.total_plan_time::float8 as plan_ms, s.total_exec_time::float8 as exec_ms
      from pg_stat_statements s join pg_database d on d.oid = s.dbid
      where d.datname = ${dbName} and s.toplevel order by s.total_exec_time desc`;
    const calls = stmts.reduce((a, s) => a + s.calls, 0);
    console.log(
      `emit-cost ${name} per_tx backend_cpu_us=${((cpu * 1e6) / n).toFixed(0)} node_cpu_us=${((own.user + own.system) / n).toFixed(0)} ` +
        `wal_bytes=${(Number(w!.bytes) / n).toFixed(0)} statements=${(calls / n).toFixed(2)} backend_waits=${(sleeps / n).toFixed(2)}`,
    );
    if (process.env['BENCH_VERBOSE'])
      for (const s of stmts)
        console.log(
          `  calls=${s.calls} plans=${s.plans} plan_us=${((s.plan_ms * 1000) / Math.max(1, s.calls)).toFixed(1)} ` +
            `exec_us=${((s.exec_ms * 1000) / Math.max(1, s.calls)).toFixed(1)} ${s.query.slice(0, 110)}`,
        );
  }
} finally {
  for (const fn of teardowns.reverse()) await fn();
}
