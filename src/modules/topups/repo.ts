import type { Db, Sql } from '../../db/connection.js';

export type TopupMethod = 'card' | 'wire' | 'crypto' | 'x402';
export type TopupStatus =
  'pending' | 'awaiting_funds' | 'succeeded' | 'failed' | 'canceled' | 'expired' | 'disputed' | 'charged_back';

export interface TopupRow {
  id: string;
  accountId: string;
  method: TopupMethod;
  origin: 'customer' | 'auto' | 'operator';
  amount: string;
  creditedAmount: string | null;
  status: TopupStatus;
  reference: string | null;
  stripePaymentIntent: string | null;
  stripeClientSecret: string | null;
  postingId: string | null;
  chargebackPostingId: string | null;
  chargebackOutstanding: string;
  failureReason: string | null;
  cardBrand: string | null;
  cardLast4: string | null;
  receiptNumber: string | null;
  billedTo: Record<string, unknown> | null;
  expiresAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
}

const COLUMNS = [
  'id',
  'account_id',
  'method',
  'origin',
  'status',
  'reference',
  'stripe_payment_intent',
  'stripe_client_secret',
  'posting_id',
  'chargeback_posting_id',
  'failure_reason',
  'card_brand',
  'card_last4',
  'billed_to',
  'expires_at',
  'created_at',
  'updated_at',
  'completed_at',
] as const;

export interface NewTopup {
  id: string;
  accountId: string;
  method: TopupMethod;
  origin: TopupRow['origin'];
  amount: string;
  status: TopupStatus;
  reference?: string | null;
  expiresAt?: Date | null;
  at: Date;
}

export interface AutoRechargeRow {
  accountId: string;
  enabled: boolean;
  threshold: string;
  amount: string;
  dailyLimit: string;
  lastAttemptAt: Date | null;
  lastFailure: string | null;
  updatedAt: Date;
}

export interface SavedCard {
  customerId: string;
  paymentMethod: string | null;
  cardBrand: string | null;
  cardLast4: string | null;
}

