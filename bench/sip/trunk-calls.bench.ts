/**
 * Whole-daemon SIP trunk throughput, with Kamailio as the anchor in the same run.
 *
 * A real daemon (fresh PostgreSQL database, dropped after) with a seller route whose endpoint is a
 * sipp UAS, an operator that bought it and a funded sub-account; sipp UAC calls with the
 * sub-account's digest credentials at rising rates; then long calls held together, and a check that
 * every answered call has its ended call row, CDR and charge. The same ramp then goes through
 * Kamailio (bench/sip/kamailio.cfg: digest auth and stateful forward) to the same kind of UAS.
 * Each step also prints CPU per call (daemon, its PostgreSQL backends, Kamailio), which a shared
 * machine's load skews far less than calls per second.
 *
 * Usage: node --import tsx bench/sip/trunk-calls.bench.ts [stepSeconds=5] [heldCalls=5500]
 * Then the same ramp split over two daemons on the one database (the second in a child process).
 * Env: BENCH_SIP_RATES="50,100,…" (offered calls/s per step), BENCH_SIP_SKIP=kamailio,held,two,
 * BENCH_SIP_DB=socket (database over the local Unix socket instead of TCP), BENCH_SIP_VERBOSE=1,
 * BENCH_SIP_OVERLOAD=0 (overload control off; else the daemon's defaults, SVC_SIP_OVERLOAD_* read: SVC_SIP_OVERLOAD_BUSY_PCT=98 for the utilisation rule,
 * SVC_SIP_OVERLOAD_RETRANSMIT_PCT=0 for the ladder without the retransmission rule), BENCH_SIP_ALL_STEPS=1 (every rate
 * offered, past the first step not sustained: what setup times do in overload),
 * BENCH_PG_STATEMENTS=1 (the database on a private cluster with pg_stat_statements, bench/lib/private-pg.ts:
 * each step also prints statements per call, top-level ones (round trips) and those run inside functions).
 */
import { startCpuProfile } from '../lib/cpu-profile.js';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { childDaemonConfig, spawnChildDaemon } from '../../test/modules/sip-trunks/child-daemon.js';
import { createWorld } from '../../test/modules/sip-trunks/world.js';
import { freePort } from '../../test/telephony/sip/sipp.js';
import { register, type Counter } from 'prom-client';
import { loadConfig } from '../../src/config/load.js';
import { runCleanups } from '../lib/cleanups.js';
import { statementTotals, statementsCluster } from '../lib/private-pg.js';
import {
  cpuOf,
  createSipBench,
  nodeCpu,
  pct,
  ramp as rampOver,
  sippCpu,
  uasScenario as uasFor,
  uptime,
  type Step,
  type StepRunner,
} from '../lib/sip-ramp.js';

const [stepSeconds = 5, heldCalls = 5500] = process.argv.slice(2).map(Number);
const RATES = (
  process.env['BENCH_SIP_RATES'] ?? '50,100,150,200,300,400,500,650,800,900,1000,1100,1200,1400,1550,1700,1850,2000'
)
  .split(',')
  .map(Number);
const SKIP = new Set((process.env['BENCH_SIP_SKIP'] ?? '').split(','));
const NUMBER = '441100000001';
const HOLD_MS = 100;
const KAMAILIO_REALM = 'bench.exchange.test';

const cleanups: Array<() => unknown> = [];
const t = {
  teardown: (fn: () => unknown) => void cleanups.push(fn),
  equal: (a: unknown, b: unknown) => a === b,
};
const work = mkdtempSync(join(tmpdir(), 'bench-sip-'));
cleanups.push(() => rmSync(work, { recursive: true, force: true }));
const { run, sipp, step: stepAs, waitForUdp } = createSipBench({ work, cleanups, holdMs: HOLD_MS });

const uasScenario = uasFor(NUMBER);

const step = (
  target: number,
  user: string,
  pass: string,
  rate: number,
  calls: number,
  holdMs = HOLD_MS,
  extraTimeoutS = 30,
): Promise<Step> => stepAs(target, { number: NUMBER, user, pass }, rate, calls, holdMs, extraTimeoutS);

const oneTarget =
  (target: number, user: string, pass: string): StepRunner =>
  (rate, calls) =>
    step(target, user, pass, rate, calls);

