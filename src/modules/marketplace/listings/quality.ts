import type { PendingQuery, Row } from 'postgres';
import type { Sql } from '../../../db/connection.js';
import type { Clock } from '../../../platform/clock.js';
import type { MarketActivity } from '../markets/service.js';
import type { QualitySource } from '../routing/routing.js';
import { measuredFrom } from '../routing/smart-routing.js';
import type { MeasuredQuality, WindowStats } from '../routing/smart-routing.js';

const DAY_MS = 86_400_000;
/** The "latest period" window: a route's most recent calls at any age. */
export const LATEST_CALLS = 1000;
export const QUALITY_TTL_MS = 60_000;

// Answered: a 2xx final answer (the call paths write `completed` or `answered`). Network-effective
// (NER): answered, or the far end's user was reached and said busy, did not answer or declined
// (486, 487, 600, 603); 480 and 5xx are network failures here, as in the failover rule.
const answeredSql = (sql: Sql) => sql`(status in ('answered', 'completed') or sip_code between 200 and 299)`;

type Win = WindowStats['window'] | 'all';
interface WinRow {
  routeId: string;
  win: Win;
  calls: number;
  buyers: number;
  answered: number;
  effective: number;
  seconds: string;
  pdd: number | null;
}

const statsOf = (win: WindowStats['window'], r: WinRow): WindowStats => ({
  window: win,
  calls: r.calls,
  buyers: r.buyers,
  answered: r.answered,
  networkEffective: r.effective,
  totalAnsweredSeconds: Number(r.seconds),
  medianPddMs: r.pdd === null ? 0 : Math.round(Number(r.pdd)),
});

/**
 * Measured quality of voice legs of real buyer calls (not probes, not simulated) over 7 days, else
 * 30 days, else the route's latest 1,000 calls at any age, counted only when the window holds at
 * least 50 calls from at least two buyers (smart-routing.ts `measuredFrom`). ASR = answered / calls,
 * ACD = answered seconds / answered, NER = network-effective / calls, median PDD over calls that
 * recorded one (0 when none did). Results are kept `ttlMs` per route.
 *
 * Reads the per-route, per-day summaries that triggers on `cdrs` keep (migration 049): whole UTC days
 * inside a window come from them, and only the window's first, partly covered day from `cdrs`, so a
 * read costs about one day of a route's calls rather than its whole history. "Latest 1,000 calls"
 * cannot come from day sums: a route with at most 1,000 calls uses its all-time sums; only a route
 * with more, whose 7- and 30-day windows both fall short, is read from `cdrs` (its last 1,000 legs).
 */
