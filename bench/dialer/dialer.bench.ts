/**
 * Dialer throughput and pacing, with SIP trunk calls through the same daemon as the anchor, both at
 * their maxima in the same run.
 *
 * One real daemon (fresh database, dropped after) and sipp callees answering (OPTIONS too):
 * 1. anchor: sipp calls in over a sub-account's SIP trunk with digest auth and hangs up 100 ms after
 *    answer; the daemon forwards each to a supplier sipp (the bench/sip path). The offered rate rises
 *    step by step (bench/lib/sip-ramp.ts) until a step is not sustained: the anchor is the best
 *    sustained step, not a rate the bench chose;
 * 2. dialer: voice campaigns over a route to a supplier sipp, each call answered, its actions
 *    (`hangup`) run, settled and recorded, at rising `concurrency` until calls per second stop rising
 *    (less than 5 % above the best so far): the campaign's figure is its best;
 * 3. pacing: a campaign of 40 numbers with `callInterval` 100 ms: the gaps between call starts.
 * Prints calls per second of each step, the ratio of the two maxima (goal ≥ 0.8), the pacing error
 * and `uptime` (the machine is shared: read the ratios, not the absolute rates), and per call the CPU
 * of this process (daemon and driver) and of the database's backends, trunk and campaign alike:
 * figures that hold whatever the load.
 *
 * BENCH_PG_STATEMENTS=1: the daemon's database on a private cluster with pg_stat_statements
 * (bench/lib/private-pg.ts): statements per call for both paths (top-level ones are round trips,
 * BEGIN and COMMIT included), and the campaign's statements one by one.
 *
 * Usage: node --import tsx bench/dialer/dialer.bench.ts [calls=1000] [stepSeconds=5]
 *   BENCH_DIALER_RATES (anchor offered rates, default 10,20,35,50,75,100,150,200,300,400,500,650,800,1000)
 *   BENCH_DIALER_CONCURRENCY (campaign concurrencies, default 25,50,100,128: 128 is the spec's maximum)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWorld } from '../../test/modules/sip-trunks/world.js';
import { freePort, sipp, sippMediaPort } from '../../test/telephony/sip/sipp.js';
import { callee } from '../../test/modules/api-calls/peers.js';
import { runCleanups } from '../lib/cleanups.js';
import { statementsCluster, statementsOf, statementTotals } from '../lib/private-pg.js';
import { cpuOf, createSipBench, nodeCpu, ramp, uptime } from '../lib/sip-ramp.js';

const [calls = 1000, stepSeconds = 5] = process.argv.slice(2).map(Number);
const list = (name: string, fallback: string) =>
  (process.env[name] ?? fallback)
    .split(',')
    .map(Number)
    .filter((n) => n > 0);
const RATES = list('BENCH_DIALER_RATES', '10,20,35,50,75,100,150,200,300,400,500,650,800,1000');
const CONCURRENCY = list('BENCH_DIALER_CONCURRENCY', '25,50,100,128');
const NUMBER = '441100000001';
/** A concurrency step counts as a rise when its calls per second beat the best so far by this much. */
const RISE = 1.05;

