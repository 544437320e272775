/**
 * A freshly started daemon under traffic at once: how many new INVITEs the overload control refuses
 * while the first calls compile their code paths (V8, serializers, prepared statements, first
 * look-ups), and the loop-delay readings behind them; then how fast a loop that is truly held is
 * still refused.
 *
 * A fresh daemon (its own fresh database) with the overload control as a site runs it, a route to a
 * sipp UAS and a funded sub-account; sipp calls at the given rate at once, nothing before. Every
 * 100 ms window's mean event-loop delay is recorded as the guard reads it (its own monitor, same
 * computation), and printed as the windows at or over the delay mark and at or over the resume mark.
 * Then the loop is held in 250 ms turns (as test/modules/sip-trunks/overload.test.ts does) and the
 * time until the refused share reaches all is printed.
 *
 * Usage: node --import tsx bench/sip/cold-start.bench.ts
 * Env: BENCH_COLD_RATE (offered calls/s, 50), BENCH_COLD_SECONDS (5), BENCH_COLD_HELD=0 (no held-loop
 * part), BENCH_COLD_TRACE=<file> (the windows' delays and shares as JSON), BENCH_CPU_PROF=<file> (a CPU
 * profile of the calls), SVC_SIP_OVERLOAD_* as the daemon reads them.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { register, type Counter, type Gauge } from 'prom-client';
import { loadConfig } from '../../src/config/load.js';
import { createWorld } from '../../test/modules/sip-trunks/world.js';
import { runCleanups } from '../lib/cleanups.js';
import { startCpuProfile } from '../lib/cpu-profile.js';
import { createSipBench, pct, uasScenario as uasFor, uptime } from '../lib/sip-ramp.js';

const RATE = Number(process.env['BENCH_COLD_RATE'] ?? 50);
const SECONDS = Number(process.env['BENCH_COLD_SECONDS'] ?? 5);
const NUMBER = '441100000001';

const cleanups: Array<() => unknown> = [];
const t = {
  teardown: (fn: () => unknown) => void cleanups.push(fn),
  equal: (a: unknown, b: unknown) => a === b,
};
const work = mkdtempSync(join(tmpdir(), 'bench-cold-'));
cleanups.push(() => rmSync(work, { recursive: true, force: true }));
const { sipp, step } = createSipBench({ work, cleanups, holdMs: 100 });

/**
 * Mean lateness per 100 ms window, as the guard computes it (10 ms monitor period taken off), and
 * the refused share the guard had set by then.
 */
function delayTrace(): { stop(): { delay: number[]; share: number[] } } {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  const delay: number[] = [];
  const shares: number[] = [];
  const timer = setInterval(() => {
    delay.push(Math.max(0, h.count === 0 ? 100 : h.mean / 1e6 - 10));
    h.reset();
    void share().then((r) => shares.push(r));
  }, 100);
  return {
    stop() {
      clearInterval(timer);
      h.disable();
      return { delay, share: shares };
    },
  };
}

const counter = async (name: string, cause?: string): Promise<number> => {
  const m = register.getSingleMetric(name) as Counter<'cause'> | undefined;
  const values = (await m?.get())?.values ?? [];
  return (cause ? values.find((v) => v.labels.cause === cause) : values[0])?.value ?? 0;
};
const share = async (): Promise<number> => {
  const m = register.getSingleMetric('svc_sip_overload_refused_share') as Gauge | undefined;
  return (await m?.get())?.values[0]?.value ?? 0;
};

