import type { PendingQuery, Row } from 'postgres';
import type { Sql } from '../../../db/connection.js';
import type { RecordFilter } from './filters.js';

type Fragment = PendingQuery<Row[]>;

/** One record as `GET /switch/cdrs` lists it, money as 6-place text. */
export interface RecordRow {
  id: string;
  callGroupId: string | null;
  kind: 'voice' | 'sms';
  direction: 'outbound' | 'inbound';
  source: string;
  status: string | null;
  subAccountId: string;
  customerLabel: string | null;
  vendorTrunkId: string | null;
  vendorTrunkName: string | null;
  supplierId: string | null;
  fromNumber: string | null;
  toNumber: string | null;
  cli: string | null;
  sipCode: number | null;
  hangupCause: string | null;
  durationSeconds: number | null;
  billedSeconds: number | null;
  segments: number | null;
  pddMs: number | null;
  mediaMode: 'direct' | 'proxy' | null;
  ratePerUnit: string | null;
  revenue: string;
  cost: string;
  margin: string;
  billed: boolean;
  isProbe: boolean;
  simulated: boolean;
  answeredAt: Date | null;
  endedAt: Date | null;
  createdAt: Date;
  /** created_at to the microsecond, as text: where an export's next batch starts. */
  cursorAt: string;
}

/** Sums of a set of records (totals, one day, one breakdown item). */
export interface Sums {
  revenue: string;
  cost: string;
  margin: string;
  calls: number;
  answered: number;
  messages: number;
  billedSeconds: number;
  billedRecords: number;
  unratedBilled: number;
  unratedRevenue: string;
  unratedSeconds: number;
}

export interface UsageSums {
  calls: number;
  answered: number;
  messages: number;
  billedSeconds: number;
  revenue: string;
  cost: string;
}

/** Hang-up causes of the trunk B2BUA and API calls that name who ended the call. */
const CALLER_ENDED = ['caller-bye', 'caller-cancel'];
const CALLEE_ENDED = ['callee-bye'];

