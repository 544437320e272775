// End to end: POST /comms/sms over real HTTPS (wrk, many connections, keys in turn) through auth,
// routing, the ledger (hold, settle, CDR, event) and an SMPP bind to a local SMSC; beside the raw
// throughput of the `smpp` library on loopback, in the same run.
// Needs wrk (Debian `wrk`) and PostgreSQL on 127.0.0.1:5432 (or SVC_BENCH_PG_ADMIN_URL).
// Run: node --import tsx bench/sms/rest-e2e.bench.ts   (BENCH_SECONDS=10 BENCH_CONNECTIONS=64 BENCH_KEYS=600)
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { performance } from 'node:perf_hooks';
import { join } from 'node:path';
import { Decimal } from 'decimal.js';
import postgres from 'postgres';
import { startSmsBenchWorld } from '../lib/sms-world.js';
import type { Sql } from '../../src/db/connection.js';
import { startCpuProfile } from '../lib/cpu-profile.js';
import { pgCounters } from '../lib/pg-counters.js';
import { startPrivatePostgres } from '../lib/private-pg.js';
import { freePort } from '../../test/telephony/sip/sipp.js';
import { runWrk } from '../lib/wrk.js';
import { procCpuSeconds } from '../lib/proc-cpu.js';
import { driveSmpp, startSmsc, startSmscProcess } from './smpp-raw.js';

const seconds = Number(process.env['BENCH_SECONDS'] ?? 10);
const connections = Number(process.env['BENCH_CONNECTIONS'] ?? 64);
const keyCount = Number(process.env['BENCH_KEYS'] ?? 600);
const BUYER_FUNDS = '1000000.000000';
// BENCH_PG_STATEMENTS=1 without SVC_BENCH_PG_ADMIN_URL: a private cluster with pg_stat_statements
// preloaded (the machine's shared server has none and cannot be restarted under the others).
const privatePg =
  process.env['BENCH_PG_STATEMENTS'] && !process.env['SVC_BENCH_PG_ADMIN_URL']
    ? await startPrivatePostgres(await freePort())
    : null;
