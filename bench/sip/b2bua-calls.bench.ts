/**
 * Trunk B2BUA throughput: sipp UAC (digest auth) → B2BUA (in-memory policy) → sipp UAS.
 * Usage: node --import tsx bench/sip/b2bua-calls.bench.ts [callsPerSecond=200] [calls=2000] [holdMs=0]
 * Prints calls/s completed, p50/p99 setup time (authenticated INVITE → 200 OK), peak concurrent calls,
 * and this process's CPU time per answered call (user + system; the sipp peers are other processes),
 * which a loaded machine skews far less than calls per second. The CPU clock starts once a fifth of
 * the calls are planned, so start-up and JIT warm-up stay out of it.
 * BENCH_SIP_LOG=info: the B2BUA logs at that level as a site's daemon does (redacted, synchronous
 * writes, to /dev/null), instead of warn; BENCH_CPU_PROF=<file>: a CPU profile of the measured part (bench/lib/cpu-profile.ts).
 */
import { loadavg } from 'node:os';
import pino from 'pino';
import { startCpuProfile } from '../lib/cpu-profile.js';
import { createLogger } from '../../src/platform/logger.js';
import { createSipTransport } from '../../src/telephony/sip/transport.js';
import { createSipStack } from '../../src/telephony/sip/stack.js';
import { computeHa1 } from '../../src/telephony/sip/digest.js';
import { createTrunkB2bua } from '../../src/telephony/sip/b2bua/index.js';
import { systemClock } from '../../src/platform/clock.js';
import { fill, fixture, sipp } from '../../test/telephony/sip/sipp.js';

const [rate = 200, calls = 2000, holdMs = 0] = process.argv.slice(2).map(Number);
const REALM = 'bench.exchange.test';
const cleanups: Array<() => void | Promise<void>> = [];
const teardown = { teardown: (fn: () => void | Promise<void>) => void cleanups.push(fn) };

// As the daemon logs (createLogger: redaction, synchronous writes), to /dev/null.
const log = process.env['BENCH_SIP_LOG']
  ? createLogger(process.env['BENCH_SIP_LOG'], pino.destination({ dest: '/dev/null', sync: true }))
  : pino({ level: 'warn' });
let prof: Promise<{ stop(): Promise<void> }> | undefined;
const transport = await createSipTransport({ host: '127.0.0.1', port: 0, log });
const stack = createSipStack({ transport, log });
const started = new Map<string, number>();
const setup: number[] = [];
let answered = 0;
let failed = 0;
let peak = 0;
let firstAt = 0;
const warmCalls = Math.max(1, Math.floor(calls / 5));
let warm: { cpu: NodeJS.CpuUsage; answered: number } | undefined;
let lastAt = 0;

const uas = await sipp(
  teardown,
  fill(fixture('uas-answer.xml'), { EXPECT_USER: '12025550123' }),
  ['-buff_size', '1048576'],
  { calls, timeout: '120s' },
);
uas.exited.catch(() => undefined);
const b2bua = createTrunkB2bua({
  stack,
  log,
  clock: systemClock,
  realm: REALM,
  nonceSecret: 'bench',
  policy: {
    resolveByIp: async () => null,
    lookupSipUser: async (u) => ({ ha1: computeHa1(u, REALM, 'pw'), accountId: 'acc', subAccountId: u }),
    planCall: async ({ callId }) => {
      started.set(callId, performance.now());
      if (started.size === warmCalls) {
        warm = { cpu: process.cpuUsage(), answered };
        prof = startCpuProfile();
      }
      if (!firstAt) firstAt = performance.now();
      return {
        callGroupId: callId,
        maxDurationSeconds: 3600,
        candidates: [
          {
            routeId: 'r1',
            endpoints: [{ host: '127.0.0.1', port: uas.port, transport: 'udp', priority: 1, weight: 1 }],
          },
        ],
      };
    },
    onAnswered: ({ callId }) => {
      const t0 = started.get(callId);
      if (t0 !== undefined) setup.push(performance.now() - t0);
      peak = Math.max(peak, b2bua.activeCalls());
    },
    onCallEnded: (e) => {
      if (e.answeredAt) answered++;
      else failed++;
      lastAt = performance.now();
    },
  },
});

const uacScenario = fill(fixture('uac-auth.xml'), {
  CHALLENGE_BLOCK: fixture('uac-challenge.block'),
  AUTH_HEADER: '[authentication]',
  TAIL: fill(fixture('uac-tail-answer.xml'), { HOLD_MS: String(holdMs) }),
});
const uac = await sipp(
  teardown,
  uacScenario,
  [
    `127.0.0.1:${transport.port}`,
    '-s',
    '12025550123',
    '-au',
    'sub_bench',
    '-ap',
    'pw',
    '-r',
    String(rate),
    '-l',
    '20000',
    '-buff_size',
    '1048576',
  ],
  { calls, timeout: '120s' },
);
const code = await uac.exited;
const cpu = process.cpuUsage(warm?.cpu);
await (await prof)?.stop();
const measured = Math.max(answered - (warm?.answered ?? 0), 1);

const sorted = [...setup].sort((a, b) => a - b);
const pct = (p: number) =>
  sorted.length ? (sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0) : 0;
const seconds = (lastAt - firstAt) / 1000;
console.log(
  `sip b2bua calls/s: ${(answered / seconds).toFixed(1)} (offered ${rate}/s, ${answered} answered, ${failed} failed, sipp exit ${code})`,
);
console.log(`sip b2bua setup p50: ${pct(50).toFixed(2)} ms`);
console.log(`sip b2bua setup p99: ${pct(99).toFixed(2)} ms`);
console.log(`sip b2bua peak concurrent calls: ${peak}`);
console.log(
  `sip b2bua cpu per call: ${((cpu.user + cpu.system) / 1000 / measured).toFixed(3)} ms over ${measured} calls (user ${(cpu.user / 1000 / measured).toFixed(3)}, system ${(cpu.system / 1000 / measured).toFixed(3)}) · load ${loadavg()[0]!.toFixed(2)}`,
);
console.log(`sip b2bua planned ${started.size}, still active ${b2bua.activeCalls()}`);
for (const c of cleanups.reverse()) await c();
await stack.close();