export function createCdrQualitySource(deps: { sql: Sql; clock: Clock; ttlMs?: number }): {
  quality: QualitySource;
  activity: MarketActivity;
} {
  const { sql, clock } = deps;
  const ttl = deps.ttlMs ?? QUALITY_TTL_MS;
  const cache = new Map<string, { at: number; value: MeasuredQuality | null }>();

  /** 7d, 30d and all-time figures from the day summaries plus each window's partial first day. */
  const fromSummaries = (ids: readonly string[], now: Date, wins: readonly Win[]) => {
    const idList = sql.array(ids as string[]);
    // Bounds as constants per window (not joined from a values list), so each part is an index range scan.
    const bounds = wins.map((win) => {
      if (win === 'all') return { win, since: null, firstDay: null, wholeFrom: null };
      const since = new Date(now.getTime() - (win === '7d' ? 7 : 30) * DAY_MS);
      const wholeFrom = new Date(Date.UTC(since.getUTCFullYear(), since.getUTCMonth(), since.getUTCDate() + 1));
      return { win, since, firstDay: since.toISOString().slice(0, 10), wholeFrom };
    });
    const unionAll = (parts: PendingQuery<Row[]>[]) => parts.reduce((acc, part) => sql`${acc} union all ${part}`);
    const partials = bounds.flatMap((b) =>
      b.since === null
        ? []
        : [
            sql`
      select ${b.win}::text as win, c.route_id, c.account_id, c.pdd_ms, c.duration_seconds,
        ${answeredSql(sql)} as answered,
        (${answeredSql(sql)} or status in ('busy', 'no_answer', 'declined') or sip_code in (486, 487, 600, 603)) as effective
      from cdrs c
      where c.route_id = any(${idList}::uuid[]) and c.kind = 'voice' and not c.is_probe and not c.simulated
        and c.created_at > ${b.since} and c.created_at < ${b.wholeFrom} and c.created_at <= ${now}`,
          ],
    );
    const part =
      partials.length > 0
        ? unionAll(partials)
        : sql`
      select null::text as win, null::uuid as route_id, null::uuid as account_id, null::int as pdd_ms, null::int as duration_seconds,
        false as answered, false as effective where false`;
    const days = (b: (typeof bounds)[number], alias: PendingQuery<Row[]>) =>
      b.firstDay === null ? sql`` : sql`and ${alias}.day > ${b.firstDay}::date`;
    const wholeDays = unionAll(
      bounds.map(
        (b) => sql`
      select ${b.win}::text as win, q.route_id, q.account_id, sum(q.calls) as calls, sum(q.answered) as answered,
        sum(q.effective) as effective, sum(q.answered_seconds) as answered_seconds
      from route_quality_daily q where q.route_id = any(${idList}::uuid[]) ${days(b, sql`q`)}
      -- A buyer counts when its calls over the window's days (summed over slots, migration 319) are some.
      group by q.route_id, q.account_id having sum(q.calls) > 0`,
      ),
    );
    const wholePdds = unionAll(
      bounds.map(
        (b) => sql`
      select ${b.win}::text as win, p.route_id, p.pdd_ms, p.calls as n
      from route_pdd_daily p where p.route_id = any(${idList}::uuid[]) ${days(b, sql`p`)}`,
      ),
    );
    return sql<WinRow[]>`
    with part as (${part}),
    per_buyer as (
      ${wholeDays}
      union all
      select win, route_id, account_id, 1, case when answered then 1 else 0 end, case when effective then 1 else 0 end,
        case when answered then coalesce(duration_seconds, 0) else 0 end
      from part
    ),
    pdds as (
      select win, route_id, pdd_ms, sum(n) as n from (
        ${wholePdds}
        union all
        select win, route_id, pdd_ms, 1 from part where pdd_ms is not null
      ) x group by win, route_id, pdd_ms
    ),
    ranked as (
      select win, route_id, pdd_ms, sum(n) over (partition by win, route_id order by pdd_ms) as cum,
        sum(n) over (partition by win, route_id) as total
      from pdds
    ),
    -- percentile_cont(0.5) over the expanded values: the mean of the values at 0-based positions
    -- floor((n-1)/2) and ceil((n-1)/2); the value at position k is the first whose running count exceeds k.
    medians as (
      select win, route_id,
        (min(pdd_ms) filter (where cum > floor((total - 1) / 2.0)) + min(pdd_ms) filter (where cum > ceil((total - 1) / 2.0))) / 2.0 as pdd
      from ranked group by win, route_id
    )
    select s.route_id, s.win, s.calls, s.buyers, s.answered, s.effective, s.seconds, m.pdd
    from (
      select win, route_id, sum(calls)::int as calls, count(distinct account_id)::int as buyers, sum(answered)::int as answered,
        sum(effective)::int as effective, sum(answered_seconds)::text as seconds
      from per_buyer group by win, route_id
    ) s left join medians m using (win, route_id)
    where s.calls > 0`;
  };

  /** The latest-1,000-calls window straight from `cdrs`, for the routes that need it. */
  const latestFromCdrs = (ids: readonly string[], now: Date) => sql<WinRow[]>`
    with c as (
      select route_id, account_id, duration_seconds, pdd_ms,
        ${answeredSql(sql)} as answered,
        (${answeredSql(sql)} or status in ('busy', 'no_answer', 'declined') or sip_code in (486, 487, 600, 603)) as effective,
        row_number() over (partition by route_id order by created_at desc) as rn
      from cdrs
      where route_id = any(${sql.array(ids as string[])}::uuid[]) and kind = 'voice' and not is_probe and not simulated
        and created_at <= ${now}
    )
    select route_id, 'latest' as win, count(*)::int as calls, count(distinct account_id)::int as buyers,
      count(*) filter (where answered)::int as answered, count(*) filter (where effective)::int as effective,
      coalesce(sum(duration_seconds) filter (where answered), 0)::text as seconds,
      percentile_cont(0.5) within group (order by pdd_ms) as pdd
    from c where rn <= ${LATEST_CALLS}
    group by route_id`;

  const measure = async (ids: readonly string[], now: Date): Promise<Map<string, MeasuredQuality | null>> => {
    const byRoute = new Map<string, Partial<Record<Win, WinRow>>>();
    const collect = (rows: readonly WinRow[]): void => {
      for (const r of rows) {
        let m = byRoute.get(r.routeId);
        if (m === undefined) byRoute.set(r.routeId, (m = {}));
        m[r.win] = r;
      }
    };
    collect(await fromSummaries(ids, now, ['7d', '30d']));
    const out = new Map<string, MeasuredQuality | null>();
    const older: string[] = [];
    for (const id of ids) {
      const m = byRoute.get(id) ?? {};
      const recent = measuredFrom(
        [m['7d'], m['30d']].flatMap((r, i) => (r === undefined ? [] : [statsOf(i === 0 ? '7d' : '30d', r)])),
      );
      if (recent !== null) out.set(id, recent);
      else older.push(id);
    }
    // Whole history only for routes the last 30 days do not qualify.
    if (older.length > 0) collect(await fromSummaries(older, now, ['all']));
    const needLatest: string[] = [];
    for (const id of older) {
      const all = byRoute.get(id)?.all;
      if (all === undefined) out.set(id, null);
      else if (all.calls <= LATEST_CALLS) out.set(id, measuredFrom([statsOf('latest', all)]));
      // More than 1,000 calls: the latest 1,000 can only qualify if all of them do.
      else if (measuredFrom([statsOf('latest', all)]) === null) out.set(id, null);
      else needLatest.push(id);
    }
    if (needLatest.length > 0) {
      const latest = new Map((await latestFromCdrs(needLatest, now)).map((r) => [r.routeId, r]));
      for (const id of needLatest) {
        const r = latest.get(id);
        out.set(id, r === undefined ? null : measuredFrom([statsOf('latest', r)]));
      }
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
    if (lastActivity !== null && now - lastActivity.at < ttl && Math.abs(lastActivity.since - since.getTime()) < ttl)
      return lastActivity.value;
    // Whole days from the day summaries, the partly covered first day from cdrs (as fromSummaries).
    const [row] = await sql<{ calls: number; answered: number }[]>`
      with b as (select (${since}::timestamptz at time zone 'UTC')::date as first_day)
      select coalesce(sum(calls), 0)::int as calls, coalesce(sum(answered), 0)::int as answered from (
        select q.calls, q.answered
        from route_quality_daily q join routes r on r.id = q.route_id cross join b
        where q.day > b.first_day and r.visibility = 'public' and r.status = 'active'
        union all
        select 1, case when c.status in ('answered', 'completed') or c.sip_code between 200 and 299 then 1 else 0 end
        from cdrs c join routes r on r.id = c.route_id cross join b
        where c.kind = 'voice' and not c.is_probe and not c.simulated and c.created_at > ${since}
          and c.created_at < (b.first_day + 1)::timestamp at time zone 'UTC'
          and r.visibility = 'public' and r.status = 'active'
      ) x`;
    const value = row ?? { calls: 0, answered: 0 };
    lastActivity = { at: now, since: since.getTime(), value };
    return value;
  };

  return { quality, activity };
}

/** What a route report keeps of one of the reporter's records (the number cut to its destination prefix). */
export interface CdrEvidence {
  cdrId: string;
  kind: 'voice' | 'sms';
  status: string | null;
  sipCode: number | null;
  hangupCause: string | null;
  toPrefix: string | null;
  cli: string | null;
  durationSeconds: number | null;
  billedSeconds: number | null;
  pddMs: number | null;
  answeredAt: string | null;
  at: string;
}

/**
 * The reporter's own records on a route among `cdrIds` (placed by it, or by one of its
 * sub-accounts), as evidence for a route report: read here, beside the quality figures, as the
 * marketplace's one reader of `cdrs`.
 */
export async function cdrEvidence(
  sql: Sql,
  accountId: string,
  routeId: string,
  cdrIds: readonly string[],
): Promise<CdrEvidence[]> {
  if (cdrIds.length === 0) return [];
  const rows = await sql<
    {
      id: string;
      kind: 'voice' | 'sms';
      status: string | null;
      sipCode: number | null;
      hangupCause: string | null;
      toNumber: string | null;
      cli: string | null;
      durationSeconds: number | null;
      billedSeconds: number | null;
      pddMs: number | null;
      answeredAt: Date | null;
      createdAt: Date;
    }[]
  >`
    select id, kind, status, sip_code, hangup_cause, to_number, cli, duration_seconds, billed_seconds, pdd_ms,
      answered_at, created_at
    from cdrs
    where id = any(${sql.array(cdrIds as string[])}::uuid[]) and route_id = ${routeId}
      and (account_id = ${accountId} or operator_id = ${accountId}) and not is_probe`;
  return rows.map((r) => ({
    cdrId: r.id,
    kind: r.kind,
    status: r.status,
    sipCode: r.sipCode,
    hangupCause: r.hangupCause,
    toPrefix: r.toNumber === null ? null : r.toNumber.replace(/^\+/, '').slice(0, 6),
    // What the callee was shown is the point of a CLI report; it is the reporter's own presented number.
    cli: r.cli,
    durationSeconds: r.durationSeconds,
    billedSeconds: r.billedSeconds,
    pddMs: r.pddMs,
    answeredAt: r.answeredAt === null ? null : r.answeredAt.toISOString(),
    at: r.createdAt.toISOString(),
  }));
}

/** A seller's traffic per own route since `since`: what buyers bought of it (never who). */
/** A seller's traffic and credit over a set of cdrs rows: calls, answered, billed seconds, messages, revenue. */
export const salesColumns = (sql: Sql) => sql`
  count(*) filter (where kind = 'voice')::int as calls,
  count(*) filter (where kind = 'voice' and billed_seconds > 0)::int as answered,
  coalesce(sum(billed_seconds) filter (where kind = 'voice'), 0)::text as billed_seconds,
  coalesce(sum(segments) filter (where kind = 'sms'), 0)::int as messages,
  coalesce(sum(seller_credit), 0)::numeric(20,6)::text as revenue`;

export async function sellerSales(sql: Sql, sellerId: string, since: Date) {
  return sql<
    { routeId: string; calls: number; answered: number; billedSeconds: string; messages: number; revenue: string }[]
  >`
    select route_id, ${salesColumns(sql)}
    from cdrs
    where seller_id = ${sellerId} and created_at >= ${since} and not is_probe and not simulated and route_id is not null
    group by route_id`;
}
