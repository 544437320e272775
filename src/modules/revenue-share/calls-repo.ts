/** SQL of the calls to revenue share numbers, fraud flags, releases and supplier payments. */
import type { Db } from '../../db/connection.js';

export type CallStatusName = 'unanswered' | 'test' | 'held' | 'flagged' | 'released' | 'clawed_back';

export interface CallContext {
  numberId: string;
  number: string;
  rangeId: string;
  holderId: string | null;
  supplierId: string;
  isTest: boolean;
  ratePerMinute: string;
  billingInitial: number;
  billingIncrement: number;
  holdDays: number;
  fraudRules: Record<string, unknown>;
  payouts: { origin: string; payoutPerMinute: string }[];
  openFlag: string | null;
  /** The holder's setting: fraud flags are sent to the holder's endpoints and notifications. */
  notifyFraud: boolean;
}

export interface CallInsert {
  id: string;
  numberId: string;
  rangeId: string;
  holderId: string | null;
  supplierId: string;
  sipCallId: string;
  fromNumber: string;
  origin: string | null;
  sourceIp: string;
  startedAt: Date;
  answeredAt: Date | null;
  endedAt: Date;
  durationSeconds: number;
  billedSeconds: number;
  ratePerMinute: string;
  payoutPerMinute: string;
  charge: string;
  payout: string;
  status: CallStatusName;
  sipCode: number;
  hangupCause: string;
  releaseAt: Date | null;
  flagId: string | null;
  createdAt: Date;
}

export interface WindowCounts {
  total: string;
  answered: string;
  short: string;
  fromSource: string;
  topSource: string;
}

