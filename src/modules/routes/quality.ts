import type { Sql } from '../../db/connection.js';
import type { Clock } from '../../platform/clock.js';
import type { MarketActivity } from '../markets/service.js';
import type { QualitySource } from './routing.js';
import { measuredFrom } from './smart-routing.js';
import type { MeasuredQuality, WindowStats } from './smart-routing.js';

const DAY_MS = 86_400_000;
/** The "latest period" window: a route's most recent calls at any age. */
export const LATEST_CALLS = 1000;
export const QUALITY_TTL_MS = 60_000;

// Answered: a 2xx final answer (the call paths write `completed` or `answered`). Network-effective
// (NER): answered, or the far end's user was reached and said busy, did not answer or declined
// (486, 487, 600, 603); 480 and 5xx are network failures here, as in the failover rule.
const answeredSql = (sql: Sql) => sql`(status in ('answered', 'completed') or sip_code between 200 and 299)`;

/**
 * Measured quality from the `cdrs` table (voice legs of real buyer calls: not probes, not simulated)
 * over 7 days, else 30 days, else the route's latest 1,000 calls at any age, counted only when the
 * window holds at least 50 calls from at least two buyers (smart-routing.ts `measuredFrom`). ASR =
 * answered / calls, ACD = answered seconds / answered, NER = network-effective / calls, median PDD
 * over calls that recorded one (0 when none did). Results are kept `ttlMs` per route.
 */
export function createCdrQualitySource(deps: { sql: Sql; clock: Clock; ttlMs?: number }): { quality: QualitySource; activity: MarketActivity } {
  const { sql, clock } = deps;
  const ttl = deps.ttlMs ?? QUALITY_TTL_MS;
  const cache = new Map<string, { at: number; value: MeasuredQuality | null }>();

  const measure = async (ids: readonly string[], now: Date): Promise<Map<string, MeasuredQuality | null>> => {
    const rows = await sql<{ routeId: string; win: WindowStats['window']; calls: number; buyers: number; answered: number; effective: number; seconds: string; pdd: number | null }[]>`
      with c as (
        select route_id, account_id, created_at, duration_seconds, pdd_ms,
          ${answeredSql(sql)} as answered,
          (${answeredSql(sql)} or status in ('busy', 'no_answer', 'declined') or sip_code in (486, 487, 600, 603)) as effective,
          row_number() over (partition by route_id order by created_at desc) as rn
        from cdrs
        where route_id = any(${sql.array(ids as string[])}::uuid[]) and kind = 'voice' and not is_probe and not simulated
          and created_at <= ${now}
      )
      select c.route_id, w.win, count(*)::int as calls, count(distinct c.account_id)::int as buyers,
        count(*) filter (where c.answered)::int as answered, count(*) filter (where c.effective)::int as effective,
        coalesce(sum(c.duration_seconds) filter (where c.answered), 0)::text as seconds,
        percentile_cont(0.5) within group (order by c.pdd_ms) as pdd
      from c cross join lateral (values
        ('7d', c.created_at > ${new Date(now.getTime() - 7 * DAY_MS)}),
        ('30d', c.created_at > ${new Date(now.getTime() - 30 * DAY_MS)}),
        ('latest', c.rn <= ${LATEST_CALLS})) as w(win, inside)
      where w.inside
      group by c.route_id, w.win`;
    const out = new Map<string, MeasuredQuality | null>();
    for (const id of ids) {
      const mine = rows.filter((r) => r.routeId === id);
      const order: WindowStats['window'][] = ['7d', '30d', 'latest'];
      const windows = order.flatMap((win) => {
        const r = mine.find((x) => x.win === win);
        return r === undefined ? [] : [{
          window: win, calls: r.calls, buyers: r.buyers, answered: r.answered, networkEffective: r.effective,
          totalAnsweredSeconds: Number(r.seconds), medianPddMs: r.pdd === null ? 0 : Math.round(Number(r.pdd)),
        }];
      });
      out.set(id, measuredFrom(windows));
    }
    return out;
  };

  const quality: QualitySource = async (routeIds) => {
    const now = clock.now();
    const result = new Map<string, MeasuredQuality | null>();
    const missing: string[] = [];
    for (const id of new Set(routeIds)) {
      const hit = cache.get(id);
      if (hit !== undefined && now.getTime() - hit.at < ttl) result.set(id, hit.value);
      else missing.push(id);
    }
    if (missing.length > 0) {
      const fresh = await measure(missing, now);
      for (const [id, value] of fresh) {
        cache.set(id, { at: now.getTime(), value });
        result.set(id, value);
      }
    }
    return result;
  };

  // The public summary reads this on every request: kept for the same time as route figures.
  let lastActivity: { at: number; since: number; value: { calls: number; answered: number } } | null = null;
  const activity: MarketActivity = async (since) => {
    const now = clock.now().getTime();
    if (lastActivity !== null && now - lastActivity.at < ttl && Math.abs(lastActivity.since - since.getTime()) < ttl) return lastActivity.value;
    const [row] = await sql<{ calls: number; answered: number }[]>`
      select count(*)::int as calls, count(*) filter (where c.status in ('answered', 'completed') or c.sip_code between 200 and 299)::int as answered
      from cdrs c join routes r on r.id = c.route_id
      where c.kind = 'voice' and not c.is_probe and not c.simulated and c.created_at > ${since}
        and r.visibility = 'public' and r.status = 'active'`;
    const value = row ?? { calls: 0, answered: 0 };
    lastActivity = { at: now, since: since.getTime(), value };
    return value;
  };

  return { quality, activity };
}
