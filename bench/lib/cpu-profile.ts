import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

/**
 * BENCH_CPU_PROF=<file>: starts a CPU profile of this process now; `stop()` writes it to the file.
 * Without the variable both are no-ops, so a bench profiles only its measured window.
 */
export async function startCpuProfile(): Promise<{ stop(): Promise<void> }> {
  const file = process.env['BENCH_CPU_PROF'];
  if (!file) return { stop: async () => undefined };
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return {
    async stop() {
      writeFileSync(file, JSON.stringify((await session.post('Profiler.stop')).profile));
      session.disconnect();
    },
  };
}