try {
  const sip = loadConfig({ env: process.env }).sip;
  const w = await createWorld(t, {
    sip: {
      host: '127.0.0.1',
      port: 0,
      max_call_seconds: 600,
      overload_retransmit_pct: sip.overload_retransmit_pct,
      overload_resume_retransmit_pct: sip.overload_resume_retransmit_pct,
      overload_busy_pct: sip.overload_busy_pct,
      overload_resume_busy_pct: sip.overload_resume_busy_pct,
      overload_loop_delay_ms: sip.overload_loop_delay_ms,
      overload_resume_delay_ms: sip.overload_resume_delay_ms,
      overload_max_invites_in_setup: sip.overload_max_invites_in_setup,
    },
  });
  const uas = await sipp(uasFor(NUMBER), [], 10_000_000, 3600);
  await w.route({ port: uas.port, prefix: '4411', rate: '0.001000' });
  await w.d.modules.services.ledger.topup({
    accountId: w.operator.accountId,
    amount: '10000.000000',
    source: 'wire',
    postingKey: `bench-fund-${w.operator.accountId}`,
  });
  const sub = await w.sub({ fund: '5000.000000' });
  const mark = sip.overload_loop_delay_ms;
  const resume = sip.overload_resume_delay_ms;

  const before = await counter('svc_sip_calls_refused_total', 'overload');
  const retransmittedBefore = await counter('svc_sip_invite_retransmissions_total');
  const prof = await startCpuProfile();
  const trace = delayTrace();
  const cpu0 = process.cpuUsage();
  const s = await step(
    w.sipPort,
    { number: NUMBER, user: sub.sipUsername, pass: sub.sipPassword },
    RATE,
    RATE * SECONDS,
  );
  const cpu = process.cpuUsage(cpu0);
  await prof.stop();
  const { delay: windows, share: shares } = trace.stop();
  if (process.env['BENCH_COLD_TRACE'])
    writeFileSync(process.env['BENCH_COLD_TRACE'], JSON.stringify({ rate: RATE, windows, shares }));
  const refusing = shares.findIndex((r) => r > 0);
  const refused = (await counter('svc_sip_calls_refused_total', 'overload')) - before;
  const retransmitted = (await counter('svc_sip_invite_retransmissions_total')) - retransmittedBefore;
  const over = windows.map((d, i) => [i, d] as const).filter(([, d]) => d >= resume);
  console.log(
    `cold start ${RATE}/s: ${refused} of ${s.calls} refused (503), ${retransmitted} admitted INVITEs retransmitted, answered ${s.answered}, sipp exit ${s.exit}, setup p50 ${pct(s.setup, 50).toFixed(1)} ms p99 ${pct(s.setup, 99).toFixed(1)} ms, node cpu ${((cpu.user + cpu.system) / 1000 / Math.max(1, s.answered)).toFixed(2)} ms/call · ${uptime()}`,
  );
  console.log(
    `cold start ${RATE}/s windows: ${windows.length} read, ${windows.filter((d) => d >= mark).length} at or over ${mark} ms, ${over.length} at or over ${resume} ms; those (window: ms): ${over.map(([i, d]) => `${i}:${d.toFixed(0)}`).join(' ')}; refusing from window ${refusing}, max share ${Math.max(0, ...shares)}`,
  );

  if (process.env['BENCH_COLD_HELD'] !== '0') {
    // A loop held in 250 ms turns, 1 ms apart (the overload test's busy loop): every window is late.
    const cell = new Int32Array(new SharedArrayBuffer(4));
    let on = true;
    const hold = (): void => {
      if (!on) return;
      Atomics.wait(cell, 0, 0, 250);
      setTimeout(hold, 1);
    };
    // From no refusals: the calls before may have left a share that is still falling.
    const calm = performance.now() + 30_000;
    while ((await share()) > 0 && performance.now() < calm) await new Promise((res) => setTimeout(res, 100));
    const start = performance.now();
    setTimeout(hold, 1);
    let full = NaN;
    let first = NaN;
    while (performance.now() - start < 10_000) {
      const r = await share();
      if (r > 0 && Number.isNaN(first)) first = performance.now() - start;
      if (r === 1) {
        full = performance.now() - start;
        break;
      }
      await new Promise((res) => setTimeout(res, 5));
    }
    on = false;
    console.log(
      `held loop (250 ms turns): refusing from ${first.toFixed(0)} ms, all new INVITEs refused from ${full.toFixed(0)} ms`,
    );
  }
} finally {
  await runCleanups(cleanups);
}
