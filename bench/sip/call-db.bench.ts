/**
 * The database side of a trunk call, without SIP: a whole test daemon (fresh database, dropped
 * after) whose trunk policy is driven as the B2BUA drives it (plan: payer terms, routing, limits,
 * the hold and the call row; answered mark; end: call row, CDR, settlement and the reseller's
 * markup), by `clients` callers in a loop. Prints per call the CPU of the daemon's PostgreSQL
 * backends, of this process (the daemon's database client work and call logic) and the
 * transactions committed. Anchor, in the same run and database: the backends' CPU for one minimal
 * write transaction (insert a row, commit), so the ratio says how many such transactions a call
 * costs the server, which a shared machine's load skews far less than calls per second.
 *
 * BENCH_PG_STATEMENTS=1: the daemon's database on a private cluster with pg_stat_statements
 * (bench/lib/private-pg.ts), and the statements per call printed: round trips (top-level statements,
 * BEGIN and COMMIT included), the statements inside the ledger functions, rows written, each
 * statement's share.
 *
 * BENCH_CPU_PROF=<file>: a CPU profile of this process while the calls are measured.
 *
 * Usage: node --import tsx bench/sip/call-db.bench.ts [calls=2000] [clients=20]
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import postgres from 'postgres';
import { createWorld } from '../../test/modules/sip-trunks/world.js';
import { freePort } from '../../test/telephony/sip/sipp.js';
import { runCleanups } from '../lib/cleanups.js';
import { startCpuProfile } from '../lib/cpu-profile.js';
import { startPrivatePostgres, statementsOf, type StatementCount } from '../lib/private-pg.js';

const [CALLS = 2000, CLIENTS = 20] = process.argv.slice(2).map(Number);
const NUMBER = '441100000001';
const cleanups: Array<() => unknown> = [];
const t = { teardown: (fn: () => unknown) => void cleanups.push(fn), equal: (a: unknown, b: unknown) => a === b };
const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();

/** CPU seconds (user + system) of the PostgreSQL backends serving `db`, from /proc. */
function backendsCpu(db: string): number {
  let ticks = 0;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (!cmdline.includes(` ${db} `)) continue;
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(f[11]) + Number(f[12]);
    } catch {
      // The process ended while being read.
    }
  }
  return ticks / 100;
}
const ownCpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

const STATEMENTS = Boolean(process.env['BENCH_PG_STATEMENTS']);

