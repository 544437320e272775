/**
 * Dialer throughput and pacing, with SIP trunk calls through the same daemon as the anchor.
 *
 * One real daemon (fresh database, dropped after) and sipp callees answering (OPTIONS too):
 * 1. anchor: sipp calls in over a sub-account's SIP trunk with digest auth at `rate` calls/s and
 *    hangs up 100 ms after answer; the daemon forwards each to a supplier sipp (the bench/sip path);
 * 2. dialer: a voice campaign of `calls` numbers at concurrency 50 over a route to a supplier sipp,
 *    each call answered, its actions (`hangup`) run, settled and recorded;
 * 3. pacing: a campaign of 40 numbers with `callInterval` 100 ms: the gaps between call starts.
 * Prints calls per second of each, the dialer's ratio to the anchor (goal ≥ 0.8), the pacing error
 * and `uptime` (the machine is shared: read the ratios, not the absolute rates), and the CPU each
 * call cost this process (daemon and driver) and the database's backends, per trunk call and per
 * campaign call: figures that hold whatever the load.
 *
 * Usage: node --import tsx bench/dialer/dialer.bench.ts [calls=400] [rate=100]
 */
import { execFileSync } from 'node:child_process';
import { createWorld, eventually } from '../../test/modules/sip-trunks/world.js';
import { fill, fixture, freePort, sipp } from '../../test/telephony/sip/sipp.js';
import { callee } from '../../test/modules/api-calls/peers.js';
import { runCleanups } from '../lib/cleanups.js';
import { procCpuSeconds } from '../lib/proc-cpu.js';

const [calls = 400, rate = 100] = process.argv.slice(2).map(Number);
const cleanups: Array<() => unknown> = [];
const t = {
  teardown: (fn: () => unknown) => void cleanups.push(fn),
  equal: (a: unknown, b: unknown) => a === b,
};
const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();
const line = (what: string, figures: Record<string, string | number>) =>
  console.log(
    `${what}: ${Object.entries(figures)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}`,
  );