/** The offered rate split evenly over several targets at once (several daemons), summed as one step. */
const splitOver =
  (targets: number[], user: string, pass: string): StepRunner =>
  async (rate, calls) => {
    const parts = await Promise.all(
      targets.map((tg) => step(tg, user, pass, rate / targets.length, Math.round(calls / targets.length))),
    );
    return {
      rate,
      calls: parts.reduce((n, p) => n + p.calls, 0),
      answered: parts.reduce((n, p) => n + p.answered, 0),
      achieved: parts.reduce((n, p) => n + p.achieved, 0),
      exit: Math.max(...parts.map((p) => p.exit)),
      setup: parts.flatMap((p) => p.setup),
    };
  };

const ramp = (
  label: string,
  runStep: StepRunner,
  between: () => Promise<void>,
  cost: () => Promise<Record<string, number>>,
) => rampOver(label, RATES, stepSeconds, runStep, between, cost);

// TCP to PostgreSQL as the daemon's embedded database uses; BENCH_SIP_DB=socket tries the local Unix socket.
const SOCKET_DIR = '/var/run/postgresql';
const viaSocket =
  process.env['BENCH_SIP_DB'] === 'socket' &&
  !process.env['SVC_TEST_PG_ADMIN_URL'] &&
  existsSync(`${SOCKET_DIR}/.s.PGSQL.5432`);
if (viaSocket) process.env['SVC_TEST_PG_ADMIN_URL'] = `postgres://postgres@${encodeURIComponent(SOCKET_DIR)}/postgres`;

const STATEMENTS = Boolean(process.env['BENCH_PG_STATEMENTS']);
// Overload control as a site runs it (test daemons turn its loop rules off), its settings taken from
// SVC_SIP_OVERLOAD_* as the daemon would; BENCH_SIP_OVERLOAD=0 turns it off here too.
const sipDefaults = loadConfig({ env: process.env }).sip;
const overload = process.env['BENCH_SIP_OVERLOAD'] === '0' ? null : sipDefaults;
const overloadRules = {
  overload_retransmit_pct: overload?.overload_retransmit_pct ?? 0,
  overload_resume_retransmit_pct: sipDefaults.overload_resume_retransmit_pct,
  overload_busy_pct: overload?.overload_busy_pct ?? 0,
  overload_resume_busy_pct: sipDefaults.overload_resume_busy_pct,
  overload_loop_delay_ms: overload?.overload_loop_delay_ms ?? 0,
  overload_resume_delay_ms: sipDefaults.overload_resume_delay_ms,
  overload_max_invites_in_setup: overload?.overload_max_invites_in_setup ?? 0,
};

