import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { DeepPartial } from '../../../src/config/load.js';
import type { Config } from '../../../src/config/schema.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

const CHILD = new URL('./crash-child.ts', import.meta.url).pathname;

/** A daemon in its own process (crash-child.ts) that a crash test can SIGKILL mid-call. */
export async function spawnChildDaemon(
  t: Teardown,
  overrides: DeepPartial<Config>,
): Promise<{ ports: Record<string, number>; kill(): Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, JSON.stringify(overrides)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const kill = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  t.teardown(kill);
  const first = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', () => reject(new Error('child daemon exited before listening')));
  });
  return { ports: JSON.parse(first) as Record<string, number>, kill };
}
