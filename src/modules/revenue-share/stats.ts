/** Traffic statistics, CDRs (list and CSV export) and the test-call log of revenue share numbers. */
import type { Sql } from '../../db/connection.js';
import { Money } from '../../ledger/money.js';
import type { Clock } from '../../platform/clock.js';
import type { CallStatusName } from './calls-repo.js';
import type { Principal } from './ranges.js';

export type GroupBy = 'day' | 'number' | 'range' | 'country' | 'origin';
export type Side = 'holder' | 'supplier';

export interface WindowQuery {
  from?: string | undefined;
  to?: string | undefined;
  as?: Side | undefined;
}

const DAY = 86_400_000;
/** Most rows a CSV export streams (spec "Limits": records CSV 50,000 rows). */
export const EXPORT_MAX = 50_000;

interface CdrRow {
  id: string;
  numberId: string;
  number: string;
  rangeId: string;
  fromNumber: string;
  origin: string | null;
  startedAt: Date;
  answeredAt: Date | null;
  endedAt: Date;
  durationSeconds: number;
  billedSeconds: number;
  payoutPerMinute: string;
  payout: string;
  charge: string;
  status: CallStatusName;
  sipCode: number;
  hangupCause: string;
  releaseAt: Date | null;
  flagId: string | null;
}

function presentCdr(c: CdrRow, side: Side) {
  return {
    id: c.id,
    numberId: c.numberId,
    number: c.number,
    rangeId: c.rangeId,
    fromNumber: c.fromNumber,
    origin: c.origin,
    startedAt: c.startedAt.toISOString(),
    answeredAt: c.answeredAt?.toISOString() ?? null,
    endedAt: c.endedAt.toISOString(),
    durationSeconds: c.durationSeconds,
    billedSeconds: c.billedSeconds,
    payoutPerMinute: Money.parse(c.payoutPerMinute).toString(),
    payout: Money.parse(c.payout).toString(),
    ...(side === 'supplier' ? { charge: Money.parse(c.charge).toString() } : {}),
    status: c.status,
    sipCode: c.sipCode,
    hangupCause: c.hangupCause,
    releaseAt: c.releaseAt?.toISOString() ?? null,
    flagId: c.flagId,
  };
}

/** Masks a caller number others see in the public test-call log: country part and the last 3 digits stay. */
const maskCaller = (n: string) => (n.length <= 6 ? '***' : `${n.slice(0, 3)}${'*'.repeat(n.length - 6)}${n.slice(-3)}`);

