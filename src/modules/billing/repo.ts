import type { Sql } from '../../db/connection.js';
import type { EntryType } from '../../ledger/ledger.js';

export interface TransactionRow {
  id: string;
  userId: string;
  type: EntryType;
  ledger: 'balance' | 'test_credit' | 'earnings';
  amount: string;
  balanceAfter: string;
  reference: string | null;
  relatedEntityType: string | null;
  relatedEntityId: string | null;
  callId: string | null;
  createdAt: Date;
}

export interface TransactionFilter {
  type?: EntryType | undefined;
  from?: string | undefined;
  to?: string | undefined;
  cursor?: string | undefined;
}

// Which of an owner's ledger accounts an entry is on, as the API names it.
const LEDGER_NAME = { customer: 'balance', test_credit: 'test_credit', seller_payable: 'earnings' } as const;

export function createBillingRepo(sql: Sql) {
  const where = (accountId: string, f: TransactionFilter) => sql`
    owner_id = ${accountId}
    ${f.type ? sql`and type = ${f.type}` : sql``}
    ${f.from ? sql`and created_at >= ${f.from}::timestamptz` : sql``}
    ${f.to ? sql`and created_at < ${f.to}::timestamptz` : sql``}
    ${f.cursor ? sql`and id < ${f.cursor}::uuid` : sql``}`;

  const columns = sql`
    id, owner_id as user_id, type, account_kind, to_char(amount, 'FM999999999999990.000000') as amount,
    to_char(coalesce(balance_after, 0), 'FM999999999999990.000000') as balance_after,
    reference, related_entity_type, related_entity_id, call_id, created_at`;

  const shape = (r: TransactionRow & { accountKind: keyof typeof LEDGER_NAME }): TransactionRow => {
    const { accountKind, ...rest } = r;
    return { ...rest, ledger: LEDGER_NAME[accountKind] };
  };

  return {
    async transactions(accountId: string, f: TransactionFilter, limit: number): Promise<TransactionRow[]> {
      const rows = await sql<(TransactionRow & { accountKind: keyof typeof LEDGER_NAME })[]>`
        select ${columns} from entries where ${where(accountId, f)} order by id desc limit ${limit}`;
      return rows.map(shape);
    },

    /** Streams rows in batches through a server-side cursor (CSV export). */
    async eachTransactionBatch(
      accountId: string,
      f: TransactionFilter,
      max: number,
      fn: (rows: TransactionRow[]) => Promise<void> | void,
    ) {
      await sql<(TransactionRow & { accountKind: keyof typeof LEDGER_NAME })[]>`
        select ${columns} from entries where ${where(accountId, f)} order by id desc limit ${max}`.cursor(
        500,
        async (rows) => {
          await fn(rows.map(shape));
        },
      );
    },

    async summary(accountId: string, now: Date, cardHoldDays: number) {
      const [row] = await sql<Record<string, string>[]>`
        with e as (select * from entries where owner_id = ${accountId}),
        t as (select (date_trunc('day', ${now}::timestamptz at time zone 'UTC') at time zone 'UTC') as day_start)
        select
          (coalesce(-sum(amount) filter (where account_kind = 'customer' and type in ('charge', 'platform_fee', 'refund')), 0))::text as total_spending,
          count(distinct posting_id) filter (where account_kind = 'customer' and type in ('charge', 'platform_fee'))::text as total_transactions,
          (coalesce(-sum(amount) filter (where account_kind = 'customer' and type in ('charge', 'platform_fee', 'refund')
                                         and created_at >= t.day_start), 0))::text as spending_today,
          count(distinct posting_id) filter (where account_kind = 'customer' and type in ('charge', 'platform_fee')
                                             and created_at >= t.day_start)::text as transactions_today,
          (coalesce(sum(amount) filter (where account_kind = 'seller_payable' and type in ('credit', 'refund_reversal')), 0))::text as total_earnings,
          (coalesce(sum(amount) filter (where account_kind = 'seller_payable' and type in ('credit', 'refund_reversal')
                                        and created_at >= ${now}::timestamptz - interval '30 days'), 0))::text as earnings30d,
          (coalesce(sum(amount) filter (where account_kind = 'seller_payable' and type in ('credit', 'refund_reversal')
                                        and created_at >= t.day_start), 0))::text as earnings_today,
          (coalesce(sum(amount) filter (where account_kind = 'customer' and type = 'topup' and source = 'card'
                                        and created_at > ${now}::timestamptz - make_interval(days => ${cardHoldDays})), 0))::text as held_balance
        from t left join e on true group by t.day_start`;
      return row!;
    },

    /** End-of-day live balance for each of the last `days` UTC days (oldest first). */
    async balanceHistory(accountId: string, now: Date, days: number) {
      return sql<{ date: string; balance: string | null }[]>`
        with d as (
          select generate_series((${now}::timestamptz at time zone 'UTC')::date - (${days}::int - 1), (${now}::timestamptz at time zone 'UTC')::date, '1 day')::date as day)
        select to_char(d.day, 'YYYY-MM-DD') as date,
               (select e.balance_after::text from entries e
                 where e.owner_id = ${accountId} and e.account_kind = 'customer'
                   and e.created_at < ((d.day + 1)::timestamp at time zone 'UTC')
                 order by e.created_at desc, e.seq desc limit 1) as balance
        from d order by d.day`;
    },

    /** Live spend per UTC day, by kind of the charged entity (calls, SMS). */
    async dailySpend(accountId: string, now: Date, days: number) {
      return sql<{ date: string; voice: string; sms: string; total: string }[]>`
        with d as (
          select generate_series((${now}::timestamptz at time zone 'UTC')::date - (${days}::int - 1), (${now}::timestamptz at time zone 'UTC')::date, '1 day')::date as day),
        s as (
          select (created_at at time zone 'UTC')::date as day,
                 -sum(amount) filter (where related_entity_type = 'call') as voice,
                 -sum(amount) filter (where related_entity_type in ('sms', 'message')) as sms,
                 -sum(amount) as total
          from entries
          where owner_id = ${accountId} and account_kind = 'customer' and type in ('charge', 'platform_fee', 'refund')
            and created_at >= ((${now}::timestamptz at time zone 'UTC')::date - (${days}::int - 1))::timestamp at time zone 'UTC'
          group by 1)
        select to_char(d.day, 'YYYY-MM-DD') as date, coalesce(s.voice, 0)::text as voice, coalesce(s.sms, 0)::text as sms,
               coalesce(s.total, 0)::text as total
        from d left join s on s.day = d.day order by d.day`;
    },

    async hasEntries(accountId: string): Promise<boolean> {
      const rows = await sql`select 1 from entries where owner_id = ${accountId} and account_kind = 'customer' limit 1`;
      return rows.length > 0;
    },
  };
}

export type BillingRepo = ReturnType<typeof createBillingRepo>;