async function main() {
  console.log(`# ${uptime()}`);
  const w = await createWorld(t, {
    rtp: { port_min: 30000, port_max: 30999, bind_address: '127.0.0.1' },
    voice: { max_api_calls_per_account: 0 },
    dialer: { tick_ms: 20, call_poll_ms: 100 },
  });
  const { d, operator } = w;
  const many = { calls: calls * 2 + 100, timeout: '600s' };
  /** This process's CPU and the database backends' (the pool is kept, so its pids stay), in ms. */
  const cpu = async () => {
    const pids = await d.sql<{ pid: number }[]>`select pid from pg_stat_activity where datname = current_database()`;
    const u = process.cpuUsage();
    return { node: (u.user + u.system) / 1000, pg: procCpuSeconds(pids.map((p) => p.pid)) * 1000 };
  };
  const perCall = (a: { node: number; pg: number }, b: { node: number; pg: number }, n: number) => ({
    node: (b.node - a.node) / Math.max(1, n),
    pg: (b.pg - a.pg) / Math.max(1, n),
  });

  // 1. Anchor: trunk calls in, forwarded to a supplier.
  const trunkUas = await sipp(t, callee('4411[0-9]+', '', false), ['-mp', String(await freePort())], many);
  await w.route({ port: trunkUas.port, prefix: '4411', rate: '0.010000', increment: '1/1' });
  const sub = await w.sub({ fund: '50' });
  const uac = fill(fixture('uac-auth.xml'), {
    CHALLENGE_BLOCK: fixture('uac-challenge.block'),
    AUTH_HEADER: '[authentication]',
    EXTRA_HEADERS: '',
    TAIL: fill(fixture('uac-tail-answer.xml'), { HOLD_MS: '100', FINAL_CHECK: '.' }),
  });
  const trunkCpuAt = await cpu();
  const run = await sipp(
    t,
    uac,
    [
      `127.0.0.1:${w.sipPort}`,
      '-s',
      '441100000001',
      '-au',
      sub.sipUsername,
      '-ap',
      sub.sipPassword,
      '-r',
      String(rate),
    ],
    // A call whose last packet was lost under load must not hold the run up.
    { calls, timeout: `${Math.ceil(calls / rate) + 30}s` },
  );
  const uacExit = await run.exited;
  // sipp's own count of calls that failed on its side (no record reaches the database for those).
  const failedLine = /Failed call\s*\|[^\n]*/.exec(run.output())?.[0] ?? 'no statistics';
  line('anchor sipp', { exit: uacExit, failed: JSON.stringify(failedLine.replace(/\s+/g, ' ')) });
  // sipp is done when its last BYE is answered; the daemon writes the call's end (settlement, CDR)
  // after that, later under load. Counting before the last records land undercounts the anchor.
  await eventually(async () => {
    const [open] = await d.sql<{ n: number }[]>`
      select count(*)::int as n from calls where source = 'trunk' and ended_at is null`;
    return open!.n === 0 ? true : null;
  }, 120_000);
  // Rates over the span of the calls themselves (first created to last ended), from the records.
  const [trunk] = await d.sql<{ n: number; seconds: number }[]>`
    select count(*)::int as n, extract(epoch from max(ended_at) - min(created_at))::float8 as seconds
    from calls where source = 'trunk' and status = 'completed'`;
  const trunkCpu = perCall(trunkCpuAt, await cpu(), trunk!.n);
  const trunkSeconds = trunk!.seconds;
  const trunkRate = trunk!.n / trunkSeconds;
  // Every call the anchor offered, by how it ended: a shortfall is read here, not guessed.
  const outcomes = await d.sql<{ status: string; code: number | null; n: number }[]>`
    select status, sip_response_code as code, count(*)::int as n from calls where source = 'trunk'
    group by 1, 2 order by 3 desc`;
  line('anchor outcomes', Object.fromEntries(outcomes.map((o) => [`${o.status}/${o.code ?? '-'}`, o.n])));
  line('anchor trunk calls', {
    offered: rate,
    completed: trunk!.n,
    seconds: trunkSeconds.toFixed(1),
    cps: trunkRate.toFixed(1),
  });

  // 2. Dialer: a campaign at concurrency 50.
  const campaignUas = await sipp(t, callee('4476[0-9]+', '', false), ['-mp', String(await freePort())], many);
  const route = await w.route({ port: campaignUas.port, prefix: '4476', rate: '0.010000', increment: '1/1' });
  const clis = await w.api('POST', '/dialer/cli-sets', operator.token, { name: 'bench', clis: ['+15550001111'] });
  const campaign = async (name: string, numbers: string[], extra: Record<string, unknown>) => {
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
    const started = Date.now();
    const cpuAt = await cpu();
    await w.api('POST', `/dialer/campaigns/${id}/control`, operator.token, { action: 'start' });
    // Watched in the database a few times a second: API requests every 25 ms would add their own
    // CPU to the campaign's.
    await eventually(async () => {
      await new Promise((r) => setTimeout(r, 250));
      const [row] = await d.sql<{ status: string }[]>`select status from dialer_campaigns where id = ${id}`;
      return row?.status === 'completed' ? true : null;
    }, 600_000);
    const cpuUsed = await cpu();
    const done = (await w.api('GET', `/dialer/campaigns/${id}`, operator.token)).body.data;
    const [span] = await d.sql<{ seconds: number }[]>`
      select extract(epoch from max(ended_at) - min(started_at))::float8 as seconds
      from dialer_attempts where campaign_id = ${id}`;
    return {
      id,
      seconds: span!.seconds,
      wall: (Date.now() - started) / 1000,
      done,
      cpu: perCall(cpuAt, cpuUsed, done.numbersDialed as number),
    };
  };
  const numbers = Array.from({ length: calls }, (_, i) => `+447600${String(i).padStart(6, '0')}`);
  const big = await campaign('bench', numbers, { concurrency: 50 });
  const dialerRate = big.done.numbersAnswered / big.seconds;
  line('dialer campaign calls', {
    numbers: calls,
    answered: big.done.numbersAnswered,
    failed: big.done.numbersFailed,
    seconds: big.seconds.toFixed(1),
    wallSeconds: big.wall.toFixed(1),
    cps: dialerRate.toFixed(1),
  });
  line('dialer / trunk anchor', { ratio: (dialerRate / trunkRate).toFixed(2), goal: '>= 0.80' });
  line('cpu per call (ms)', {
    trunkDaemon: trunkCpu.node.toFixed(2),
    trunkPostgres: trunkCpu.pg.toFixed(2),
    campaignDaemon: big.cpu.node.toFixed(2),
    campaignPostgres: big.cpu.pg.toFixed(2),
    campaignOverTrunk: ((big.cpu.node + big.cpu.pg) / Math.max(0.001, trunkCpu.node + trunkCpu.pg)).toFixed(2),
  });

  // 3. Pacing: callInterval 100 ms.
  const paced = await campaign(
    'paced',
    Array.from({ length: 40 }, (_, i) => `+447601${String(i).padStart(6, '0')}`),
    { concurrency: 50, callInterval: 100 },
  );
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
