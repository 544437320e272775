import { parsePhoneNumberFromString } from 'libphonenumber-js';
import type { Db } from '../../db/connection.js';
import { Money, money6 } from '../../ledger/money.js';
import { countryName } from '../../platform/country-names.js';

/** Country of an E.164 number (digits, no plus), cached by its first 7 digits: a country never splits finer. */
export function countryOf(cache: Map<string, string | null>, digits: string | null): string | null {
  if (!digits) return null;
  const key = digits.slice(0, 7);
  if (cache.has(key)) return cache.get(key)!;
  const pn = parsePhoneNumberFromString(`+${digits}`);
  // A number outside the allocated ranges still has a calling code: its main country stands in.
  const c = pn?.country ?? pn?.getPossibleCountries()[0] ?? null;
  cache.set(key, c);
  return c;
}

const round = (n: number, places: number) => Number(n.toFixed(places));

/** Reports over the call and message records (spec "Billing and account", other billing operations). */
export function createCdrReports(db: Db) {
  return {
    /** The seller's credits per route over `days` (top 50), records without a route in an Unattributed row. */
    async earningsByRoute(sellerId: string, now: Date, days: number) {
      const rows = await db<
        { routeId: string | null; destinationName: string | null; credits: string; count: string }[]
      >`
        select c.route_id, r.name as destination_name, sum(c.seller_credit)::text as credits, count(*)::text as count
        from cdrs c left join routes r on r.id = c.route_id
        where c.seller_id = ${sellerId} and not c.is_probe and not c.simulated and c.seller_credit is not null
          and c.created_at >= ${now}::timestamptz - make_interval(days => ${days})
        group by c.route_id, r.name
        order by sum(c.seller_credit) desc
        limit 51`;
      const items = rows
        .filter((r) => r.routeId !== null)
        .slice(0, 50)
        .map((r) => ({
          routeId: r.routeId,
          destinationName: r.destinationName ?? 'Unknown route',
          credits: money6(r.credits),
          count: Number(r.count),
        }));
      const none = rows.find((r) => r.routeId === null);
      if (none)
        items.push({
          routeId: null,
          destinationName: 'Unattributed',
          credits: money6(none.credits),
          count: Number(none.count),
        });
      return { items, days, attribution: 'partial' as const };
    },

    /** An account's calls, messages, billed minutes and spend per UTC day over the last `days`. */
    async dailyUsage(accountId: string, now: Date, days: number) {
      const rows = await db<
        { date: string; calls: string; answered: string; sms: string; seconds: string; spend: string }[]
      >`
        with d as (
          select generate_series((${now}::timestamptz at time zone 'UTC')::date - (${days}::int - 1),
                                 (${now}::timestamptz at time zone 'UTC')::date, '1 day')::date as day),
        c as (
          select (created_at at time zone 'UTC')::date as day,
                 count(*) filter (where kind = 'voice') as calls,
                 count(*) filter (where kind = 'voice' and answered_at is not null) as answered,
                 count(*) filter (where kind = 'sms') as sms,
                 coalesce(sum(billed_seconds) filter (where kind = 'voice'), 0) as seconds,
                 coalesce(sum(buyer_cost), 0) as spend
          from cdrs
          where account_id = ${accountId} and not is_probe and not simulated
            and created_at >= ((${now}::timestamptz at time zone 'UTC')::date - (${days}::int - 1))::timestamp at time zone 'UTC'
          group by 1)
        select to_char(d.day, 'YYYY-MM-DD') as date, coalesce(c.calls, 0)::text as calls, coalesce(c.answered, 0)::text as answered,
               coalesce(c.sms, 0)::text as sms, coalesce(c.seconds, 0)::text as seconds, coalesce(c.spend, 0)::text as spend
        from d left join c on c.day = d.day order by d.day`;
      const points = rows.map((r) => ({
        date: r.date,
        calls: Number(r.calls),
        answered: Number(r.answered),
        sms: Number(r.sms),
        minutes: round(Number(r.seconds) / 60, 2),
        spend: money6(r.spend),
      }));
      const spend = points.reduce((a, p) => a.plus(p.spend), Money.zero).toString();
      const sum = (k: 'calls' | 'answered' | 'sms' | 'minutes') => points.reduce((a, p) => a + p[k], 0);
      return {
        days,
        totals: {
          calls: sum('calls'),
          answered: sum('answered'),
          sms: sum('sms'),
          minutes: round(sum('minutes'), 2),
          spend,
        },
        points,
      };
    },

    /** The buyer's traffic per destination country in [from, to). */
    async usageByCountry(accountId: string, from: Date, to: Date) {
      const rows = await db<
        {
          toNumber: string | null;
          records: string;
          voiceSessions: string;
          answered: string;
          answeredSeconds: string;
          billedSeconds: string;
          segments: string;
          cost: string;
        }[]
      >`
        select to_number,
               count(*)::text as records,
               count(distinct coalesce(call_group_id, call_uuid, id)) filter (where kind = 'voice')::text as voice_sessions,
               count(distinct coalesce(call_group_id, call_uuid, id)) filter (where kind = 'voice' and answered_at is not null)::text as answered,
               coalesce(sum(duration_seconds) filter (where kind = 'voice' and answered_at is not null), 0)::text as answered_seconds,
               coalesce(sum(billed_seconds) filter (where kind = 'voice'), 0)::text as billed_seconds,
               coalesce(sum(segments) filter (where kind = 'sms'), 0)::text as segments,
               coalesce(sum(buyer_cost), 0)::text as cost
        from cdrs
        where account_id = ${accountId} and not is_probe and not simulated and direction = 'outbound'
          and created_at >= ${from} and created_at < ${to}
        group by to_number`;
      const cache = new Map<string, string | null>();
      const by = new Map<
        string,
        {
          records: number;
          voiceSessions: number;
          answered: number;
          answeredSeconds: number;
          billedSeconds: number;
          segments: number;
          cost: Money;
        }
      >();
      for (const r of rows) {
        const cc = countryOf(cache, r.toNumber) ?? 'ZZ';
        const a = by.get(cc) ?? {
          records: 0,
          voiceSessions: 0,
          answered: 0,
          answeredSeconds: 0,
          billedSeconds: 0,
          segments: 0,
          cost: Money.zero,
        };
        a.records += Number(r.records);
        a.voiceSessions += Number(r.voiceSessions);
        a.answered += Number(r.answered);
        a.answeredSeconds += Number(r.answeredSeconds);
        a.billedSeconds += Number(r.billedSeconds);
        a.segments += Number(r.segments);
        a.cost = a.cost.plus(money6(r.cost));
        by.set(cc, a);
      }
      const items = [...by.entries()]
        .map(([cc, a]) => ({
          country: cc === 'ZZ' ? 'Unknown' : (countryName(cc) ?? cc),
          countryCode: cc === 'ZZ' ? null : cc,
          attempts: a.records,
          records: a.records,
          voiceSessions: a.voiceSessions,
          answered: a.answered,
          minutes: round(a.billedSeconds / 60, 2),
          segments: a.segments,
          asr: a.voiceSessions > 0 ? round((a.answered / a.voiceSessions) * 100, 2) : null,
          asrBasis: a.voiceSessions > 0 ? ('voice_sessions' as const) : null,
          acd: a.answered > 0 ? round(a.answeredSeconds / a.answered, 1) : null,
          cost: a.cost.toString(),
        }))
        .sort((x, y) => Money.parse(y.cost).cmp(x.cost) || y.records - x.records);
      return {
        items,
        basis: {
          population: 'outbound records of this account; route checks and test-key traffic excluded',
          window: { from: from.toISOString(), to: to.toISOString() },
        },
      };
    },
  };
}

export type CdrReports = ReturnType<typeof createCdrReports>;
