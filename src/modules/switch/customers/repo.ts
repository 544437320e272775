import type { Db, Sql } from '../../../db/connection.js';
import type { ChangeKind, SellKind } from './deck.js';

export interface CustomerRow {
  id: string;
  label: string | null;
  externalRef: string | null;
  status: string;
  balance: string;
  creditLimit: string;
  dailySpendCap: string | null;
  maxConcurrentCalls: number | null;
  markupPct: string | null;
  currency: string;
  voiceRates: number;
  smsRates: number;
  inboundRates: number;
  scheduledChanges: number;
  nextChangeAt: Date | null;
  noticeDays: number;
  createdAt: Date;
}

export interface SellRateRow {
  id: string;
  kind: SellKind;
  prefix: string;
  destination: string;
  rate: string;
  billingIncrement: string;
  effectiveFrom: Date;
  change: ChangeKind;
  previousRate: string | null;
  createdAt: Date;
}

export interface ChangeRow extends SellRateRow {
  cancelledAt: Date | null;
  notifiedAt: Date | null;
}

export interface NoticeRow {
  noticeDays: number;
  recipients: string[];
  autoSend: boolean;
  updatedAt: Date | null;
}

export interface SellRateInsert {
  id: string;
  customer_id: string;
  kind: SellKind;
  prefix: string;
  destination: string;
  rate: string;
  billing_increment: string;
  effective_from: Date;
  change: ChangeKind;
  previous_rate: string | null;
  created_at: Date;
}

const like = (s: string) => `${s.replace(/[\\%_]/g, '\\$&')}%`;

