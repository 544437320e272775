import type { Sql } from '../../../db/connection.js';
import { notFound, ruleError } from '../../../http/errors.js';
import type { Clock } from '../../../platform/clock.js';
import type { Counters } from '../../../platform/counters.js';
import * as repo from './repo.js';

const pct = (used: number, of: number | null): number | null =>
  of === null ? null : Math.round((used / of) * 10_000) / 100;

/**
 * A seller's live view of a voice listing against its stated capacity and CPS: the calls in
 * progress and the calls set up in the current second. Both are the counters the SIP plane
 * admits trunk and API calls with (docs/scale-out.md), so with Redis the figures are every
 * daemon's, as the limits are; a listing without a stated capacity (or CPS) is not counted
 * there, and reads null.
 */
export function createLiveCapacity(deps: { sql: Sql; clock: Clock; counters: Counters }) {
  const { sql, clock, counters } = deps;
  return {
    async read(sellerId: string, routeId: string) {
      const r = await repo.findOwnRoute(sql, routeId, sellerId);
      if (r === undefined || r.status === 'deleted') throw notFound('Route');
      if (r.type !== 'voice') throw ruleError('Only voice listings have call capacity and CPS');
      if (r.blend) throw ruleError('A blend carries its members’ capacity: read each member');
      const [concurrent, thisSecond] = await Promise.all([
        r.capacity === null ? null : counters.current(`route:${routeId}`),
        r.maxCps === null ? null : counters.rateNow(`cps:${routeId}`),
      ]);
      // Calls refused over the CPS limit are counted in the window too; what went through is at most the limit.
      const cps = thisSecond === null || r.maxCps === null ? null : Math.min(thisSecond, r.maxCps);
      return {
        routeId,
        capacity: r.capacity,
        maxCps: r.maxCps,
        concurrentCalls: concurrent,
        capacityUsedPercent: concurrent === null ? null : pct(concurrent, r.capacity),
        callsThisSecond: cps,
        cpsUsedPercent: cps === null ? null : pct(cps, r.maxCps),
        at: clock.now().toISOString(),
      };
    },
  };
}

export type LiveCapacity = ReturnType<typeof createLiveCapacity>;