try {
  console.log(`call db bench start · ${uptime()}`);
  let adminSql: postgres.Sql | null = null;
  if (STATEMENTS) {
    const pg = await startPrivatePostgres(await freePort());
    cleanups.push(() => pg.stop());
    // Read by the test database helper when it first makes a database (createWorld below).
    process.env['SVC_TEST_PG_ADMIN_URL'] = pg.adminUrl;
    adminSql = postgres(pg.adminUrl, { max: 1, onnotice: () => {} });
    const a = adminSql;
    cleanups.push(() => a.end({ timeout: 1 }));
  }
  const w = await createWorld(t, { sip: { host: '127.0.0.1', port: 0, max_call_seconds: 600 } });
  const { sql } = w.d;
  const calls = w.d.modules.services.calls;
  // The supplier is never dialled: only its route, price and endpoint row matter here.
  const { routeId } = await w.route({ port: 5999, prefix: '4411', rate: '0.001000' });
  await w.d.modules.services.ledger.topup({
    accountId: w.operator.accountId,
    amount: '100000.000000',
    source: 'wire',
    postingKey: `bench-fund-${w.operator.accountId}`,
  });
  const sub = await w.sub({ markupPct: '10', fund: '50000.000000' });
  const db = new URL(w.d.config.database.url).pathname.slice(1);
  const counts = async () => {
    const [r] = await sql<{ x: string; rows: string }[]>`
      select xact_commit::text as x, (tup_inserted + tup_updated + tup_deleted)::text as rows
      from pg_stat_database where datname = ${db}`;
    return { xacts: Number(r!.x), rows: Number(r!.rows) };
  };

  const oneCall = async (i: number) => {
    const plan = await calls.policy.planCall({
      accountId: w.operator.accountId,
      subAccountId: sub.id,
      to: NUMBER,
      from: '15550001',
      callId: `b${i}`,
      sourceIp: '127.0.0.1',
    });
    if ('reject' in plan) throw new Error(`call refused: ${plan.reject.status} ${plan.reject.reason}`);
    const startedAt = new Date();
    const answeredAt = new Date(startedAt.getTime() + 5);
    await calls.policy.onAnswered!({ callGroupId: plan.callGroupId, callId: `b${i}`, routeId, answeredAt, attempt: 1 });
    const endedAt = new Date(answeredAt.getTime() + 7000);
    await calls.policy.onCallEnded({
      callGroupId: plan.callGroupId,
      callId: `b${i}`,
      attribution: { accountId: w.operator.accountId, subAccountId: sub.id } as never,
      to: NUMBER,
      from: '15550001',
      startedAt,
      answeredAt,
      endedAt,
      durationMs: 7000,
      sipCode: 200,
      hangupCause: 'caller-bye',
      routeId,
      attempts: [
        {
          callGroupId: plan.callGroupId,
          index: 0,
          routeId,
          endpoint: { host: '127.0.0.1', port: 5999, transport: 'udp' },
          startedAt,
          endedAt,
          sipCode: 200,
          reason: 'OK',
          outcome: 'answered',
          ringing: true,
          pddMs: 5,
        },
      ],
    });
  };
  /** Runs `n` jobs from `clients` loops; returns per-job CPU (ms) of the backends and of this process, xacts, rows written, statements, and jobs/s. */
  // An idle backend reports its transactions to pg_stat_database within 10 s (PostgreSQL 15): waited
  // for before each reading, so every measure counts its own transactions and only those.
  const settle = () => new Promise((r) => setTimeout(r, 10_500));
  const measure = async (n: number, job: (i: number) => Promise<unknown>) => {
    let next = 0;
    if (adminSql) await adminSql`select pg_stat_statements_reset()`;
    const [pg0, own0, c0, t0] = [backendsCpu(db), ownCpu(), await counts(), Date.now()];
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (next < n) await job(next++);
      }),
    );
    const ms = Date.now() - t0;
    const statements: StatementCount[] = adminSql ? await statementsOf(adminSql, db) : [];
    await settle();
    const c1 = await counts();
    return {
      pg: ((backendsCpu(db) - pg0) * 1000) / n,
      own: ((ownCpu() - own0) * 1000) / n,
      xacts: (c1.xacts - c0.xacts) / n,
      rows: (c1.rows - c0.rows) / n,
      rate: (n * 1000) / ms,
      statements,
    };
  };

  await sql`create table bench_anchor (id bigserial primary key, v text not null)`;
  // Warm-up: JIT, prepared statements, caches.
  for (let i = 0; i < Math.min(300, CALLS); i += CLIENTS)
    await Promise.all(Array.from({ length: CLIENTS }, (_, k) => oneCall(i + k)));
  await settle();
  const anchor = await measure(CALLS * 2, () => sql`insert into bench_anchor (v) values ('x')`);
  // BENCH_CPU_PROF=<file>: a CPU profile of the calls' measure only.
  const prof = await startCpuProfile();
  const call = await measure(CALLS, oneCall);
  await prof.stop();
  console.log(
    `call db anchor (insert + commit): pg cpu ${(anchor.pg * 1000).toFixed(0)} µs per transaction · ${anchor.rate.toFixed(0)}/s`,
  );
  console.log(
    `call db per call: pg cpu ${call.pg.toFixed(2)} ms, this process ${call.own.toFixed(2)} ms, ${call.xacts.toFixed(2)} transactions, ${call.rows.toFixed(2)} rows written · ${call.rate.toFixed(0)} calls/s with ${CLIENTS} callers`,
  );
  if (STATEMENTS) {
    const per = (f: (x: StatementCount) => number, xs: StatementCount[]) => xs.reduce((n, x) => n + f(x), 0) / CALLS;
    const top = call.statements.filter((x) => x.toplevel);
    const nested = call.statements.filter((x) => !x.toplevel);
    console.log(
      `call db statements per call: ${per((x) => x.calls, top).toFixed(2)} top-level (round trips, BEGIN and COMMIT included), ${per((x) => x.calls, nested).toFixed(2)} inside functions; ${per((x) => x.ms, top).toFixed(3)} ms executing`,
    );
    for (const x of call.statements.filter((x) => x.calls / CALLS >= 0.01).slice(0, 40))
      console.log(
        `  ${x.toplevel ? 'top' : 'fn '} ${(x.calls / CALLS).toFixed(3)} per call, ${(x.rows / CALLS).toFixed(2)} rows, ${((x.ms * 1000) / CALLS).toFixed(0)} µs: ${x.query.slice(0, 150)}`,
      );
  }
  console.log(`call db pg cpu per call ÷ anchor transaction: ${(call.pg / anchor.pg).toFixed(1)} · ${uptime()}`);

  // Every call billed: its ended row, CDR and charge, nothing held.
  const [c] = await sql<{ calls: number; cdrs: number; charged: number; open: number }[]>`
    select (select count(*)::int from calls where status = 'completed') as calls,
           (select count(*)::int from cdrs where route_id = ${routeId} and billed_seconds > 0) as cdrs,
           (select count(distinct call_id)::int from entries where owner_id = ${sub.id} and type = 'charge' and call_id is not null) as charged,
           (select count(*)::int from holds where owner_id = ${sub.id} and status = 'open') as open`;
  const all = Math.ceil(Math.min(300, CALLS) / CLIENTS) * CLIENTS + CALLS;
  const ok = c && c.calls === all && c.cdrs === all && c.charged === all && c.open === 0;
  console.log(
    `call db billing check: ${all} calls, ${c?.calls} completed, ${c?.cdrs} billed CDRs, ${c?.charged} charged, ${c?.open} open holds${ok ? '' : ' (MISMATCH)'}`,
  );
  if (!ok) process.exitCode = 1;
} finally {
  await runCleanups(cleanups);
}
