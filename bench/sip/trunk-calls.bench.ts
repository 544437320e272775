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
 * BENCH_SIP_DB=socket (database over the local Unix socket instead of TCP), BENCH_SIP_VERBOSE=1.
 */
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, readdirSync, existsSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { join } from 'node:path';
import { childDaemonConfig, spawnChildDaemon } from '../../test/modules/sip-trunks/child-daemon.js';
import { createWorld } from '../../test/modules/sip-trunks/world.js';
import { fill, fixture, freePort } from '../../test/telephony/sip/sipp.js';
import { runCleanups } from '../lib/cleanups.js';

const [stepSeconds = 5, heldCalls = 5500] = process.argv.slice(2).map(Number);
const RATES = (process.env['BENCH_SIP_RATES'] ?? '50,100,150,200,300,400,500,650,800,1000,1200,1400,1700,2000')
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

const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();

/** CPU seconds (user + system) of the processes `pick` selects, from /proc: PostgreSQL backends, Kamailio. */
function cpuOf(pick: (pid: number, ppid: number, cmdline: string) => boolean): number {
  let ticks = 0;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (pick(Number(name), Number(fields[1]), cmdline)) ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // The process ended while being read.
    }
  }
  return ticks / 100;
}
const nodeCpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

interface Proc {
  pid: number;
  exited: Promise<number>;
  kill(): Promise<void>;
  output(): string;
}