export function createTopupsRepo(sql: Sql) {
  const cols = (db: Db) =>
    db`${db(COLUMNS as unknown as string[])}, amount::text, credited_amount::text, receipt_number::text, chargeback_outstanding::text`;
  const select = (db: Db) => db`select ${cols(db)} from topups`;

  return {
    async insert(db: Db, t: NewTopup): Promise<TopupRow> {
      const [row] = await db<TopupRow[]>`
        insert into topups (id, account_id, method, origin, amount, status, reference, expires_at, created_at, updated_at)
        values (${t.id}, ${t.accountId}, ${t.method}, ${t.origin}, ${t.amount}::numeric, ${t.status}, ${t.reference ?? null},
                ${t.expiresAt ?? null}, ${t.at}, ${t.at})
        returning ${cols(db)}`;
      return row!;
    },

    async byId(db: Db, accountId: string, id: string): Promise<TopupRow | undefined> {
      const [row] = await db<TopupRow[]>`${select(db)} where id = ${id} and account_id = ${accountId}`;
      return row;
    },

    /** Locks the row: webhook deliveries and the operator's confirm may race. */
    async lockByIntent(db: Db, intentId: string): Promise<TopupRow | undefined> {
      const [row] = await db<TopupRow[]>`${select(db)} where stripe_payment_intent = ${intentId} for update`;
      return row;
    },

    async lockById(db: Db, id: string): Promise<TopupRow | undefined> {
      const [row] = await db<TopupRow[]>`${select(db)} where id = ${id} for update`;
      return row;
    },

    async lockByReference(db: Db, reference: string): Promise<TopupRow | undefined> {
      const [row] = await db<TopupRow[]>`${select(db)} where reference = ${reference} for update`;
      return row;
    },

    async list(
      accountId: string,
      f: { cursor?: string | undefined; method?: TopupMethod | undefined; status?: TopupStatus | undefined },
      max: number,
    ): Promise<TopupRow[]> {
      return sql<TopupRow[]>`
        ${select(sql)}
        where account_id = ${accountId}
          ${f.cursor ? sql`and id < ${f.cursor}` : sql``}
          ${f.method ? sql`and method = ${f.method}` : sql``}
          ${f.status ? sql`and status = ${f.status}` : sql``}
        order by id desc limit ${max}`;
    },

    /** Credited top-ups (they have a receipt), newest first: the invoices of top-ups. */
    async listCredited(accountId: string, cursor: string | undefined, max: number): Promise<TopupRow[]> {
      return sql<TopupRow[]>`
        ${select(sql)} where account_id = ${accountId} and receipt_number is not null
          ${cursor ? sql`and id < ${cursor}` : sql``}
        order by id desc limit ${max}`;
    },

    async setIntent(db: Db, id: string, intentId: string, clientSecret: string | null, at: Date) {
      await db`update topups set stripe_payment_intent = ${intentId}, stripe_client_secret = ${clientSecret}, updated_at = ${at}
               where id = ${id}`;
    },

    async markCredited(
      db: Db,
      id: string,
      c: {
        creditedAmount: string;
        postingId: string;
        billedTo: Record<string, unknown>;
        card?: { brand: string; last4: string } | null;
        at: Date;
      },
    ): Promise<TopupRow> {
      const [row] = await db<TopupRow[]>`
        update topups set status = 'succeeded', credited_amount = ${c.creditedAmount}::numeric, posting_id = ${c.postingId},
               receipt_number = nextval('topup_receipt_seq'), billed_to = ${db.json(c.billedTo as never)},
               card_brand = coalesce(${c.card?.brand ?? null}, card_brand), card_last4 = coalesce(${c.card?.last4 ?? null}, card_last4),
               failure_reason = null, completed_at = ${c.at}, updated_at = ${c.at}
        where id = ${id}
        returning ${cols(db)}`;
      return row!;
    },

    async setStatus(db: Db, id: string, status: TopupStatus, at: Date, failureReason: string | null = null) {
      await db`update topups set status = ${status}, failure_reason = coalesce(${failureReason}, failure_reason),
               completed_at = case when ${status} in ('failed', 'canceled', 'expired') then ${at} else completed_at end,
               updated_at = ${at} where id = ${id}`;
    },

    async chargeback(
      db: Db,
      id: string,
      c: { status: TopupStatus; postingId: string | null; outstanding: string; at: Date },
    ) {
      await db`update topups set status = ${c.status}, chargeback_posting_id = ${c.postingId},
               chargeback_outstanding = ${c.outstanding}::numeric, updated_at = ${c.at} where id = ${id}`;
    },

    /** The account's top-ups with chargebacks still to take, oldest first, locked. */
    async lockOutstanding(db: Db, accountId: string): Promise<TopupRow[]> {
      return db<TopupRow[]>`${select(db)} where account_id = ${accountId} and chargeback_outstanding > 0
                            order by id for update`;
    },

    /** Wire references past their expiry become `expired`; returns how many. */
    async expireWires(now: Date): Promise<number> {
      const rows = await sql`
        update topups set status = 'expired', completed_at = ${now}, updated_at = ${now}
        where status = 'awaiting_funds' and expires_at <= ${now} returning 1`;
      return rows.length;
    },

    /** Records an event id; false when it was seen before (Stripe redelivers). */
    async claimEvent(db: Db, id: string, type: string, at: Date): Promise<boolean> {
      const rows = await db`insert into stripe_events (id, type, received_at) values (${id}, ${type}, ${at})
                            on conflict (id) do nothing returning 1`;
      return rows.length === 1;
    },

    async savedCard(db: Db, accountId: string): Promise<SavedCard | undefined> {
      const [row] = await db<SavedCard[]>`
        select customer_id, payment_method, card_brand, card_last4 from stripe_customers where account_id = ${accountId}`;
      return row;
    },

    async saveCustomer(accountId: string, customerId: string, at: Date) {
      await sql`insert into stripe_customers (account_id, customer_id, updated_at) values (${accountId}, ${customerId}, ${at})
                on conflict (account_id) do nothing`;
    },

    async saveCard(db: Db, accountId: string, pm: string, card: { brand: string; last4: string } | null, at: Date) {
      await db`update stripe_customers set payment_method = ${pm}, card_brand = ${card?.brand ?? null},
               card_last4 = ${card?.last4 ?? null}, updated_at = ${at} where account_id = ${accountId}`;
    },

    async autoRecharge(db: Db, accountId: string): Promise<AutoRechargeRow | undefined> {
      const [row] = await db<AutoRechargeRow[]>`
        select account_id, enabled, threshold::text, amount::text, daily_limit::text, last_attempt_at, last_failure, updated_at
        from auto_recharge where account_id = ${accountId}`;
      return row;
    },

    async putAutoRecharge(r: Omit<AutoRechargeRow, 'lastAttemptAt' | 'lastFailure'>) {
      await sql`
        insert into auto_recharge (account_id, enabled, threshold, amount, daily_limit, updated_at)
        values (${r.accountId}, ${r.enabled}, ${r.threshold}::numeric, ${r.amount}::numeric, ${r.dailyLimit}::numeric, ${r.updatedAt})
        on conflict (account_id) do update set enabled = excluded.enabled, threshold = excluded.threshold,
          amount = excluded.amount, daily_limit = excluded.daily_limit, last_failure = null, updated_at = excluded.updated_at`;
    },

    /** Enabled auto-recharges not tried since `retryBefore`, with nothing of theirs still in flight. */
    async dueAutoRecharges(retryBefore: Date): Promise<AutoRechargeRow[]> {
      return sql<AutoRechargeRow[]>`
        select r.account_id, r.enabled, r.threshold::text, r.amount::text, r.daily_limit::text, r.last_attempt_at,
               r.last_failure, r.updated_at
        from auto_recharge r
        where r.enabled and (r.last_attempt_at is null or r.last_attempt_at < ${retryBefore})
          and not exists (select 1 from topups t where t.account_id = r.account_id and t.origin = 'auto' and t.status = 'pending')
        limit 200`;
    },

    /**
     * Takes the account's auto-recharge attempt: true when this daemon won it (another daemon
     * may be looking at the same row) and today's auto top-ups leave room for `amount`.
     */
    async claimAutoAttempt(db: Db, accountId: string, retryBefore: Date, now: Date): Promise<boolean> {
      const rows = await db`
        update auto_recharge r set last_attempt_at = ${now}
        where r.account_id = ${accountId} and r.enabled
          and (r.last_attempt_at is null or r.last_attempt_at < ${retryBefore})
          and r.amount + coalesce((select sum(t.amount) from topups t
                                   where t.account_id = r.account_id and t.origin = 'auto'
                                     and t.status in ('pending', 'succeeded')
                                     and t.created_at >= date_trunc('day', ${now}::timestamptz at time zone 'UTC') at time zone 'UTC'), 0)
              <= r.daily_limit
        returning 1`;
      return rows.length === 1;
    },

    async autoFailed(db: Db, accountId: string, reason: string) {
      await db`update auto_recharge set last_failure = ${reason} where account_id = ${accountId}`;
    },
  };
}

export type TopupsRepo = ReturnType<typeof createTopupsRepo>;