export function createStats(deps: { sql: Sql; clock: Clock }) {
  const { sql, clock } = deps;

  function window(q: WindowQuery) {
    const to = q.to ? new Date(q.to) : clock.now();
    const from = q.from ? new Date(q.from) : new Date(to.getTime() - 30 * DAY);
    return { from, to };
  }

  /** Whose calls: the caller's numbers, or (as=supplier) the caller's ranges; the operator's supplier view is every range. */
  function owner(p: Principal, side: Side) {
    if (side === 'holder') return sql`c.holder_id = ${p.accountId}`;
    return p.role === 'admin' ? sql`true` : sql`c.supplier_id = ${p.accountId}`;
  }

  const keyOf = (g: GroupBy) => {
    switch (g) {
      case 'day':
        return sql`to_char(c.started_at at time zone 'UTC', 'YYYY-MM-DD')`;
      case 'number':
        return sql`n.number`;
      case 'range':
        return sql`r.id::text`;
      case 'country':
        return sql`r.country_code`;
      case 'origin':
        return sql`coalesce(c.origin, '')`;
    }
  };

  async function aggregate(p: Principal, q: WindowQuery, groupBy: GroupBy | null) {
    const side = q.as ?? 'holder';
    const { from, to } = window(q);
    const key = groupBy ? keyOf(groupBy) : sql`'total'`;
    const rows = await sql<
      {
        key: string;
        label: string | null;
        calls: string;
        answered: string;
        seconds: string;
        billed: string;
        earned: string;
        flagged: string;
        charged: string;
      }[]
    >`
      select ${key} as key, min(${groupBy === 'range' ? sql`r.name` : groupBy === 'country' ? sql`r.country` : sql`null`}) as label,
             count(*)::text as calls,
             count(*) filter (where c.answered_at is not null)::text as answered,
             coalesce(sum(c.duration_seconds), 0)::text as seconds,
             coalesce(sum(c.billed_seconds), 0)::text as billed,
             coalesce(sum(c.payout) filter (where c.status in ('held', 'released')), 0)::numeric(20,6)::text as earned,
             coalesce(sum(c.payout) filter (where c.status = 'flagged'), 0)::numeric(20,6)::text as flagged,
             coalesce(sum(c.charge) filter (where c.status in ('held', 'released', 'flagged')), 0)::numeric(20,6)::text as charged
      from revshare_calls c join revshare_numbers n on n.id = c.number_id join revshare_ranges r on r.id = c.range_id
      where ${owner(p, side)} and c.status <> 'test' and c.started_at >= ${from} and c.started_at <= ${to}
      group by 1 order by 1 limit 1000`;
    return {
      window: { from: from.toISOString(), to: to.toISOString() },
      rows: rows.map((r) => {
        const calls = Number(r.calls);
        const answered = Number(r.answered);
        return {
          key: r.key,
          label: r.label,
          calls,
          answered,
          asr: calls ? Math.round((answered / calls) * 10000) / 100 : null,
          acd: answered ? Math.round((Number(r.seconds) / answered) * 10) / 10 : null,
          minutes: Math.round((Number(r.billed) / 60) * 100) / 100,
          earned: Money.parse(r.earned).toString(),
          flagged: Money.parse(r.flagged).toString(),
          ...(side === 'supplier' ? { charged: Money.parse(r.charged).toString() } : {}),
        };
      }),
    };
  }

  async function cdrRows(
    p: Principal,
    q: WindowQuery & { numberId?: string | undefined; status?: string | undefined; cursor?: string | undefined },
    limit: number,
  ) {
    const side = q.as ?? 'holder';
    const { from, to } = window(q);
    return sql<CdrRow[]>`
      select c.id, c.number_id, n.number, c.range_id, c.from_number, c.origin, c.started_at, c.answered_at, c.ended_at,
             c.duration_seconds, c.billed_seconds, c.payout_per_minute::text as payout_per_minute, c.payout::text as payout,
             c.charge::text as charge, c.status, c.sip_code, c.hangup_cause, c.release_at, c.flag_id
      from revshare_calls c join revshare_numbers n on n.id = c.number_id
      where ${owner(p, side)} and c.status <> 'test' and c.started_at >= ${from} and c.started_at <= ${to}
        ${q.numberId ? sql`and c.number_id = ${q.numberId}` : sql``}
        ${q.status ? sql`and c.status = ${q.status}` : sql``}
        ${q.cursor ? sql`and c.id < ${q.cursor}` : sql``}
      order by c.id desc limit ${limit}`;
  }

  return {
    async summary(p: Principal, q: WindowQuery) {
      const { window: w, rows } = await aggregate(p, q, null);
      const zero = {
        calls: 0,
        answered: 0,
        asr: null,
        acd: null,
        minutes: 0,
        earned: Money.zero.toString(),
        flagged: Money.zero.toString(),
      };
      const { key: _key, label: _label, ...totals } = rows[0] ?? { key: '', label: null, ...zero };
      return { window: w, ...totals };
    },

    grouped: (p: Principal, q: WindowQuery, groupBy: GroupBy) => aggregate(p, q, groupBy),

    async cdrs(
      p: Principal,
      q: WindowQuery & {
        numberId?: string | undefined;
        status?: string | undefined;
        cursor?: string | undefined;
        limit: number;
      },
    ) {
      const rows = await cdrRows(p, q, q.limit + 1);
      return rows.map((r) => presentCdr(r, q.as ?? 'holder'));
    },

    async exportRows(p: Principal, q: WindowQuery & { numberId?: string | undefined; status?: string | undefined }) {
      const rows = await cdrRows(p, q, EXPORT_MAX);
      return rows.map((r) => presentCdr(r, q.as ?? 'holder'));
    },

    /** Calls to test numbers (every range's, newest first): testers confirm their route reaches the range. */
    async testCalls(q: { number?: string | undefined; limit: number; cursor?: string | undefined }) {
      const rows = await sql<
        {
          id: string;
          number: string;
          rangeId: string;
          country: string;
          fromNumber: string;
          startedAt: Date;
          answeredAt: Date | null;
          durationSeconds: number;
          sipCode: number;
        }[]
      >`
        select c.id, n.number, c.range_id, r.country, c.from_number, c.started_at, c.answered_at, c.duration_seconds, c.sip_code
        from revshare_calls c join revshare_numbers n on n.id = c.number_id join revshare_ranges r on r.id = c.range_id
        where n.is_test and c.holder_id is null
          ${q.number ? sql`and n.number = ${q.number}` : sql``}
          ${q.cursor ? sql`and c.id < ${q.cursor}` : sql``}
        order by c.id desc limit ${q.limit + 1}`;
      return rows.map((r) => ({
        id: r.id,
        testNumber: r.number,
        rangeId: r.rangeId,
        country: r.country,
        fromNumber: maskCaller(r.fromNumber),
        startedAt: r.startedAt.toISOString(),
        answered: r.answeredAt !== null,
        durationSeconds: r.durationSeconds,
        sipCode: r.sipCode,
      }));
    },

    /** Test numbers of active ranges. */
    async testNumbers(q: { countryCode?: string | undefined }) {
      return sql<
        {
          number: string;
          rangeId: string;
          rangeName: string;
          country: string;
          countryCode: string;
          numberType: 'iprn' | 'premium' | 'shared_cost' | 'audiotext';
        }[]
      >`
        select n.number, r.id as range_id, r.name as range_name, r.country, r.country_code, r.number_type
        from revshare_numbers n join revshare_ranges r on r.id = n.range_id
        where n.is_test and n.state <> 'withdrawn' and r.status = 'active'
          ${q.countryCode ? sql`and r.country_code = ${q.countryCode.toUpperCase()}` : sql``}
        order by r.country_code, n.number limit 1000`;
    },
  };
}

export type Stats = ReturnType<typeof createStats>;