// Each in its own process group: Kamailio forks workers, which a kill of the parent alone would
// leave running (holding the output pipes, so the bench would never exit).
function run(cmd: string, args: string[], cwd: string): Proc {
  const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  const keep = (d: Buffer) => {
    out = (out + d.toString()).slice(-20_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise<number>((r) => child.once('exit', (code) => r(code ?? -1)));
  const proc: Proc = {
    pid: child.pid ?? -1,
    exited,
    output: () => out,
    async kill() {
      if (child.exitCode === null && child.signalCode === null && child.pid) {
        process.kill(-child.pid, 'SIGKILL');
        await exited;
      }
      child.stdout.destroy();
      child.stderr.destroy();
    },
  };
  cleanups.push(() => proc.kill());
  return proc;
}

let dirs = 0;
/** sipp with the bench's common options; the RTT trace lands in its own directory. */
async function sipp(scenario: string, args: string[], calls: number, timeoutS: number) {
  const dir = join(work, `sipp-${++dirs}`);
  execFileSync('mkdir', ['-p', dir]);
  writeFileSync(join(dir, 'scenario.xml'), scenario);
  const port = await freePort();
  const proc = run(
    'sipp',
    [
      ...args,
      '-sf',
      'scenario.xml',
      '-i',
      '127.0.0.1',
      '-p',
      String(port),
      '-m',
      String(calls),
      '-buff_size',
      '1048576',
      '-nostdin',
      '-nd',
      '-timeout',
      `${timeoutS}s`,
      '-timeout_error',
    ],
    dir,
  );
  await waitForUdp(port, proc);
  return { ...proc, port, dir };
}

async function waitForUdp(port: number, proc: Proc) {
  const dgram = await import('node:dgram');
  let alive = true;
  void proc.exited.then(() => (alive = false));
  for (let i = 0; alive && i < 250; i++) {
    const s = dgram.createSocket('udp4');
    const taken = await new Promise<boolean>((r) => {
      s.once('error', () => r(true));
      s.bind(port, '127.0.0.1', () => r(false));
    });
    try {
      s.close();
    } catch {
      // A socket whose bind failed is already closed.
    }
    if (taken) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The UAC scenario: challenge, authenticated INVITE (setup time starts here), 200, ACK, hold, BYE. */
function uacScenario(holdMs: number): string {
  const auth = fixture('uac-auth.xml');
  const marked = auth.replace(
    '{{CHALLENGE_BLOCK}}\n  <send retrans="500">',
    '{{CHALLENGE_BLOCK}}\n  <send retrans="500" start_rtd="true">',
  );
  if (marked === auth) throw new Error('uac-auth.xml changed: cannot mark the authenticated INVITE');
  return fill(marked, {
    CHALLENGE_BLOCK: fixture('uac-challenge.block'),
    AUTH_HEADER: '[authentication]',
    TAIL: fill(fixture('uac-tail-answer.xml'), { HOLD_MS: String(holdMs) }),
  });
}

const uasScenario = fill(fixture('uas-answer.xml'), { EXPECT_USER: NUMBER });

interface Step {
  rate: number;
  calls: number;
  answered: number;
  achieved: number;
  exit: number;
  setup: number[];
}

/** Reads sipp's RTT trace: one `date_ms;rtt_ms;rtd_no` line per answered call. */
function readRtt(dir: string): { at: number[]; rtt: number[] } {
  const at: number[] = [];
  const rtt: number[] = [];
  for (const f of readdirSync(dir).filter((n) => n.endsWith('_rtt.csv'))) {
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) {
      const [d, r] = line.split(';');
      const date = Number(d);
      const ms = Number(r);
      if (Number.isFinite(date) && Number.isFinite(ms) && d !== '') {
        at.push(date);
        rtt.push(ms);
      }
    }
  }
  return { at: at.sort((a, b) => a - b), rtt };
}

async function step(
  target: number,
  user: string,
  pass: string,
  rate: number,
  calls: number,
  holdMs = HOLD_MS,
  extraTimeoutS = 30,
): Promise<Step> {
  const uac = await sipp(
    uacScenario(holdMs),
    [
      `127.0.0.1:${target}`,
      '-s',
      NUMBER,
      '-au',
      user,
      '-ap',
      pass,
      '-r',
      String(rate),
      '-l',
      String(Math.max(20000, calls)),
      '-trace_rtt',
      '-rtt_freq',
      '1',
      '-recv_timeout',
      '10000',
    ],
    calls,
    Math.ceil(calls / rate + holdMs / 1000) + extraTimeoutS,
  );
  const exit = await uac.exited;
  const { at, rtt } = readRtt(uac.dir);
  const span = at.length > 1 ? (at[at.length - 1]! - at[0]!) / 1000 : 0;
  const achieved = span > 0 ? (at.length - 1) / span : 0;
  if (exit !== 0 && process.env['BENCH_SIP_VERBOSE']) console.log(uac.output().slice(-3000));
  return { rate, calls, answered: at.length, achieved, exit, setup: rtt };
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! : 0;
};

/** Rising offered rates until one fails or falls behind; returns every step and the best clean one. */
type StepRunner = (rate: number, calls: number) => Promise<Step>;
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

async function ramp(
  label: string,
  runStep: StepRunner,
  between: () => Promise<void>,
  cost: () => Promise<Record<string, number>>,
) {
  let best: Step | null = null;
  const steps: Step[] = [];
  for (const rate of RATES) {
    const before = await cost();
    let s = await runStep(rate, Math.round(rate * stepSeconds));
    // sipp's own fatal start errors (254/255, nothing sent: a port taken meanwhile) say nothing of the peer: once more.
    if (s.answered === 0 && s.exit >= 254) s = await runStep(rate, Math.round(rate * stepSeconds));
    steps.push(s);
    await between();
    const after = await cost();
    // Per answered call: CPU ms of each process group (load-independent, unlike calls/s on a shared machine).
    const per = Object.keys(after)
      .map(
        (k) =>
          `${k} ${((((after[k] ?? 0) - (before[k] ?? 0)) * (k.endsWith('xacts') ? 1 : 1000)) / Math.max(1, s.answered)).toFixed(2)}`,
      )
      .join(', ');
    const clean = s.exit === 0 && s.answered === s.calls && s.achieved >= rate * 0.95;
    console.log(
      `  ${label} offered ${rate}/s: ${s.achieved.toFixed(0)}/s answered ${s.answered}/${s.calls}, sipp exit ${s.exit}, setup p50 ${pct(s.setup, 50).toFixed(1)} ms p99 ${pct(s.setup, 99).toFixed(1)} ms${clean ? '' : ' (not sustained)'} · per call: ${per} · load ${loadavg()[0]!.toFixed(2)}`,
    );
    if (!clean) break;
    best = s;
  }
  return { best, steps };
}

// TCP to PostgreSQL as the daemon's embedded database uses; BENCH_SIP_DB=socket tries the local Unix socket.
const SOCKET_DIR = '/var/run/postgresql';
const viaSocket =
  process.env['BENCH_SIP_DB'] === 'socket' &&
  !process.env['SVC_TEST_PG_ADMIN_URL'] &&
  existsSync(`${SOCKET_DIR}/.s.PGSQL.5432`);
if (viaSocket) process.env['SVC_TEST_PG_ADMIN_URL'] = `postgres://postgres@${encodeURIComponent(SOCKET_DIR)}/postgres`;

try {
  console.log(`sip trunk bench start (database over ${viaSocket ? 'Unix socket' : 'TCP'}) · ${uptime()}`);
  // Every call holds money for up to max_call_seconds; 10 minutes keeps the held-calls run affordable.
  const w = await createWorld(t, { sip: { host: '127.0.0.1', port: 0, max_call_seconds: 600 } });
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
  const ourCost = async () => {
    const [x] = await sql<
      { n: number }[]
    >`select xact_commit::float8 as n from pg_stat_database where datname = ${dbName}`;
    return {
      'node cpu ms': nodeCpu(),
      'pg cpu ms': cpuOf((_p, _pp, cmd) => cmd.includes(` ${dbName} `)),
      'pg xacts': x?.n ?? 0,
    };
  };
  const ours = await ramp('exchange', oneTarget(w.sipPort, sub.sipUsername, sub.sipPassword), drained, ourCost);
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
    const held = await step(w.sipPort, sub.sipUsername, sub.sipPassword, rate, heldCalls, hold, 60);
    clearInterval(sampler);
    heldAnswered = held.answered;
    await drained();
    console.log(
      `sip trunk concurrent calls held: ${peak} (offered ${heldCalls} at ${rate}/s, ${hold / 1000} s each; ${held.answered} answered, sipp exit ${held.exit})`,
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
        sip: { max_call_seconds: 600 },
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
    await b.kill();
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
    const kamCost = async () => ({ 'kamailio cpu ms': cpuOf((pid, ppid) => pid === kam.pid || ppid === kam.pid) });
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
    console.log(`sip trunk calls/s ÷ kamailio: ${theirBest ? (oursBest / theirBest).toFixed(2) : 'n/a'} (goal ≥ 0.30)`);
  }
  if (!ok) process.exitCode = 1;
} finally {
  await runCleanups(cleanups);
}