const cleanups: Array<() => unknown> = [];
const t = {
  teardown: (fn: () => unknown) => void cleanups.push(fn),
  equal: (a: unknown, b: unknown) => a === b,
};
const work = mkdtempSync(join(tmpdir(), 'bench-dialer-'));
cleanups.push(() => rmSync(work, { recursive: true, force: true }));
const line = (what: string, figures: Record<string, string | number>) =>
  console.log(
    `${what}: ${Object.entries(figures)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}`,
  );
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const adminSql = await statementsCluster(cleanups, freePort);
  console.log(`# dialer bench${adminSql ? ' (private cluster with pg_stat_statements)' : ''} · ${uptime()}`);
  const w = await createWorld(t, {
    // Two ports a campaign call at the highest concurrency, with room.
    rtp: { port_min: 34000, port_max: 35999, bind_address: '127.0.0.1' },
    // Every trunk call holds money for up to max_call_seconds: 10 minutes keeps the ramp affordable.
    sip: { host: '127.0.0.1', port: 0, max_call_seconds: 600 },
    voice: { max_api_calls_per_account: 0 },
    dialer: { tick_ms: 20, call_poll_ms: 100 },
  });
  const { d, operator } = w;
  const dbName = new URL(d.config.database.url).pathname.slice(1);
  await d.modules.services.ledger.topup({
    accountId: operator.accountId,
    amount: '100000.000000',
    source: 'wire',
    postingKey: `bench-fund-${operator.accountId}`,
  });
  const statements = async (): Promise<Record<string, number>> => {
    if (!adminSql) return {};
    const s = await statementTotals(adminSql, dbName);
    return { 'pg statements': s.top, 'pg fn statements': s.nested };
  };
  /** Counters whose difference over a step, per answered call, is the step's cost (` ms` keys: CPU seconds). */
  const cost = async () => ({
    'node cpu ms': nodeCpu(),
    'pg cpu ms': cpuOf((_p, _pp, cmd) => cmd.includes(` ${dbName} `)),
    ...(await statements()),
  });

  // 1. Anchor: trunk calls in, forwarded to a supplier, at rising rates.
  const trunkUas = await sipp(t, callee('4411[0-9]+', '', false), ['-mp', String(await sippMediaPort())], {
    calls: 10_000_000,
    timeout: '3600s',
  });
  await w.route({ port: trunkUas.port, prefix: '4411', rate: '0.001000', increment: '1/1' });
  const sub = await w.sub({ fund: '50000.000000' });
  const bench = createSipBench({ work, cleanups, holdMs: 100 });
  // sipp is done when its last BYE is answered; the daemon writes the call's end (settlement, CDR)
  // after that, later under load: the step's cost is read once every record is final.
  const drained = async () => {
    const until = Date.now() + 120_000;
    while (Date.now() < until) {
      const [open] = await d.sql<{ n: number }[]>`
        select count(*)::int as n from calls where source = 'trunk' and ended_at is null`;
      if (open!.n === 0) return;
      await sleep(200);
    }
  };
  // A first step starts cold (compilation, prepared statements, pools) and would end the ramp early.
  await bench.step(w.sipPort, { number: NUMBER, user: sub.sipUsername, pass: sub.sipPassword }, 10, 30);
  await drained();
  const anchor = await ramp(
    'anchor trunk calls',
    RATES,
    stepSeconds,
    (rate, n) => bench.step(w.sipPort, { number: NUMBER, user: sub.sipUsername, pass: sub.sipPassword }, rate, n),
    drained,
    cost,
  );
  const outcomes = await d.sql<{ status: string; code: number | null; n: number }[]>`
    select status, sip_response_code as code, count(*)::int as n from calls where source = 'trunk'
    group by 1, 2 order by 3 desc`;
  line('anchor outcomes', Object.fromEntries(outcomes.map((o) => [`${o.status}/${o.code ?? '-'}`, o.n])));
  const bestIndex = anchor.best ? anchor.steps.indexOf(anchor.best) : -1;
  const trunkRate = anchor.best?.achieved ?? 0;
  const trunkCost = bestIndex >= 0 ? anchor.perCall[bestIndex]! : {};
  line('anchor maximum', {
    offered: anchor.best?.rate ?? '-',
    cps: trunkRate.toFixed(1),
    note: anchor.best ? 'best sustained step' : 'no step sustained',
  });

  // 2. Dialer: campaigns at rising concurrency.
  const campaignUas = await sipp(t, callee('4476[0-9]+', '', false), ['-mp', String(await sippMediaPort())], {
    calls: 10_000_000,
    timeout: '3600s',
  });
  const route = await w.route({ port: campaignUas.port, prefix: '4476', rate: '0.010000', increment: '1/1' });
  const clis = await w.api('POST', '/dialer/cli-sets', operator.token, { name: 'bench', clis: ['+15550001111'] });
  let batch = 0;
  const campaign = async (name: string, n: number, extra: Record<string, unknown>) => {
    const prefix = String(batch++).padStart(3, '0');
    const numbers = Array.from({ length: n }, (_, i) => `+4476${prefix}${String(i).padStart(6, '0')}`);
    const c = await w.api('POST', '/dialer/campaigns', operator.token, {
      name,
      routeId: route.routeId,
      kind: 'voice',
      maxCallDuration: 10,
      cliSetId: clis.body.data.id,
      actions: [{ hangup: true }],
      ...extra,
    });
    if (c.status !== 201) throw new Error(c.text);
    const id = c.body.data.id as string;
    for (let i = 0; i < numbers.length; i += 10_000)
      await w.api('POST', `/dialer/campaigns/${id}/numbers`, operator.token, { numbers: numbers.slice(i, i + 10_000) });
    if (adminSql) await adminSql`select pg_stat_statements_reset()`;
    const before = await cost();
    await w.api('POST', `/dialer/campaigns/${id}/control`, operator.token, { action: 'start' });
    // Watched in the database a few times a second: API requests every 25 ms would add their own
    // CPU to the campaign's.
    const until = Date.now() + 600_000;
    for (;;) {
      await sleep(250);
      const [row] = await d.sql<{ status: string }[]>`select status from dialer_campaigns where id = ${id}`;
      if (row?.status === 'completed') break;
      if (Date.now() > until) throw new Error(`campaign ${name} did not complete: ${row?.status}`);
    }
    const after = await cost();
    const statementList = adminSql ? await statementsOf(adminSql, dbName) : [];
    const done = (await w.api('GET', `/dialer/campaigns/${id}`, operator.token)).body.data;
    const [span] = await d.sql<{ seconds: number }[]>`
      select extract(epoch from max(ended_at) - min(started_at))::float8 as seconds
      from dialer_attempts where campaign_id = ${id}`;
    const dialed = Math.max(1, done.numbersDialed as number);
    const per = Object.fromEntries(
      Object.keys(after).map((k) => [
        k,
        ((after[k as keyof typeof after]! - before[k as keyof typeof before]!) * (k.endsWith(' ms') ? 1000 : 1)) /
          dialed,
      ]),
    );
    return { id, seconds: span!.seconds, done, per, statementList, dialed };
  };
  const perText = (per: Record<string, number>) =>
    Object.entries(per)
      .map(([k, v]) => `${k} ${v.toFixed(2)}`)
      .join(', ');

  let best: { concurrency: number; cps: number; per: Record<string, number> } | null = null;
  let bestStatements: Awaited<ReturnType<typeof campaign>> | null = null;
  await campaign('warm-up', 50, { concurrency: 10 });
  for (const concurrency of CONCURRENCY) {
    const n = Math.max(calls, concurrency * 10);
    const r = await campaign(`bench c${concurrency}`, n, { concurrency });
    const cps = (r.done.numbersAnswered as number) / r.seconds;
    console.log(
      `  campaign concurrency ${concurrency}: ${cps.toFixed(1)} calls/s, answered ${r.done.numbersAnswered}/${n} failed ${r.done.numbersFailed} in ${r.seconds.toFixed(1)} s · per call: ${perText(r.per)} · ${uptime()}`,
    );
    const rose = !best || cps >= best.cps * RISE;
    if (!best || cps > best.cps) {
      best = { concurrency, cps, per: r.per };
      bestStatements = r;
    }
    if (!rose) break;
  }
  line('campaign maximum', { concurrency: best?.concurrency ?? '-', cps: (best?.cps ?? 0).toFixed(1) });
  line('campaign / trunk maxima', {
    ratio: trunkRate > 0 ? ((best?.cps ?? 0) / trunkRate).toFixed(2) : '-',
    goal: '>= 0.80',
  });
  const cpuOfStep = (per: Record<string, number>) => (per['node cpu ms'] ?? 0) + (per['pg cpu ms'] ?? 0);
  line('cpu per call at the maxima (ms)', {
    trunkDaemon: (trunkCost['node cpu ms'] ?? 0).toFixed(2),
    trunkPostgres: (trunkCost['pg cpu ms'] ?? 0).toFixed(2),
    campaignDaemon: (best?.per['node cpu ms'] ?? 0).toFixed(2),
    campaignPostgres: (best?.per['pg cpu ms'] ?? 0).toFixed(2),
    campaignOverTrunk: (cpuOfStep(best?.per ?? {}) / Math.max(0.001, cpuOfStep(trunkCost))).toFixed(2),
  });
  if (adminSql && bestStatements) {
    line('statements per call at the maxima', {
      trunk: (trunkCost['pg statements'] ?? 0).toFixed(2),
      trunkInFunctions: (trunkCost['pg fn statements'] ?? 0).toFixed(2),
      campaign: (bestStatements.per['pg statements'] ?? 0).toFixed(2),
      campaignInFunctions: (bestStatements.per['pg fn statements'] ?? 0).toFixed(2),
    });
    console.log(`campaign statements (concurrency ${best!.concurrency}), per call:`);
    for (const x of bestStatements.statementList.filter((s) => s.calls / bestStatements!.dialed >= 0.01))
      console.log(
        `  ${x.toplevel ? 'top' : 'fn '} ${(x.calls / bestStatements.dialed).toFixed(3)} calls, ${(x.rows / bestStatements.dialed).toFixed(2)} rows, ${((x.ms * 1000) / bestStatements.dialed).toFixed(0)} µs: ${x.query.slice(0, 140)}`,
      );
  }

  // 3. Pacing: callInterval 100 ms.
  const paced = await campaign('paced', 40, { concurrency: 50, callInterval: 100 });
  const starts = (
    await d.sql<{ at: Date }[]>`
      select started_at as at from dialer_attempts where campaign_id = ${paced.id} order by started_at`
  ).map((r) => r.at.getTime());
  const gaps = starts.slice(1).map((s, i) => s - starts[i]!);
  const mean = gaps.reduce((a, b) => a + b, 0) / Math.max(1, gaps.length);
  const sorted = gaps.map((g) => Math.abs(g - 100)).sort((a, b) => a - b);
  line('dialer pacing (callInterval 100 ms)', {
    calls: starts.length,
    meanGapMs: mean.toFixed(1),
    minGapMs: gaps.length > 0 ? Math.min(...gaps).toFixed(0) : '-',
    ratio: (mean / 100).toFixed(3),
    p95ErrorMs: (sorted[Math.floor(sorted.length * 0.95)] ?? 0).toFixed(0),
  });
  console.log(`# ${uptime()}`);
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => runCleanups(cleanups));
