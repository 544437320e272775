import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

/**
 * BENCH_CPU_PROF=<file>: starts a CPU profile of this process now; `stop()` writes it to the file
 * (BENCH_CPU_INTERVAL=<µs> between samples).
 * BENCH_HEAP_PROF=<file>: the same for a sampling heap profile (where the measured window allocates,
 * including objects already collected, as GC time follows allocation; with BENCH_HEAP_LIVE=1 only
 * what is still reachable at its end; with BENCH_HEAP_PROMOTED=1 what outlived the young generation,
 * collected later or not: what scavenges copy and promote). Without the variables both
 * are no-ops, so a bench profiles only its measured window.
 */
export async function startCpuProfile(): Promise<{ stop(): Promise<void> }> {
  const cpuFile = process.env['BENCH_CPU_PROF'];
  const heapFile = process.env['BENCH_HEAP_PROF'];
  if (!cpuFile && !heapFile) return { stop: async () => undefined };
  const session = new Session();
  session.connect();
  if (cpuFile) {
    await session.post('Profiler.enable');
    // BENCH_CPU_INTERVAL: microseconds between samples (V8's default is 1000); finer for a call path
    // whose functions each take a few microseconds.
    const interval = Number(process.env['BENCH_CPU_INTERVAL'] ?? 0);
    if (interval > 0) await session.post('Profiler.setSamplingInterval', { interval });
    await session.post('Profiler.start');
  }
  if (heapFile) {
    await session.post('HeapProfiler.enable');
    await session.post('HeapProfiler.startSampling', {
      // BENCH_HEAP_INTERVAL: mean bytes between samples; smaller for per-call A/B figures (less sampling noise).
      samplingInterval: Number(process.env['BENCH_HEAP_INTERVAL'] ?? 16384),
      // BENCH_HEAP_LIVE=1: only what is still reachable at the end (what the window retains).
      includeObjectsCollectedByMajorGC: !process.env['BENCH_HEAP_LIVE'],
      includeObjectsCollectedByMinorGC: !process.env['BENCH_HEAP_LIVE'] && !process.env['BENCH_HEAP_PROMOTED'],
    });
  }
  return {
    async stop() {
      if (cpuFile) writeFileSync(cpuFile, JSON.stringify((await session.post('Profiler.stop')).profile));
      if (heapFile) writeFileSync(heapFile, JSON.stringify((await session.post('HeapProfiler.stopSampling')).profile));
      session.disconnect();
    },
  };
}