/** SQL of Switch customers and their sell-rate decks (migrations 278, 279). */
export function createCustomersRepo(sql: Sql) {
  const customers = (now: Date) => sql`
    select a.id, a.label, a.external_ref, a.status, coalesce(l.balance, 0)::text as balance,
           s.credit_limit::text, s.daily_spend_cap::text, s.max_concurrent_calls, s.markup_pct::text, s.currency,
           coalesce(d.voice_rates, 0) as voice_rates, coalesce(d.sms_rates, 0) as sms_rates,
           coalesce(d.inbound_rates, 0) as inbound_rates,
           coalesce(f.scheduled, 0) as scheduled_changes, f.next_change_at,
           coalesce(n.notice_days, 0) as notice_days, a.created_at
    from accounts a
    join sub_accounts s on s.account_id = a.id
    left join ledger_accounts l on l.owner_id = a.id and l.kind = 'customer'
    left join switch_sell_rate_notices n on n.customer_id = a.id
    left join lateral (
      select (count(distinct r.prefix) filter (where r.kind = 'voice'))::int as voice_rates,
             (count(distinct r.prefix) filter (where r.kind = 'sms'))::int as sms_rates,
             (count(distinct r.prefix) filter (where r.kind = 'inbound'))::int as inbound_rates
      from switch_sell_rates r where r.customer_id = a.id and r.cancelled_at is null and r.effective_from <= ${now}) d on true
    left join lateral (
      select count(*)::int as scheduled, min(r.effective_from) as next_change_at
      from switch_sell_rates r where r.customer_id = a.id and r.cancelled_at is null and r.effective_from > ${now}) f on true`;

  /** The version of each prefix in force at `now`. */
  const active = (customerId: string, now: Date, kind: SellKind | undefined) => sql`
    select distinct on (kind, prefix) id, kind, prefix, destination, rate::text, billing_increment, effective_from,
           change, previous_rate::text, created_at
    from switch_sell_rates
    where customer_id = ${customerId} and cancelled_at is null and effective_from <= ${now}
      ${kind ? sql`and kind = ${kind}` : sql``}
    order by kind, prefix, effective_from desc, created_at desc`;

  return {
    async list(operatorId: string, now: Date, q: { search?: string | undefined; limit: number; offset: number }) {
      const filter = sql`a.parent_id = ${operatorId}
        ${q.search ? sql`and (a.label ilike ${'%' + like(q.search)} or a.external_ref ilike ${'%' + like(q.search)})` : sql``}`;
      const rows = await sql<CustomerRow[]>`
        ${customers(now)} where ${filter} order by a.created_at desc, a.id desc limit ${q.limit} offset ${q.offset}`;
      const [n] = await sql<
        { n: number }[]
      >`select count(*)::int as n from accounts a join sub_accounts s on s.account_id = a.id where ${filter}`;
      return { rows, total: n!.n };
    },

    async get(operatorId: string, id: string, now: Date): Promise<CustomerRow | undefined> {
      const [row] = await sql<CustomerRow[]>`${customers(now)} where a.id = ${id} and a.parent_id = ${operatorId}`;
      return row;
    },

    /** Whether `id` is a sub-account of `operatorId`. */
    async owns(operatorId: string, id: string): Promise<boolean> {
      const [row] = await sql`select 1 from sub_accounts where account_id = ${id} and parent_id = ${operatorId}`;
      return row !== undefined;
    },

    async activeRates(
      customerId: string,
      now: Date,
      q: { kind?: SellKind | undefined; search?: string | undefined; limit: number; offset: number },
    ) {
      const rows = await sql<(SellRateRow & { total: number })[]>`
        select *, (count(*) over ())::int as total from (${active(customerId, now, q.kind)}) x
        ${q.search ? sql`where prefix like ${like(q.search)}` : sql``}
        order by kind, prefix limit ${q.limit} offset ${q.offset}`;
      return { rows: rows.map(({ total: _t, ...r }) => r), total: rows[0]?.total ?? 0 };
    },

    async scheduledRates(customerId: string, now: Date, kind: SellKind | undefined): Promise<SellRateRow[]> {
      return sql<SellRateRow[]>`
        select id, kind, prefix, destination, rate::text, billing_increment, effective_from, change, previous_rate::text, created_at
        from switch_sell_rates
        where customer_id = ${customerId} and cancelled_at is null and effective_from > ${now} ${kind ? sql`and kind = ${kind}` : sql``}
        order by effective_from, kind, prefix`;
    },

    /** Serialises writes to one customer's deck (its sub-account row) until `tx` ends. */
    async lockCustomer(tx: Db, customerId: string): Promise<void> {
      await tx`select 1 from sub_accounts where account_id = ${customerId} for update`;
    },

    /** The versions in force at `now` for `prefixes` of `kind`. */
    async current(tx: Db, customerId: string, kind: SellKind, prefixes: string[], now: Date): Promise<SellRateRow[]> {
      return tx<SellRateRow[]>`
        select distinct on (prefix) id, kind, prefix, destination, rate::text, billing_increment, effective_from,
               change, previous_rate::text, created_at
        from switch_sell_rates
        where customer_id = ${customerId} and kind = ${kind} and prefix = any(${prefixes}::text[])
          and cancelled_at is null and effective_from <= ${now}
        order by prefix, effective_from desc, created_at desc`;
    },

    /** Versions of `prefixes` not yet in force, replaced by a newer change before they took effect. */
    async cancelScheduled(tx: Db, customerId: string, kind: SellKind, prefixes: string[], now: Date) {
      const rows = await tx`
        update switch_sell_rates set cancelled_at = ${now}
        where customer_id = ${customerId} and kind = ${kind} and prefix = any(${prefixes}::text[])
          and cancelled_at is null and effective_from > ${now}`;
      return rows.count;
    },

    async insertRates(tx: Db, rows: SellRateInsert[]): Promise<void> {
      if (rows.length === 0) return;
      await tx`insert into switch_sell_rates ${tx(rows)}`;
    },

    async notice(customerId: string): Promise<NoticeRow> {
      const [row] = await sql<NoticeRow[]>`
        select notice_days, recipients, auto_send, updated_at from switch_sell_rate_notices where customer_id = ${customerId}`;
      return row ?? { noticeDays: 0, recipients: [], autoSend: false, updatedAt: null };
    },

    async noticeDays(tx: Db, customerId: string): Promise<number> {
      const [row] = await tx<{ noticeDays: number }[]>`
        select notice_days from switch_sell_rate_notices where customer_id = ${customerId}`;
      return row?.noticeDays ?? 0;
    },

    async putNotice(
      customerId: string,
      p: { noticeDays?: number | undefined; recipients?: string[] | undefined; autoSend?: boolean | undefined },
      now: Date,
    ): Promise<NoticeRow> {
      const [row] = await sql<NoticeRow[]>`
        insert into switch_sell_rate_notices (customer_id, notice_days, recipients, auto_send, updated_at)
        values (${customerId}, ${p.noticeDays ?? 0}, ${p.recipients ?? []}::text[], ${p.autoSend ?? false}, ${now})
        on conflict (customer_id) do update set
          notice_days = ${p.noticeDays === undefined ? sql`switch_sell_rate_notices.notice_days` : sql`excluded.notice_days`},
          recipients = ${p.recipients === undefined ? sql`switch_sell_rate_notices.recipients` : sql`excluded.recipients`},
          auto_send = ${p.autoSend === undefined ? sql`switch_sell_rate_notices.auto_send` : sql`excluded.auto_send`},
          updated_at = excluded.updated_at
        returning notice_days, recipients, auto_send, updated_at`;
      return row!;
    },

    /**
     * Changes not yet in force, and those written since `since` (increases, decreases, new
     * prefixes; a rewrite of the same rate is left out), with when a notice listed each.
     */
    async changes(customerId: string, now: Date, since: Date, ids?: string[]): Promise<ChangeRow[]> {
      return sql<ChangeRow[]>`
        select r.id, r.kind, r.prefix, r.destination, r.rate::text, r.billing_increment, r.effective_from, r.change,
               r.previous_rate::text, r.created_at, r.cancelled_at,
               (select max(s.sent_at) from switch_sell_rate_notice_sends s where r.id = any(s.change_ids)) as notified_at
        from switch_sell_rates r
        where r.customer_id = ${customerId} and r.change <> 'unchanged'
          ${ids ? sql`and r.id = any(${ids}::uuid[])` : sql`and (r.created_at >= ${since} or (r.effective_from > ${now} and r.cancelled_at is null))`}
        order by r.effective_from desc, r.kind, r.prefix`;
    },

    async recordSend(s: {
      id: string;
      customerId: string;
      sentAt: Date;
      recipients: string[];
      changeIds: string[];
      trigger: 'manual' | 'auto';
      messageIds: string[];
    }): Promise<void> {
      await sql`
        insert into switch_sell_rate_notice_sends (id, customer_id, sent_at, recipients, change_ids, trigger, message_ids)
        values (${s.id}, ${s.customerId}, ${s.sentAt}, ${s.recipients}::text[], ${s.changeIds}::uuid[], ${s.trigger}, ${s.messageIds}::text[])`;
    },
  };
}

export type CustomersRepo = ReturnType<typeof createCustomersRepo>;
