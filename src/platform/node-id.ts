import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * This daemon's lasting identity, kept in the state directory: after a restart it recognises the
 * live calls it owned before and reconciles them at once.
 */
export function loadNodeId(stateDir: string): string {
  const dir = resolve(stateDir);
  const file = join(dir, 'node-id');
  try {
    const id = readFileSync(file, 'utf8').trim();
    if (id) return id;
  } catch {
    // first start
  }
  mkdirSync(dir, { recursive: true });
  const id = randomUUID();
  writeFileSync(file, `${id}\n`);
  return id;
}