const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * SQL of the Switch account's customer records (rows of `cdrs` whose `operator_id` is the Switch
 * account), and of what each earned it.
 *
 * Revenue of a record is `buyer_cost`: what the sub-account was charged, base price plus its
 * markup. Margin is the markup, read from the ledger: the operator's `seller_payable` `credit`
 * entries posted under the record's call (`call_id` = the CDR's `call_group_id`, voice) or
 * message (`related_entity_id` = the message, matched to its CDR by sub-account, route, number and
 * send time, SMS), less the route seller's credit when the operator itself sold the route. Cost
 * is revenue − margin: the base charge (the seller's rate plus the platform fee). A call's markup
 * is posted once; it is counted on the call's dearest leg (the one that was billed).
 */
export function createRecordsRepo(sql: Sql) {
  const billed = sql`(coalesce(x.billed_seconds, 0) > 0 or coalesce(x.buyer_cost, 0) > 0
    or (x.kind = 'sms' and coalesce(x.status, '') not in ('failed', 'queued')))`;

  function anyOf(parts: Fragment[], joiner: 'or' | 'and'): Fragment {
    return parts.reduce((acc, p) => (joiner === 'or' ? sql`${acc} or ${p}` : sql`${acc} and ${p}`));
  }

  function searchPart(field: RecordFilter['searchField'], v: string): Fragment {
    const like = `%${likeEscape(v)}%`;
    const uuid = /^[0-9a-f-]{36}$/i.test(v) ? v.toLowerCase() : null;
    const callId = uuid ? sql`(x.call_group_id = ${uuid}::uuid or x.id = ${uuid}::uuid)` : sql`false`;
    switch (field) {
      case 'from':
        return sql`x.from_number like ${like}`;
      case 'to':
        return sql`x.to_number like ${like}`;
      case 'cli':
        return sql`x.cli like ${like}`;
      case 'callId':
        return callId;
      default:
        return sql`(x.from_number like ${like} or x.to_number like ${like} or x.cli like ${like} or ${callId})`;
    }
  }

  /** The filters on `cdrs x` (negativeMarginOnly is applied on the margins, after). */
  function where(op: string, f: RecordFilter): Fragment {
    const trunk = f.vendorTrunkId;
    return sql`x.operator_id = ${op} and x.created_at >= ${f.from} and x.created_at < ${f.to}
      ${f.includeProbes ? sql`` : sql`and not x.is_probe`}
      ${f.noData.length ? sql`and false` : sql``}
      ${f.kind ? sql`and x.kind = ${f.kind}` : sql``}
      ${f.direction ? sql`and x.direction = ${f.direction}` : sql``}
      ${f.status ? sql`and x.status = ${f.status}` : sql``}
      ${f.subAccountId ? sql`and x.account_id = ${f.subAccountId}` : sql``}
      ${
        trunk === undefined
          ? sql``
          : f.supplierTrunkMatch === 'selected'
            ? sql`and x.route_id = ${trunk}`
            : sql`and (x.route_id = ${trunk} or (x.call_group_id is not null and exists (
                select 1 from cdrs y where y.call_group_id = x.call_group_id and y.route_id = ${trunk})))`
      }
      ${f.numberPrefixes.reduce((acc, p) => sql`${acc} and ltrim(x.to_number, '+') like ${`${p}%`}`, sql``)}
      ${
        f.destinationName
          ? sql`and exists (select 1 from routes r where r.id = x.route_id
              and (r.name ilike ${`%${likeEscape(f.destinationName)}%`} or r.country = ${f.destinationName.toUpperCase()}))`
          : sql``
      }
      ${f.answered === undefined ? sql`` : f.answered ? sql`and x.answered_at is not null` : sql`and x.answered_at is null`}
      ${f.mediaMode ? sql`and x.media_mode = ${f.mediaMode}` : sql``}
      ${f.sipCodes ? sql`and x.sip_code = any(${f.sipCodes}::int[])` : sql``}
      ${f.hangupCause ? sql`and x.hangup_cause = ${f.hangupCause}` : sql``}
      ${f.durationMin !== undefined ? sql`and coalesce(x.duration_seconds, 0) >= ${f.durationMin}` : sql``}
      ${f.durationMax !== undefined ? sql`and coalesce(x.duration_seconds, 0) <= ${f.durationMax}` : sql``}
      ${f.pddMinMs !== undefined ? sql`and x.pdd_ms >= ${f.pddMinMs}` : sql``}
      ${f.pddMaxMs !== undefined ? sql`and x.pdd_ms <= ${f.pddMaxMs}` : sql``}
      ${
        f.releaseParty === 'caller'
          ? sql`and x.hangup_cause = any(${CALLER_ENDED})`
          : f.releaseParty === 'callee'
            ? sql`and x.hangup_cause = any(${CALLEE_ENDED})`
            : f.releaseParty === 'system'
              ? sql`and x.hangup_cause is not null and x.hangup_cause <> all(${[...CALLER_ENDED, ...CALLEE_ENDED]})`
              : sql``
      }
      ${
        f.ratingState === 'rated'
          ? sql`and x.rate_per_unit is not null`
          : f.ratingState === 'unrated'
            ? sql`and x.rate_per_unit is null and ${billed}`
            : sql``
      }
      ${
        f.search.length
          ? sql`and (${anyOf(
              f.search.map((v) => searchPart(f.searchField, v)),
              f.searchMatch === 'all' ? 'and' : 'or',
            )})`
          : sql``
      }`;
  }

  /**
   * `with … r as (…)`: the records `base` selects (columns of `cdrs`) with their `revenue`, `margin`
   * and `billed`. Ledger entries are reached through the operator's entries index, bounded by
   * entry id (a UUIDv7 of the posting time) to the records' span, an hour either side plus a day
   * after for calls posted when they end.
   */
  function withMargins(op: string, base: Fragment): Fragment {
    return sql`
      with b as (${base}),
      c as (
        select b.*,
               row_number() over (partition by coalesce(b.call_group_id, b.id) order by b.buyer_cost desc nulls last, b.id) as leg_rank,
               coalesce(sum(b.seller_credit) filter (where b.seller_id = ${op}) over (partition by coalesce(b.call_group_id, b.id)), 0) as own_seller
        from b),
      span as (
        select (lpad(to_hex((extract(epoch from min(created_at) - interval '1 hour') * 1000)::bigint), 12, '0') || '00000000000000000000')::uuid as lo,
               (lpad(to_hex((extract(epoch from max(created_at) + interval '25 hours') * 1000)::bigint), 12, '0') || '00000000000000000000')::uuid as hi
        from c having count(*) > 0),
      vm as (
        select e.call_id, sum(e.amount) as amount
        from entries e, span
        where e.owner_id = ${op} and e.id >= span.lo and e.id < span.hi
          and e.account_kind = 'seller_payable' and e.type = 'credit' and e.call_id is not null
          and e.call_id in (select c.call_group_id::text from c where c.kind = 'voice' and c.call_group_id is not null)
        group by e.call_id),
      sm as (
        select m.account_id, m.route_id, m.to_number, m.sent_at, sum(e.amount) as amount
        from entries e cross join span
        join messages m on m.id = e.related_entity_id::uuid
        where e.owner_id = ${op} and e.id >= span.lo and e.id < span.hi
          and e.account_kind = 'seller_payable' and e.type = 'credit'
          and e.related_entity_type in ('api_sms', 'smpp_sms')
          and exists (select 1 from c where c.kind = 'sms')
        group by 1, 2, 3, 4),
      r as (
        select c.*, coalesce(c.buyer_cost, 0) as revenue,
               (case when c.kind = 'voice'
                     then case when c.leg_rank = 1 then coalesce(vm.amount, 0) - c.own_seller else 0 end
                     else coalesce(sm.amount, 0) - case when c.seller_id = ${op} then coalesce(c.seller_credit, 0) else 0 end
                end)::numeric(20, 6) as margin,
               ${sql`(coalesce(c.billed_seconds, 0) > 0 or coalesce(c.buyer_cost, 0) > 0
                      or (c.kind = 'sms' and coalesce(c.status, '') not in ('failed', 'queued')))`} as billed
        from c
        left join vm on c.kind = 'voice' and vm.call_id = c.call_group_id::text
        left join sm on c.kind = 'sms' and sm.account_id = c.account_id and sm.route_id = c.route_id
                    and sm.to_number = c.to_number and sm.sent_at = c.created_at)`;
  }

  const sums = sql`
    coalesce(sum(r.revenue), 0)::numeric(20, 6)::text as revenue,
    coalesce(sum(r.revenue - r.margin), 0)::numeric(20, 6)::text as cost,
    coalesce(sum(r.margin), 0)::numeric(20, 6)::text as margin,
    count(distinct coalesce(r.call_group_id, r.id)) filter (where r.kind = 'voice')::int as calls,
    count(distinct coalesce(r.call_group_id, r.id)) filter (where r.kind = 'voice' and r.answered_at is not null)::int as answered,
    count(*) filter (where r.kind = 'sms')::int as messages,
    coalesce(sum(r.billed_seconds) filter (where r.kind = 'voice'), 0)::bigint::float8 as billed_seconds,
    count(*) filter (where r.billed)::int as billed_records,
    count(*) filter (where r.billed and r.rate_per_unit is null)::int as unrated_billed,
    coalesce(sum(r.revenue) filter (where r.billed and r.rate_per_unit is null), 0)::numeric(20, 6)::text as unrated_revenue,
    coalesce(sum(coalesce(r.billed_seconds, r.duration_seconds, 0)) filter (where r.billed and r.rate_per_unit is null and r.kind = 'voice'), 0)::bigint::float8 as unrated_seconds`;

  /** Analytics records: the operator's customers' live traffic in [from, to) (no probes, no test-key traffic). */
  const analyticsBase = (op: string, from: Date, to: Date) =>
    sql`select x.* from cdrs x where x.operator_id = ${op} and x.created_at >= ${from} and x.created_at < ${to}
        and not x.is_probe and not x.simulated`;

  const sortColumn = (f: RecordFilter, t: Fragment): Fragment => {
    switch (f.sortBy) {
      case 'durationSeconds':
        return sql`coalesce(${t}.duration_seconds, 0)`;
      case 'pddMs':
        return sql`coalesce(${t}.pdd_ms, -1)`;
      case 'revenue':
        return sql`coalesce(${t}.buyer_cost, 0)`;
      case 'sipCode':
        return sql`coalesce(${t}.sip_code, 0)`;
      default:
        return sql`${t}.created_at`;
    }
  };

  const rowColumns = sql`
    r.id, r.call_group_id, r.kind, r.direction, r.source, r.status, r.account_id as sub_account_id, a.label as customer_label,
    r.route_id as vendor_trunk_id, rt.name as vendor_trunk_name, r.seller_id as supplier_id, r.from_number, r.to_number, r.cli,
    r.sip_code, r.hangup_cause, r.duration_seconds, r.billed_seconds, r.segments, r.pdd_ms, r.media_mode,
    r.rate_per_unit::numeric(20, 6)::text as rate_per_unit, r.revenue::numeric(20, 6)::text as revenue,
    (r.revenue - r.margin)::numeric(20, 6)::text as cost, r.margin::text as margin, r.billed, r.is_probe, r.simulated,
    r.answered_at, r.ended_at, r.created_at, r.created_at::text as cursor_at`;

  return {
    where,

    /** A page of records and how many match. */
    async list(
      op: string,
      f: RecordFilter,
      limit: number,
      offset: number,
    ): Promise<{ rows: RecordRow[]; total: number }> {
      const dir = f.sortDir === 'asc' ? sql`asc` : sql`desc`;
      const orderOn = (t: Fragment) => sql`order by ${sortColumn(f, t)} ${dir}, ${t}.id ${dir}`;
      const joins = sql`left join accounts a on a.id = r.account_id left join routes rt on rt.id = r.route_id`;
      if (f.negativeMarginOnly) {
        // Margin is known only once the ledger is read: every matching record is priced, then paged.
        const priced = withMargins(op, sql`select x.* from cdrs x where ${where(op, f)}`);
        const [rows, [count]] = await Promise.all([
          sql<RecordRow[]>`${priced} select ${rowColumns} from r ${joins} where r.margin < 0
            ${orderOn(sql`r`)} limit ${limit} offset ${offset}`,
          sql<{ n: number }[]>`${priced} select count(*)::int as n from r where r.margin < 0`,
        ]);
        return { rows, total: count!.n };
      }
      const [rows, [count]] = await Promise.all([
        sql<RecordRow[]>`
          ${withMargins(op, sql`select x.* from cdrs x where ${where(op, f)} ${orderOn(sql`x`)} limit ${limit} offset ${offset}`)}
          select ${rowColumns} from r ${joins} ${orderOn(sql`r`)}`,
        sql<{ n: number }[]>`select count(*)::int as n from cdrs x where ${where(op, f)}`,
      ]);
      return { rows, total: count!.n };
    },

    /** Every matching record in order, `batch` at a time (an export); keyset on (created_at, id). */
    async *each(op: string, f: RecordFilter, batch: number): AsyncGenerator<RecordRow> {
      let after: { at: string; id: string } | null = null;
      for (;;) {
        const page: RecordRow[] = await sql<RecordRow[]>`
          ${withMargins(
            op,
            sql`select x.* from cdrs x where ${where(op, f)}
                ${after ? sql`and (x.created_at, x.id) > (${after.at}::timestamptz, ${after.id}::uuid)` : sql``}
                order by x.created_at, x.id limit ${batch}`,
          )}
          select ${rowColumns} from r left join accounts a on a.id = r.account_id left join routes rt on rt.id = r.route_id
          order by r.created_at, r.id`;
        for (const row of page) if (!f.negativeMarginOnly || row.margin.startsWith('-')) yield row;
        const last = page[page.length - 1];
        if (page.length < batch || !last) return;
        after = { at: last.cursorAt, id: last.id };
      }
    },

    async totals(op: string, from: Date, to: Date): Promise<Sums> {
      const [row] = await sql<Sums[]>`${withMargins(op, analyticsBase(op, from, to))} select ${sums} from r`;
      return row!;
    },

    async daily(op: string, from: Date, to: Date): Promise<(Sums & { day: string })[]> {
      return sql<(Sums & { day: string })[]>`
        ${withMargins(op, analyticsBase(op, from, to))}
        select to_char(r.created_at at time zone 'UTC', 'YYYY-MM-DD') as day, ${sums} from r group by 1 order by 1`;
    },

    async breakdown(
      op: string,
      from: Date,
      to: Date,
      by: 'customer' | 'supplier' | 'destination',
    ): Promise<(Sums & { key: string | null; label: string | null; external: string | null })[]> {
      type Item = Sums & { key: string | null; label: string | null; external: string | null };
      const base = withMargins(op, analyticsBase(op, from, to));
      if (by === 'customer')
        return sql<Item[]>`${base}
          select r.account_id::text as key, min(a.label) as label, min(a.external_ref) as external, ${sums}
          from r left join accounts a on a.id = r.account_id
          group by r.account_id order by coalesce(sum(r.revenue), 0) desc, 1`;
      if (by === 'supplier')
        return sql<Item[]>`${base}
          select r.route_id::text as key, min(rt.name) as label, null::text as external, ${sums}
          from r left join routes rt on rt.id = r.route_id
          group by r.route_id order by coalesce(sum(r.revenue), 0) desc, 1`;
      return sql<Item[]>`${base}
        select coalesce(rt.country, 'ZZ') as key, coalesce(rt.country, 'Unknown') as label, null::text as external, ${sums}
        from r left join routes rt on rt.id = r.route_id
        group by 1, 2 order by coalesce(sum(r.revenue), 0) desc, 1`;
    },

    /** When the newest of the operator's customer records was written (null: none yet). */
    async latestRecordAt(op: string): Promise<Date | null> {
      const [row] = await sql<{ at: Date | null }[]>`
        select max(created_at) as at from cdrs where operator_id = ${op}`;
      return row?.at ?? null;
    },

    /** A sub-account's usage in [since, until): totals and per UTC day. */
    async usage(op: string, subId: string, since: Date, until: Date) {
      const base = withMargins(
        op,
        sql`select x.* from cdrs x where x.operator_id = ${op} and x.account_id = ${subId}
            and x.created_at >= ${since} and x.created_at < ${until} and not x.is_probe and not x.simulated`,
      );
      const [totals, daily, destinations] = await Promise.all([
        sql<Sums[]>`${base} select ${sums} from r`,
        sql<(Sums & { day: string })[]>`${base}
          select to_char(r.created_at at time zone 'UTC', 'YYYY-MM-DD') as day, ${sums} from r group by 1 order by 1`,
        sql<(Sums & { key: string; label: string })[]>`${base}
          select coalesce(rt.country, 'ZZ') as key, coalesce(rt.country, 'Unknown') as label, ${sums}
          from r left join routes rt on rt.id = r.route_id group by 1, 2 order by coalesce(sum(r.revenue), 0) desc, 1`,
      ]);
      return { totals: totals[0]!, daily, destinations };
    },

    /** Whether `subId` is a sub-account of `op`, and its label. */
    async subAccount(op: string, subId: string): Promise<{ id: string; label: string | null } | null> {
      const [row] = await sql<{ id: string; label: string | null }[]>`
        select a.id, a.label from accounts a join sub_accounts s on s.account_id = a.id
        where a.id = ${subId} and a.parent_id = ${op}`;
      return row ?? null;
    },

    /** The sub-account's calls not yet ended (trunk or API, any daemon): the live-call records. */
    async openCalls(subId: string): Promise<number> {
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from calls where account_id = ${subId} and ended_at is null`;
      return row!.n;
    },
  };
}

export type RecordsRepo = ReturnType<typeof createRecordsRepo>;