const admin =
  privatePg?.adminUrl ?? process.env['SVC_BENCH_PG_ADMIN_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dbName = `svc_bench_sms_${process.pid}`;
const adminSql = postgres(admin, { max: 1, onnotice: () => {} });
await adminSql.unsafe(`create database ${dbName}`);
// BENCH_LOG_STATEMENTS=1: every statement and its duration in the server log (counting statements per message).
if (process.env['BENCH_LOG_STATEMENTS'])
  await adminSql.unsafe(`alter database ${dbName} set log_min_duration_statement = 0`);
// BENCH_LOG_NESTED=1: the statements inside the ledger's PL/pgSQL functions too, each with its time (auto_explain).
if (process.env['BENCH_LOG_NESTED']) {
  for (const set of [
    'session_preload_libraries = auto_explain',
    'auto_explain.log_min_duration = 0',
    'auto_explain.log_nested_statements = on',
  ]) {
    await adminSql.unsafe(`alter database ${dbName} set ${set}`);
  }
}
const state = mkdtempSync(join(tmpdir(), 'svc-bench-sms-'));
// The raw anchor's SMSC shares this process with its driver, as before; the daemon's SMSC runs
// in a child, so this process's CPU is the daemon's (and the bench's own bookkeeping) alone.
const smsc = await startSmsc();
const daemonSmsc = await startSmscProcess();
const t0 = Date.now();
/** CPU seconds of this process's reaped children (wrk), from /proc/self/stat cutime + cstime (ticks of 1/100 s). */
const childTicks = () => {
  const s = readFileSync('/proc/self/stat', 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return Number(f[13]) + Number(f[14]);
};
/**
 * The money after the run, once requests still in flight when wrk stopped are done (a send holds
 * money from before its submit until its message row is written): no message left queued or
 * holding money, the buyer down by exactly the cost of its sent and delivered messages (a failed
 * one is refunded or never charged), and the ledger's own invariants.
 */
async function moneyCheck(db: Sql, buyerId: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const [q] = await db<{ n: number }[]>`select count(*)::int as n from holds where status = 'open'`;
    if (q!.n === 0) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  const [c] = await db<
    {
      messages: number;
      queued: number;
      openHolds: number;
      spent: string;
      balance: string;
      entriesSum: string;
      drift: number;
    }[]
  >`
    select (select count(*)::int from messages) as messages,
           (select count(*)::int from messages where status = 'queued') as queued,
           (select count(*)::int from holds where status = 'open') as open_holds,
           (select coalesce(sum(cost), 0)::text from messages where status in ('sent', 'delivered')) as spent,
           (select balance::text from ledger_account_balances where owner_id = ${buyerId} and kind = 'customer') as balance,
           (select coalesce(sum(amount), 0)::text from entries) as entries_sum,
           (select count(*)::int from ledger_accounts a
             where not a.sharded and a.balance <> coalesce((select sum(e.amount) from entries e where e.account_id = a.id), 0)) as drift`;
  const expected = new Decimal(BUYER_FUNDS).minus(c!.spent);
  const ok =
    c!.queued === 0 &&
    c!.openHolds === 0 &&
    expected.eq(c!.balance) &&
    new Decimal(c!.entriesSum).isZero() &&
    c!.drift === 0;
  return (
    `sms money check: ${c!.messages} messages, ${c!.queued} queued, ${c!.openHolds} open holds, buyer balance ${c!.balance} ` +
    `(expected ${expected.toFixed(6)}), entries sum ${c!.entriesSum}, accounts off their entries ${c!.drift}${ok ? '' : ' (MISMATCH)'}`
  );
}
/** Each table's rows inserted, updated (HOT among them) and deleted so far (pg_stat_user_tables of the bench's database). */
async function tableRows(db: Sql): Promise<Map<string, { ins: number; upd: number; hot: number; del: number }>> {
  const rows = await db<{ table: string; ins: string; upd: string; hot: string; del: string }[]>`
    select relname as table, n_tup_ins::text as ins, n_tup_upd::text as upd, n_tup_hot_upd::text as hot, n_tup_del::text as del
    from pg_stat_user_tables`;
  return new Map(
    rows.map((r) => [r.table, { ins: Number(r.ins), upd: Number(r.upd), hot: Number(r.hot), del: Number(r.del) }]),
  );
}
const phase = (what: string) => process.stderr.write(`[${((Date.now() - t0) / 1000).toFixed(1)} s] ${what}\n`);
try {
  await driveSmpp(smsc.port, 2000, 100); // warm-up
  const raw = await driveSmpp(smsc.port, 20_000, 100);

  phase('raw measured');
  const { daemon, buyerId, keyFile, base } = await startSmsBenchWorld({
    databaseUrl: admin.replace(/\/[^/]*$/, `/${dbName}`),
    state,
    smscPort: daemonSmsc.port,
    keyCount,
    scopes: ['sms:send'],
    funds: BUYER_FUNDS,
  });
  phase('world ready');
  const url = `${base}/comms/sms`;
  const script = new URL('./rest-send.lua', import.meta.url).pathname;

  const sentCount = async () =>
    (await daemon.sql<{ n: number }[]>`select count(*)::int as n from messages where status = 'sent'`)[0]!.n;
  // Warm-up (JIT, bind up, caches) until every key has sent twice, at most 10 rounds: on a loaded
  // machine one round of 2 s sent a few dozen messages, and the first use of each key (its
  // look-up) and of the response serializer's lazily compiled validators fell in the window.
  for (let round = 0; round < 10 && (await sentCount()) < 2 * keyCount; round++)
    await runWrk(url, { seconds: 2, connections, script, scriptArgs: [keyFile] });
  phase('warmed up');
  const before = await daemonSmsc.submits();
  const sentBefore = await sentCount();
  // BENCH_PG_STATEMENTS=1 (a server with pg_stat_statements preloaded): the statements of the measured window, per message.
  const statements = Boolean(process.env['BENCH_PG_STATEMENTS']);
  if (statements) await adminSql`select pg_stat_statements_reset()`;
  const pgBefore = await pgCounters(adminSql, dbName);
  const tablesBefore = await tableRows(daemon.sql);
  // BENCH_CPU_PROF=<file>: a CPU profile of the measured window only (not start-up or the raw anchor).
  const prof = await startCpuProfile();
  const cpuBefore = process.cpuUsage();
  const eluBefore = performance.eventLoopUtilization();
  const smscBefore = procCpuSeconds([daemonSmsc.pid]);
  const wrkBefore = childTicks();
  const r = await runWrk(url, { seconds, connections, script, scriptArgs: [keyFile] });
  const cpu = process.cpuUsage(cpuBefore);
  const elu = performance.eventLoopUtilization(eluBefore);
  const wrkSec = (childTicks() - wrkBefore) / 100;
  const smscSec = procCpuSeconds([daemonSmsc.pid]) - smscBefore;
  await prof.stop();
  const sentAfter = await sentCount();
  await new Promise((res) => setTimeout(res, 1100)); // PostgreSQL 15 flushes backend statistics at most once a second
  const pgAfter = await pgCounters(adminSql, dbName);
  const tablesAfter = await tableRows(daemon.sql);
  const sent = (sentAfter - sentBefore) / seconds;
  const n = Math.max(1, sentAfter - sentBefore);

  console.log(`smpp raw loopback (smpp library both ends, window 100): ${raw.toFixed(0)} msg/s`);
  console.log(
    `POST /comms/sms -> routing, ledger -> SMPP bind -> local SMSC: ${r.requestsPerSecond.toFixed(0)} req/s, ${sent.toFixed(0)} sent msg/s, ` +
      `p50 ${r.p50Ms.toFixed(1)} ms, p99 ${r.p99Ms.toFixed(1)} ms, non-2xx ${r.non2xx}, SMSC submits ${(await daemonSmsc.submits()) - before} (${connections} connections, ${keyCount} keys)`,
  );
  console.log(`ratio REST end-to-end / raw smpp: ${(sent / raw).toFixed(3)}`);
  const us = (x: number) => `${((x * 1e6) / n).toFixed(0)} µs`;
  const daemonSec = (cpu.user + cpu.system) / 1e6;
  // daemon+SMSC is the figure earlier runs printed (one process then), kept for comparison.
  console.log(
    `CPU per sent message: daemon+SMSC ${us(daemonSec + smscSec)} (daemon process ${us(daemonSec)}, SMSC process ${us(smscSec)}), PostgreSQL backends ${us(pgAfter.cpu - pgBefore.cpu)}, wrk ${us(wrkSec)}; ` +
      `transactions per message ${((pgAfter.xact - pgBefore.xact) / n).toFixed(2)}, rows written per message ${((pgAfter.rows - pgBefore.rows) / n).toFixed(2)}`,
  );
  // The daemon's one event loop carries all of its CPU per message: near 1 here, a faster database
  // or more cores would not raise the rate, only less work on that thread (or more daemons) would.
  console.log(`daemon event loop utilization: ${elu.utilization.toFixed(2)}`);
  // Where the rows written per message go: each table's inserts, updates (HOT ones apart: they
  // write no index entry) and deletes in the measured window, tables with none left out.
  const perTable = [...tablesAfter]
    .map(([table, a]) => {
      const b = tablesBefore.get(table) ?? { ins: 0, upd: 0, hot: 0, del: 0 };
      return { table, ins: a.ins - b.ins, upd: a.upd - b.upd, hot: a.hot - b.hot, del: a.del - b.del };
    })
    .filter((d) => d.ins + d.upd + d.del > 0)
    .sort((x, y) => y.ins + y.upd + y.del - (x.ins + x.upd + x.del));
  const per = (x: number) => (x / n).toFixed(2);
  for (const d of perTable)
    console.log(
      `  rows per message in ${d.table}: inserted ${per(d.ins)}, updated ${per(d.upd)} (HOT ${per(d.hot)}), deleted ${per(d.del)}`,
    );
  if (statements) {
    // Load-independent totals: statements the clients sent (top level, not those inside functions),
    // the WAL they wrote, and the executor time (this one does move with load).
    const [sum] = await adminSql<{ calls: string; wal: string; bytes: string; ms: string }[]>`
      select coalesce(sum(s.calls), 0)::text as calls, coalesce(sum(s.wal_records), 0)::text as wal,
             coalesce(sum(s.wal_bytes), 0)::text as bytes, coalesce(sum(s.total_exec_time), 0)::text as ms
      from pg_stat_statements s join pg_database d on d.oid = s.dbid
      where d.datname = ${dbName} and s.toplevel`;
    console.log(
      `per sent message: top-level statements ${(Number(sum!.calls) / n).toFixed(2)}, WAL records ${(Number(sum!.wal) / n).toFixed(1)}, ` +
        `WAL bytes ${(Number(sum!.bytes) / n).toFixed(0)}, executor time ${((Number(sum!.ms) * 1000) / n).toFixed(0)} µs`,
    );
    const top = await adminSql<{ calls: string; rows: string; ms: string; wal: string; query: string }[]>`
      select s.calls::text, s.rows::text, round(s.total_exec_time::numeric, 1)::text as ms, s.wal_records::text as wal,
             left(regexp_replace(s.query, '[[:space:]]+', ' ', 'g'), 140) as query
      from pg_stat_statements s join pg_database d on d.oid = s.dbid
      where d.datname = ${dbName} order by s.total_exec_time desc limit 30`;
    for (const x of top)
      console.log(
        `  statement per message: calls ${(Number(x.calls) / n).toFixed(3)} rows ${(Number(x.rows) / n).toFixed(2)} ` +
          `WAL records ${(Number(x.wal) / n).toFixed(2)} ms ${x.ms}: ${x.query}`,
      );
  }
  console.log(`uptime: ${readFileSync('/proc/loadavg', 'utf8').trim()}`);
  phase('measured');
  console.log(await moneyCheck(daemon.sql, buyerId));
  await daemon.stop();
  phase('stopped');
} finally {
  smsc.server.close();
  await daemonSmsc.stop();
  await adminSql.unsafe(`drop database if exists ${dbName} with (force)`);
  await adminSql.end();
  await privatePg?.stop();
  rmSync(state, { recursive: true, force: true });
}
// A lingering handle must not keep the bench (and its --cpu-prof output) waiting.
process.exit(0);
