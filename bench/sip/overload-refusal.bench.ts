/**
 * What an overload refusal costs the daemon: CPU per new INVITE answered 503 by the overload
 * control (RFC 3261 stack on a real UDP transport, the guard refusing every new INVITE), with sipp
 * as the caller in its own process. Two callers: one that ACKs the 503 as RFC 3261 callers do, and
 * sipp's unexpected-message behaviour under -nd (no ACK; the INVITE retransmitted until sipp's
 * timers give up), which the trunk-calls bench's callers had before they learnt to ACK a 503.
 * Each figure is this process's user+system CPU over the run divided by the INVITEs refused, so the
 * machine's load moves it little. BENCH_CPU_PROF (bench/lib/cpu-profile.ts) profiles the ACKing run.
 * Usage: node --import tsx bench/sip/overload-refusal.bench.ts [calls=6000] [rate=1500]
 */
import pino from 'pino';
import { createOverloadGuard } from '../../src/telephony/sip/overload.js';
import { createSipStack } from '../../src/telephony/sip/stack.js';
import { createSipTransport } from '../../src/telephony/sip/transport.js';
import { acceptingRefusal, fill, fixture } from '../../test/telephony/sip/sipp.js';
import { runCleanups } from '../lib/cleanups.js';
import { startCpuProfile } from '../lib/cpu-profile.js';
import { createSipBench, nodeCpu, uptime } from '../lib/sip-ramp.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [calls = 6000, rate = 1500] = process.argv.slice(2).map(Number);
const cleanups: Array<() => unknown> = [];
const work = mkdtempSync(join(tmpdir(), 'bench-refusal-'));
cleanups.push(() => rmSync(work, { recursive: true, force: true }));
const { sipp } = createSipBench({ work, cleanups, holdMs: 0 });
const log = pino({ level: 'silent' });

/** One INVITE without credentials, its 503 ACKed (or not), nothing after. */
const noChallenge = fill(fixture('uac-auth.xml').replace('      {{AUTH_HEADER}}\n', ''), {
  CHALLENGE_BLOCK: '',
  AUTH_HEADER: '',
  EXTRA_HEADERS: '',
  TAIL: '  <recv response="200"/>\n',
});
const acking = acceptingRefusal(noChallenge);

async function run(label: string, scenario: string, profile: boolean): Promise<void> {
  const transport = await createSipTransport({ host: '127.0.0.1', port: 0, log });
  // Every new INVITE refused: the delay rule read as far over its mark for ten windows.
  const overload = createOverloadGuard({
    settings: {
      retransmitPct: 0,
      resumeRetransmitPct: 0,
      busyPct: 0,
      resumeBusyPct: 0,
      loopDelayMs: 1,
      resumeDelayMs: 0,
      maxInvitesInSetup: 0,
      retryAfterSeconds: 2,
    },
    log,
    loopDelay: () => 1000,
    sampleEveryMs: 0,
  });
  for (let i = 0; i < 10; i++) overload.sample();
  const stack = createSipStack({ transport, log, overload });
  const prof = profile ? await startCpuProfile() : null;
  const before = nodeCpu();
  const uac = await sipp(
    scenario,
    [
      `127.0.0.1:${transport.port}`,
      '-s',
      '441100000001',
      '-r',
      String(rate),
      '-l',
      String(calls),
      '-recv_timeout',
      '4000',
    ],
    calls,
    Math.ceil(calls / rate) + 40,
  );
  await uac.exited;
  const cpu = nodeCpu() - before;
  await prof?.stop();
  const { refused, retransmissions } = overload.stats();
  console.log(
    `sip overload refusal, ${label}: ${((cpu * 1e6) / Math.max(1, refused)).toFixed(1)} µs CPU per refused INVITE (${refused} refused, ${retransmissions} retransmissions counted, ${(cpu * 1000).toFixed(0)} ms) · ${uptime()}`,
  );
  overload.close();
  await stack.close();
}

try {
  await run('caller ACKs the 503', acking, true);
  await run('sipp -nd (no ACK, INVITE retransmitted)', noChallenge, false);
} finally {
  await runCleanups(cleanups);
}
