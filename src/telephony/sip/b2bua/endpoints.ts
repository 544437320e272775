import { randomInt } from 'node:crypto';
import type { TrunkEndpoint } from './types.js';

/** Picks the endpoint order: lowest priority first, weighted random among equals. */
export function orderEndpoints(endpoints: TrunkEndpoint[], rand: (max: number) => number = randomInt): TrunkEndpoint[] {
  const byPriority = new Map<number, TrunkEndpoint[]>();
  for (const e of endpoints) byPriority.set(e.priority, [...(byPriority.get(e.priority) ?? []), e]);
  const out: TrunkEndpoint[] = [];
  for (const p of [...byPriority.keys()].sort((a, b) => a - b)) {
    const pool = [...(byPriority.get(p) ?? [])];
    while (pool.length) {
      const total = pool.reduce((s, e) => s + Math.max(e.weight, 0), 0);
      let idx = 0;
      if (total > 0) {
        let r = rand(total);
        idx = pool.findIndex((e) => (r -= Math.max(e.weight, 0)) < 0);
      }
      out.push(...pool.splice(Math.max(idx, 0), 1));
    }
  }
  return out;
}