export function createCallsRepo() {
  return {
    async context(db: Db, numberId: string): Promise<CallContext | undefined> {
      const [c] = await db<CallContext[]>`
        select n.id as number_id, n.number, n.range_id, n.holder_id, r.supplier_id, n.is_test,
               r.rate_per_minute::text as rate_per_minute, r.billing_initial, r.billing_increment, r.hold_days, r.fraud_rules,
               coalesce((select jsonb_agg(jsonb_build_object('origin', p.origin, 'payoutPerMinute', p.payout_per_minute::numeric(20,6)::text))
                         from revshare_payouts p where p.range_id = r.id), '[]') as payouts,
               (select f.id from revshare_fraud_flags f where f.number_id = n.id and f.status = 'open') as open_flag,
               coalesce((select s.notify_fraud from revshare_settings s where s.account_id = n.holder_id), true) as notify_fraud
        from revshare_numbers n join revshare_ranges r on r.id = n.range_id
        where n.id = ${numberId}`;
      return c;
    },

    async insertCall(db: Db, c: CallInsert): Promise<boolean> {
      const rows = await db`
        insert into revshare_calls ${db(c as never)}
        on conflict (sip_call_id, number_id) do nothing returning id`;
      return rows.length === 1;
    },

    /** Removes a recorded call's live row (crash.ts, migration 281); part of the recording transaction. */
    async forgetLive(db: Db, k: { numberId: string; sipCallId: string }) {
      await db`delete from revshare_live_calls where number_id = ${k.numberId} and sip_call_id = ${k.sipCallId}`;
    },

    async setPosting(db: Db, id: string, postingId: string) {
      await db`update revshare_calls set posting_id = ${postingId} where id = ${id}`;
    },

    /** The number's traffic over the fraud window, as the rules read it. */
    async windowCounts(
      db: Db,
      numberId: string,
      since: Date,
      from: string,
      shortSeconds: number,
    ): Promise<WindowCounts> {
      const [w] = await db<WindowCounts[]>`
        select count(*)::text as total,
               count(*) filter (where answered_at is not null)::text as answered,
               count(*) filter (where answered_at is not null and duration_seconds < ${shortSeconds})::text as short,
               count(*) filter (where from_number = ${from})::text as from_source,
               coalesce((select max(k) from (select count(*) as k from revshare_calls
                          where number_id = ${numberId} and started_at > ${since} group by from_number) s), 0)::text as top_source
        from revshare_calls where number_id = ${numberId} and started_at > ${since}`;
      return w!;
    },

    /** Opens a flag unless one is open on the number already; returns the open flag's id. */
    async openFlag(
      db: Db,
      f: { id: string; holderId: string; rangeId: string; numberId: string; rule: string; detail: object; at: Date },
    ) {
      const made = await db<{ id: string }[]>`
        insert into revshare_fraud_flags (id, holder_id, range_id, number_id, rule, detail, created_at)
        values (${f.id}, ${f.holderId}, ${f.rangeId}, ${f.numberId}, ${f.rule}, ${db.json(f.detail as never)}, ${f.at})
        on conflict (number_id) where status = 'open' do nothing returning id`;
      if (made[0]) return { id: made[0].id, created: true };
      const [open] = await db<{ id: string }[]>`
        select id from revshare_fraud_flags where number_id = ${f.numberId} and status = 'open'`;
      return { id: open!.id, created: false };
    },

    /** Held calls of the number in the window join the flag (their earnings stop until it is resolved). */
    async flagCalls(db: Db, numberId: string, since: Date, flagId: string) {
      await db`update revshare_calls set status = 'flagged', flag_id = ${flagId}
               where number_id = ${numberId} and started_at > ${since} and status = 'held'`;
    },

    async flag(db: Db, id: string, lock = false) {
      const [f] = await db<
        {
          id: string;
          holderId: string;
          rangeId: string;
          numberId: string;
          supplierId: string;
          status: string;
          rule: string;
        }[]
      >`
        select f.id, f.holder_id, f.range_id, f.number_id, r.supplier_id, f.status, f.rule
        from revshare_fraud_flags f join revshare_ranges r on r.id = f.range_id
        where f.id = ${id} ${lock ? db`for update of f` : db``}`;
      return f;
    },

    async flagTotals(db: Db, flagId: string) {
      const [t] = await db<{ calls: string; charge: string; payout: string }[]>`
        select count(*)::text as calls, coalesce(sum(charge), 0)::numeric(20,6)::text as charge,
               coalesce(sum(payout), 0)::numeric(20,6)::text as payout
        from revshare_calls where flag_id = ${flagId} and status = 'flagged' and posting_id is not null`;
      return t!;
    },

    async resolveFlag(
      db: Db,
      id: string,
      r: { status: 'cleared' | 'confirmed'; note: string | null; by: string; at: Date; postingId: string | null },
    ) {
      await db`update revshare_fraud_flags set status = ${r.status}, note = ${r.note}, resolved_by = ${r.by},
                 resolved_at = ${r.at}, posting_id = ${r.postingId} where id = ${id}`;
      await db`update revshare_calls set status = ${r.status === 'cleared' ? 'held' : 'clawed_back'}
               where flag_id = ${id} and status = 'flagged'`;
    },

    async flags(
      db: Db,
      q: { holderId?: string; supplierId?: string; status?: string; limit: number; cursor?: string },
    ) {
      return db<
        {
          id: string;
          numberId: string;
          number: string;
          rangeId: string;
          holderId: string;
          rule: string;
          detail: Record<string, unknown>;
          status: 'open' | 'cleared' | 'confirmed';
          calls: string;
          payout: string;
          note: string | null;
          resolvedAt: Date | null;
          createdAt: Date;
        }[]
      >`
        select f.id, f.number_id, n.number, f.range_id, f.holder_id, f.rule, f.detail, f.status, f.note, f.resolved_at, f.created_at,
               (select count(*) from revshare_calls c where c.flag_id = f.id)::text as calls,
               (select coalesce(sum(c.payout), 0) from revshare_calls c where c.flag_id = f.id)::numeric(20,6)::text as payout
        from revshare_fraud_flags f join revshare_numbers n on n.id = f.number_id join revshare_ranges r on r.id = f.range_id
        where true
          ${q.holderId ? db`and f.holder_id = ${q.holderId}` : db``}
          ${q.supplierId ? db`and r.supplier_id = ${q.supplierId}` : db``}
          ${q.status ? db`and f.status = ${q.status}` : db``}
          ${q.cursor ? db`and f.id < ${q.cursor}` : db``}
        order by f.id desc limit ${q.limit + 1}`;
    },

    /** Holders with earnings due: hold over, and for supplier-payment ranges, the call's day paid. */
    async holdersDue(db: Db, now: Date, limit: number) {
      return db<{ holderId: string }[]>`
        select distinct c.holder_id from revshare_calls c join revshare_ranges r on r.id = c.range_id
        where c.status = 'held' and c.release_at <= ${now}
          and (r.release_on = 'hold_period' or (r.paid_through is not null and (c.answered_at at time zone 'UTC')::date <= r.paid_through))
        limit ${limit}`;
    },

    /** Locks one holder's due calls (skipping any another daemon is releasing) and sums them. */
    async takeDue(db: Db, holderId: string, now: Date) {
      return db<{ id: string; payout: string }[]>`
        select c.id, c.payout::text as payout from revshare_calls c join revshare_ranges r on r.id = c.range_id
        where c.holder_id = ${holderId} and c.status = 'held' and c.release_at <= ${now}
          and (r.release_on = 'hold_period' or (r.paid_through is not null and (c.answered_at at time zone 'UTC')::date <= r.paid_through))
        for update of c skip locked`;
    },

    async markReleased(db: Db, ids: string[], releaseId: string | null) {
      await db`update revshare_calls set status = 'released', release_id = ${releaseId} where id = any(${ids})`;
    },

    async insertRelease(
      db: Db,
      r: { id: string; holderId: string; amount: string; calls: number; postingId: string; createdAt: Date },
    ) {
      await db`insert into revshare_releases ${db(r as never)}`;
    },

    async releases(db: Db, holderId: string, limit: number) {
      return db<{ id: string; amount: string; calls: number; postingId: string; createdAt: Date }[]>`
        select id, amount::text as amount, calls, posting_id, created_at from revshare_releases
        where holder_id = ${holderId} order by id desc limit ${limit}`;
    },

    async earnings(db: Db, holderId: string) {
      const [e] = await db<{ held: string; flagged: string; released: string; clawedBack: string; calls: string }[]>`
        select coalesce(sum(payout) filter (where status = 'held'), 0)::numeric(20,6)::text as held,
               coalesce(sum(payout) filter (where status = 'flagged'), 0)::numeric(20,6)::text as flagged,
               coalesce(sum(payout) filter (where status = 'released'), 0)::numeric(20,6)::text as released,
               coalesce(sum(payout) filter (where status = 'clawed_back'), 0)::numeric(20,6)::text as clawed_back,
               count(*) filter (where answered_at is not null)::text as calls
        from revshare_calls where holder_id = ${holderId}`;
      return e!;
    },

    /** Held earnings by the day they become due (hold-period ranges) or 'awaiting supplier payment'. */
    async schedule(db: Db, holderId: string) {
      return db<{ day: string | null; amount: string }[]>`
        select case when r.release_on = 'hold_period' then to_char(c.release_at at time zone 'UTC', 'YYYY-MM-DD') end as day,
               sum(c.payout)::numeric(20,6)::text as amount
        from revshare_calls c join revshare_ranges r on r.id = c.range_id
        where c.holder_id = ${holderId} and c.status = 'held'
        group by 1 order by 1 nulls last limit 31`;
    },

    async insertSupplierPayment(
      db: Db,
      p: {
        id: string;
        rangeId: string;
        supplierId: string;
        periodEnd: string;
        amount: string;
        reference: string | null;
        postingId: string;
        recordedBy: string;
        createdAt: Date;
      },
    ) {
      await db`insert into revshare_supplier_payments ${db(p as never)}`;
      await db`update revshare_ranges set paid_through = greatest(coalesce(paid_through, ${p.periodEnd}::date), ${p.periodEnd}::date),
                 updated_at = ${p.createdAt} where id = ${p.rangeId}`;
    },

    /** What the range's answered calls up to a day charged the supplier, and what was paid for the range. */
    async rangeAccount(db: Db, rangeId: string) {
      const [a] = await db<{ charged: string; paid: string }[]>`
        select (select coalesce(sum(charge), 0) from revshare_calls where range_id = ${rangeId} and status not in ('unanswered', 'test', 'clawed_back'))::numeric(20,6)::text as charged,
               (select coalesce(sum(amount), 0) from revshare_supplier_payments where range_id = ${rangeId})::numeric(20,6)::text as paid`;
      return a!;
    },
  };
}

export type CallsRepo = ReturnType<typeof createCallsRepo>;
