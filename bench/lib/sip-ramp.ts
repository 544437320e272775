/**
 * Shared parts of the whole-daemon SIP benches: sipp runs in their own process groups, an offered
 * rate step read from sipp's RTT trace, a rising-rate ramp, and the CPU seconds of processes.
 */
import { spawn, execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync, readdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { acceptingRefusal, fill, fixture, freePort } from '../../test/telephony/sip/sipp.js';

export const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();

/** CPU seconds (user + system) of the processes `pick` selects, from /proc: PostgreSQL backends, Kamailio. */
export function cpuOf(pick: (pid: number, ppid: number, cmdline: string) => boolean): number {
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

/**
 * CPU seconds of this process's sipp peers: those still running (the UAS) from /proc, plus every
 * child already reaped (each step's UAC), from this process's cutime + cstime. A peer's CPU shares
 * the machine's cores with what it measures, so the bench states it beside the daemon's.
 */
export function sippCpu(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const reaped = (Number(f[13]) + Number(f[14])) / 100;
  return reaped + cpuOf((_pid, ppid, cmd) => ppid === process.pid && cmd.startsWith('sipp '));
}

/** CPU seconds of this process (the daemon runs in it). */
export const nodeCpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

export interface Proc {
  pid: number;
  exited: Promise<number>;
  kill(): Promise<void>;
  output(): string;
}

export const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! : 0;
};

/** The UAC scenario: challenge (with credentials), INVITE (setup time starts here), 200, ACK, hold, BYE; or a 503, ACKed. */
export function uacScenario(holdMs: number, challenge = true): string {
  const auth = challenge ? fixture('uac-auth.xml') : fixture('uac-auth.xml').replace('      {{AUTH_HEADER}}\n', '');
  const marked = auth.replace(
    '{{CHALLENGE_BLOCK}}\n  <send retrans="500">',
    '{{CHALLENGE_BLOCK}}\n  <send retrans="500" start_rtd="true">',
  );
  if (marked === auth) throw new Error('uac-auth.xml changed: cannot mark the INVITE');
  // A refused call (the overload control's 503) is ACKed and ended, as a caller does.
  return acceptingRefusal(
    fill(marked, {
      CHALLENGE_BLOCK: challenge ? fixture('uac-challenge.block') : '',
      AUTH_HEADER: challenge ? '[authentication]' : '',
      EXTRA_HEADERS: '',
      TAIL: fill(fixture('uac-tail-answer.xml'), { HOLD_MS: String(holdMs) }),
    }),
  );
}

/** A UAS that answers calls for `user` (sipp's answer fixture). */
export const uasScenario = (user: string) => fill(fixture('uas-answer.xml'), { EXPECT_USER: user });

export interface Step {
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

/** Who places a step's calls: digest credentials, or none (a whitelisted source address `ip`). */
export interface Caller {
  number: string;
  user?: string;
  pass?: string;
  /** The local address sipp sends from (default 127.0.0.1). */
  ip?: string;
}

/** Rising offered rates until one fails or falls behind. */
export type StepRunner = (rate: number, calls: number) => Promise<Step>;

/**
 * A bench's sipp and process runner: every process in its own group (Kamailio forks workers, which
 * a kill of the parent alone would leave running holding the output pipes), killed by `cleanups`.
 */
export function createSipBench(o: { work: string; cleanups: Array<() => unknown>; holdMs: number }) {
  const { work, cleanups } = o;
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

  async function waitForUdp(port: number, proc: Proc, ip = '127.0.0.1') {
    const dgram = await import('node:dgram');
    let alive = true;
    void proc.exited.then(() => (alive = false));
    for (let i = 0; alive && i < 250; i++) {
      const s = dgram.createSocket('udp4');
      const taken = await new Promise<boolean>((r) => {
        s.once('error', () => r(true));
        s.bind(port, ip, () => r(false));
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

  let dirs = 0;
  /** sipp with the bench's common options; the RTT trace lands in its own directory. */
  async function sipp(scenario: string, args: string[], calls: number, timeoutS: number, ip = '127.0.0.1') {
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
        ip,
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
    await waitForUdp(port, proc, ip);
    return { ...proc, port, dir };
  }

  /** `calls` calls offered at `rate` per second to the SIP port `target`; answered calls and setup times. */
  async function step(
    target: number,
    caller: Caller,
    rate: number,
    calls: number,
    holdMs = o.holdMs,
    extraTimeoutS = 30,
  ): Promise<Step> {
    const digest = caller.user !== undefined;
    const uac = await sipp(
      uacScenario(holdMs, digest),
      [
        `127.0.0.1:${target}`,
        '-s',
        caller.number,
        ...(digest ? ['-au', caller.user!, '-ap', caller.pass ?? ''] : []),
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
      caller.ip,
    );
    const exit = await uac.exited;
    const { at, rtt } = readRtt(uac.dir);
    const span = at.length > 1 ? (at[at.length - 1]! - at[0]!) / 1000 : 0;
    const achieved = span > 0 ? (at.length - 1) / span : 0;
    if (exit !== 0 && process.env['BENCH_SIP_VERBOSE']) console.log(uac.output().slice(-3000));
    return { rate, calls, answered: at.length, achieved, exit, setup: rtt };
  }

  return { run, sipp, step, waitForUdp };
}

/**
 * Offers each of `rates` for `stepSeconds` until a step fails or falls behind; prints each step with
 * the CPU ms per answered call of each process group `cost` measures (load-independent, unlike calls/s
 * on a shared machine; keys ending in ` ms` are CPU seconds shown as ms, the others counts per call). Returns every step and the best clean one.
 */
export async function ramp(
  label: string,
  rates: number[],
  stepSeconds: number,
  runStep: StepRunner,
  between: () => Promise<void>,
  cost: () => Promise<Record<string, number>>,
) {
  let best: Step | null = null;
  const steps: Step[] = [];
  const perCall: Record<string, number>[] = [];
  for (const rate of rates) {
    const before = await cost();
    let s = await runStep(rate, Math.round(rate * stepSeconds));
    // sipp's own fatal start errors (254/255, nothing sent: a port taken meanwhile) say nothing of the peer: once more.
    if (s.answered === 0 && s.exit >= 254) s = await runStep(rate, Math.round(rate * stepSeconds));
    steps.push(s);
    await between();
    const after = await cost();
    const delta = (k: string) => (after[k] ?? 0) - (before[k] ?? 0);
    const costs = Object.fromEntries(
      Object.keys(after).map((k) => [k, (delta(k) * (k.endsWith(' ms') ? 1000 : 1)) / Math.max(1, s.answered)]),
    );
    perCall.push(costs);
    // A count also shows the step's total: a few overload refusals in a step round to 0.00 a call,
    // yet each is a call sipp ended as a success (it ACKs the 503) and the step's answered falls short.
    const per = Object.entries(costs)
      .map(([k, v]) => `${k} ${v.toFixed(2)}${k.endsWith(' ms') || !delta(k) ? '' : ` (${Math.round(delta(k))})`}`)
      .join(', ');
    const clean = s.exit === 0 && s.answered === s.calls && s.achieved >= rate * 0.95;
    console.log(
      `  ${label} offered ${rate}/s: ${s.achieved.toFixed(0)}/s answered ${s.answered}/${s.calls}, sipp exit ${s.exit}, setup p50 ${pct(s.setup, 50).toFixed(1)} ms p99 ${pct(s.setup, 99).toFixed(1)} ms${clean ? '' : ' (not sustained)'} · per call: ${per} · load ${loadavg()[0]!.toFixed(2)}`,
    );
    if (!clean) {
      if (process.env['BENCH_SIP_ALL_STEPS']) continue;
      break;
    }
    if (!best || s.rate > best.rate) best = s;
  }
  return { best, steps, perCall };
}