try {
  const adminSql = await statementsCluster(cleanups, freePort);
  console.log(
    `sip trunk bench start (overload control ${overload ? `at ${overload.overload_retransmit_pct}/${overload.overload_resume_retransmit_pct} % INVITE retransmissions, ${overload.overload_busy_pct}/${overload.overload_resume_busy_pct} % loop busy or ${overload.overload_loop_delay_ms}/${overload.overload_resume_delay_ms} ms loop delay` : 'off'}; database over ${viaSocket ? 'Unix socket' : 'TCP'}${STATEMENTS ? ', private cluster with pg_stat_statements' : ''}) · ${uptime()}`,
  );
  // Every call holds money for up to max_call_seconds; 10 minutes keeps the held-calls run affordable.
  const w = await createWorld(t, {
    sip: { host: '127.0.0.1', port: 0, max_call_seconds: 600, ...overloadRules },
  });
  const sql = w.d.sql;
  const uas = await sipp(uasScenario, [], 10_000_000, 3600);
  const { routeId } = await w.route({ port: uas.port, prefix: '4411', rate: '0.001000' });
  await w.d.modules.services.ledger.topup({
    accountId: w.operator.accountId,
    amount: '100000.000000',
    source: 'wire',
    postingKey: `bench-fund-${w.operator.accountId}`,
  });
  const sub = await w.sub({ markupPct: '10', fund: '50000.000000' });
  const calls = w.d.modules.services.calls;
  const drained = async () => {
    // Past the 32 s a call waits for a caller's ACK lost under overload before it hangs up (64·T1).
    const until = Date.now() + 40_000;
    while (calls.liveCallIds().length > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
  };

  const dbName = new URL(w.d.config.database.url).pathname.slice(1);
  // Statements counted where they run (pg_stat_statements is per server): top-level ones are round trips.
  const statements = async (): Promise<Record<string, number>> => {
    if (!adminSql) return {};
    const s = await statementTotals(adminSql, dbName);
    return { 'pg statements': s.top, 'pg fn statements': s.nested };
  };
  const overloadRefusals = async (): Promise<number> => {
    const m = register.getSingleMetric('svc_sip_calls_refused_total') as Counter<'cause'> | undefined;
    return (await m?.get())?.values.find((v) => v.labels.cause === 'overload')?.value ?? 0;
  };
  const inviteRetransmissions = async (): Promise<number> => {
    const m = register.getSingleMetric('svc_sip_invite_retransmissions_total') as Counter | undefined;
    return (await m?.get())?.values[0]?.value ?? 0;
  };
  const ourCost = async () => {
    const [x] = await sql<
      { n: number }[]
    >`select xact_commit::float8 as n from pg_stat_database where datname = ${dbName}`;
    return {
      'node cpu ms': nodeCpu(),
      // The main thread's busy time: near 1 s per second, the event loop is the bottleneck.
      'node loop ms': performance.eventLoopUtilization().active / 1000,
      'pg cpu ms': cpuOf((_p, _pp, cmd) => cmd.includes(` ${dbName} `)),
      'pg xacts': x?.n ?? 0,
      ...(await statements()),
      'sipp cpu ms': sippCpu(),
      'overload 503s': await overloadRefusals(),
      'invite retransmissions': await inviteRetransmissions(),
    };
  };
  const prof = await startCpuProfile();
  const ours = await ramp('exchange', oneTarget(w.sipPort, sub.sipUsername, sub.sipPassword), drained, ourCost);
  await prof.stop();
  // BENCH_HEAP_SNAPSHOT=<file>: what the daemon still holds once the ramp's calls have ended.
  if (process.env['BENCH_HEAP_SNAPSHOT'])
    (await import('node:v8')).writeHeapSnapshot(process.env['BENCH_HEAP_SNAPSHOT']);
  const oursAnswered = ours.steps.reduce((n, s) => n + s.answered, 0);
  const oursBest = ours.best?.rate ?? 0;
  console.log(`sip trunk calls/s (auth, routing, billing, CDR): ${oursBest} sustained, zero failures · ${uptime()}`);
  if (ours.best) {
    console.log(`sip trunk setup p50: ${pct(ours.best.setup, 50).toFixed(2)} ms at ${oursBest}/s`);
    console.log(`sip trunk setup p99: ${pct(ours.best.setup, 99).toFixed(2)} ms at ${oursBest}/s`);
  }

  let heldAnswered = 0;
  if (!SKIP.has('held')) {
    // Below what the ramp showed the daemon keeps up with (on a loaded machine that may be no clean step).
    const kept = Math.max(oursBest, 0.8 * Math.max(0, ...ours.steps.map((s) => s.achieved)));
    const rate = Math.round(Math.max(30, Math.min(250, kept)));
    const hold = Math.ceil((heldCalls / rate) * 1000) + 15_000;
    let peak = 0;
    let rss = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, calls.liveCallIds().length);
      rss = Math.max(rss, process.memoryUsage.rss());
    }, 250);
    const rssBefore = process.memoryUsage.rss();
    const refusedBefore = await overloadRefusals();
    const held = await step(w.sipPort, sub.sipUsername, sub.sipPassword, rate, heldCalls, hold, 60);
    const refused = (await overloadRefusals()) - refusedBefore;
    clearInterval(sampler);
    heldAnswered = held.answered;
    await drained();
    console.log(
      `sip trunk concurrent calls held: ${peak} (offered ${heldCalls} at ${rate}/s, ${hold / 1000} s each; ${held.answered} answered, ${refused} refused by the overload control, sipp exit ${held.exit})`,
    );
    console.log(
      `sip trunk daemon RSS: ${(rss / 2 ** 20).toFixed(0)} MiB peak while holding (${(rssBefore / 2 ** 20).toFixed(0)} MiB before) · ${uptime()}`,
    );
  }

  // Two daemons on the same database, the calls split evenly between them (docs/scale-out.md). On
  // one machine they share its cores: the figure shows what a second daemon costs, not a gain.
  let twoAnswered = 0;
  if (!SKIP.has('two')) {
    const b = await spawnChildDaemon(
      t,
      childDaemonConfig(t, w.d.config.database.url, {
        sip: { max_call_seconds: 600, ...overloadRules },
        database: { pool_max: w.d.config.database.pool_max },
      }),
    );
    const liveInDb = async () => {
      const until = Date.now() + 40_000;
      while (Date.now() < until) {
        const [r] = await sql<{ n: number }[]>`select count(*)::int as n from calls where ended_at is null`;
        if (!r?.n) return;
        await new Promise((res) => setTimeout(res, 100));
      }
    };
    const twoCost = async () => ({
      ...(await ourCost()),
      'second daemon cpu ms': cpuOf((pid) => pid === b.pid),
    });
    const two = await ramp(
      'two daemons',
      splitOver([w.sipPort, b.ports['sip']!], sub.sipUsername, sub.sipPassword),
      liveInDb,
      twoCost,
    );
    // Stopped as SIGTERM stops a daemon: calls an overloaded step's callers left up are hung up and
    // billed (a SIGKILL would leave them to the crash reconcile, after the billing check below).
    await b.stop();
    twoAnswered = two.steps.reduce((n, st) => n + st.answered, 0);
    const twoBest = two.best?.rate ?? 0;
    console.log(`sip trunk calls/s, two daemons on one database: ${twoBest} sustained, zero failures · ${uptime()}`);
    if (two.best) console.log(`two daemons setup p99: ${pct(two.best.setup, 99).toFixed(2)} ms at ${twoBest}/s`);
    console.log(`two daemons ÷ one daemon: ${oursBest ? (twoBest / oursBest).toFixed(2) : 'n/a'} (same cores)`);
  }

  // Billing really in the loop: every answered call has its ended call row, CDR and charge.
  const answered = oursAnswered + heldAnswered + twoAnswered;
  const [c] = await sql<{ calls: number; cdrs: number; charged: number; open: number; notEnded: number }[]>`
    select (select count(*)::int from calls where source = 'trunk' and status = 'completed') as calls,
           (select count(*)::int from cdrs where route_id = ${routeId} and status = 'completed' and billed_seconds > 0) as cdrs,
           (select count(distinct call_id)::int from entries where owner_id = ${sub.id} and type = 'charge' and call_id is not null) as charged,
           (select count(*)::int from holds where owner_id = ${sub.id} and status = 'open') as open,
           (select count(*)::int from calls where ended_at is null) as "notEnded"`;
  const ok =
    c && c.calls === answered && c.cdrs === answered && c.charged === answered && c.open === 0 && c.notEnded === 0;
  console.log(
    `sip trunk billing check: ${answered} answered by sipp, ${c?.calls} completed calls, ${c?.cdrs} billed CDRs, ${c?.charged} charged, ${c?.open} open holds, ${c?.notEnded} unended calls${ok ? '' : ' (MISMATCH)'}`,
  );

  if (!SKIP.has('kamailio') && existsSync('/usr/sbin/kamailio')) {
    const kuas = await sipp(uasScenario, [], 10_000_000, 3600);
    const kport = await freePort();
    const kdir = join(work, 'kamailio');
    execFileSync('mkdir', ['-p', kdir]);
    const cfg = readFileSync(new URL('./kamailio.cfg', import.meta.url), 'utf8')
      .replaceAll('LISTEN_PORT', String(kport))
      .replaceAll('UAS_PORT', String(kuas.port))
      .replaceAll('"REALM"', `"${KAMAILIO_REALM}"`)
      .replaceAll('"USER"', '"sub_bench"')
      .replaceAll('"PASSWORD"', '"bench-password"')
      .replaceAll('CHILDREN', '2');
    writeFileSync(join(kdir, 'kamailio.cfg'), cfg);
    const kam = run(
      'kamailio',
      ['-f', 'kamailio.cfg', '-DD', '-E', '-m', '256', '-M', '16', '-Y', kdir, '-P', join(kdir, 'kamailio.pid')],
      kdir,
    );
    await waitForUdp(kport, kam);
    const kamCost = async () => ({
      'kamailio cpu ms': cpuOf((pid, ppid) => pid === kam.pid || ppid === kam.pid),
      'sipp cpu ms': sippCpu(),
    });
    const theirs = await ramp(
      'kamailio',
      oneTarget(kport, 'sub_bench', 'bench-password'),
      () => new Promise((r) => setTimeout(r, 1000)),
      kamCost,
    );
    await kam.kill();
    const theirBest = theirs.best?.rate ?? 0;
    console.log(
      `kamailio calls/s (digest auth, stateful forward): ${theirBest} sustained, zero failures · ${uptime()}`,
    );
    if (theirs.best) {
      console.log(`kamailio setup p50: ${pct(theirs.best.setup, 50).toFixed(2)} ms at ${theirBest}/s`);
      console.log(`kamailio setup p99: ${pct(theirs.best.setup, 99).toFixed(2)} ms at ${theirBest}/s`);
    }
    console.log(`sip trunk calls/s ÷ kamailio: ${theirBest ? (oursBest / theirBest).toFixed(2) : 'n/a'} (goal ≥ 0.5)`);
  }
  if (!ok) process.exitCode = 1;
} finally {
  await runCleanups(cleanups);
}
