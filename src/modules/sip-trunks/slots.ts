import type { Logger } from 'pino';
import type { Counters } from '../../platform/counters.js';

export interface RouteLimits {
  capacity: number | null;
  maxCps: number | null;
}

/**
 * The concurrency slots and calls-per-second counters of trunk and API calls. It remembers every
 * slot this daemon holds, planned calls included: what `Counters.reconcile` rewrites its share to.
 */
export function createSlots(deps: { counters: Counters; log: Logger }) {
  const { counters, log } = deps;
  const held = new Map<string, number>();
  const untrack = (key: string) => {
    const n = (held.get(key) ?? 0) - 1;
    if (n > 0) held.set(key, n);
    else held.delete(key);
  };

  async function release(slots: string[]) {
    for (const s of slots) {
      untrack(s);
      await counters.release(s).catch((err) => log.warn({ err, slot: s }, 'counter release failed'));
    }
  }

  /** Takes every concurrency slot or none; the key names what refused. */
  async function acquireAll(
    wanted: { key: string; limit: number }[],
  ): Promise<{ ok: true; slots: string[] } | { ok: false; key: string }> {
    const slots: string[] = [];
    for (const w of wanted) {
      if (!(await counters.acquire(w.key, w.limit))) {
        await release(slots);
        return { ok: false, key: w.key };
      }
      held.set(w.key, (held.get(w.key) ?? 0) + 1);
      slots.push(w.key);
    }
    return { ok: true, slots };
  }

  /**
   * Routes at capacity are skipped, as a supplier would refuse them anyway; so is a route over its
   * calls per second this second (the next may take the call). Route slots go into `slots` as they
   * are taken, so a caller can give them back even when a counter fails halfway.
   */
  async function takeRoutes<T extends { routeId: string }>(
    candidates: readonly T[],
    terms: ReadonlyMap<string, RouteLimits>,
    slots: string[],
  ) {
    const usable: T[] = [];
    let full = 0;
    let overCps = 0;
    for (const c of candidates) {
      const t = terms.get(c.routeId);
      if (t?.maxCps && !(await counters.rate(`cps:${c.routeId}`, t.maxCps))) {
        overCps++;
        continue;
      }
      if (t?.capacity) {
        const got = await acquireAll([{ key: `route:${c.routeId}`, limit: t.capacity }]);
        if (!got.ok) {
          full++;
          continue;
        }
        slots.push(...got.slots);
      }
      usable.push(c);
    }
    return { usable, full, overCps };
  }

  return {
    acquireAll,
    /** Counts one call of `key` in this second; false when `perSecond` were already let through. */
    rate: (key: string, perSecond: number): Promise<boolean> => counters.rate(key, perSecond),
    takeRoutes,
    release,
    /** Counter shares this daemon really holds, for `Counters.reconcile`. */
    held: (): Map<string, number> => new Map(held),
  };
}

export type Slots = ReturnType<typeof createSlots>;
