/** SQL of ranges, their payouts, numbers and holder settings (tables of migration 226). */
import type { Db } from '../../db/connection.js';
import type { NumberAnswer } from './answer-setting.js';

export type RangeStatusName = 'active' | 'paused' | 'retired';

export interface RangeRow {
  id: string;
  supplierId: string;
  name: string;
  countryCode: string;
  country: string;
  prefix: string;
  numberType: 'iprn' | 'premium' | 'shared_cost' | 'audiotext';
  ratePerMinute: string;
  billingInitial: number;
  billingIncrement: number;
  holdDays: number;
  releaseOn: 'hold_period' | 'supplier_payment';
  sourceIps: string[];
  maxCallSeconds: number;
  status: RangeStatusName;
  fraudRules: Record<string, unknown>;
  paidThrough: string | null;
  createdAt: Date;
  available: string;
  allocated: string;
  testNumbers: string[];
  payouts: { origin: string; payoutPerMinute: string }[];
}

export interface AnswerableRow {
  number: string;
  numberId: string;
  rangeId: string;
  isTest: boolean;
  sourceIps: string[];
  /** A paused range's numbers are refused (480) rather than answered. */
  rangeActive: boolean;
  maxCallSeconds: number;
  ringSeconds: number;
  /** The holder (null for a test number): pays a forward's B leg. */
  holderId: string | null;
  answer: NumberAnswer;
}

export interface NumberRow {
  id: string;
  number: string;
  rangeId: string;
  rangeName: string;
  country: string;
  countryCode: string;
  numberType: RangeRow['numberType'];
  label: string | null;
  maxCallSeconds: number;
  allocatedAt: Date;
  openFlag: string | null;
  payouts: { origin: string; payoutPerMinute: string }[];
  answer: NumberAnswer;
}

/** Columns of a range with its counts, test numbers and payout rows. */
const rangeSelect = (db: Db) => db`
  select r.id, r.supplier_id, r.name, r.country_code, r.country, r.prefix, r.number_type,
         r.rate_per_minute::text as rate_per_minute, r.billing_initial, r.billing_increment, r.hold_days, r.release_on,
         r.source_ips, r.max_call_seconds, r.status, r.fraud_rules, r.paid_through::text as paid_through, r.created_at,
         (select count(*) from revshare_numbers n where n.range_id = r.id and n.state = 'available' and not n.is_test)::text as available,
         (select count(*) from revshare_numbers n where n.range_id = r.id and n.state = 'allocated')::text as allocated,
         coalesce((select array_agg(n.number order by n.number) from revshare_numbers n
                   where n.range_id = r.id and n.is_test and n.state <> 'withdrawn'), '{}') as test_numbers,
         coalesce((select jsonb_agg(jsonb_build_object('origin', p.origin, 'payoutPerMinute', p.payout_per_minute::numeric(20,6)::text)
                                    order by length(p.origin) desc, p.origin)
                   from revshare_payouts p where p.range_id = r.id), '[]') as payouts
  from revshare_ranges r`;

export function createRepo() {
  return {
    async catalogue(
      db: Db,
      q: { countryCode?: string; numberType?: string; search?: string; limit: number; cursor?: string },
    ) {
      return db<RangeRow[]>`
        ${rangeSelect(db)}
        where r.status = 'active'
          ${q.countryCode ? db`and r.country_code = ${q.countryCode}` : db``}
          ${q.numberType ? db`and r.number_type = ${q.numberType}` : db``}
          ${q.search ? db`and (r.name ilike ${'%' + q.search + '%'} or r.country ilike ${'%' + q.search + '%'} or r.prefix like ${q.search.replace(/\D/g, '') + '%'})` : db``}
          ${q.cursor ? db`and r.id < ${q.cursor}` : db``}
        order by r.id desc limit ${q.limit + 1}`;
    },

    async supplierRanges(db: Db, supplierId: string | null, q: { limit: number; cursor?: string }) {
      return db<RangeRow[]>`
        ${rangeSelect(db)}
        where true ${supplierId ? db`and r.supplier_id = ${supplierId}` : db``}
          ${q.cursor ? db`and r.id < ${q.cursor}` : db``}
        order by r.id desc limit ${q.limit + 1}`;
    },

    async range(db: Db, id: string): Promise<RangeRow | undefined> {
      const [r] = await db<RangeRow[]>`${rangeSelect(db)} where r.id = ${id}`;
      return r;
    },

    async countries(db: Db) {
      return db<{ countryCode: string; country: string; ranges: string; available: string; bestPayout: string }[]>`
        select r.country_code, min(r.country) as country, count(distinct r.id)::text as ranges,
               (select count(*) from revshare_numbers n join revshare_ranges x on x.id = n.range_id
                 where x.country_code = r.country_code and x.status = 'active' and n.state = 'available' and not n.is_test)::text as available,
               coalesce(max(p.payout_per_minute), 0)::numeric(20,6)::text as best_payout
        from revshare_ranges r left join revshare_payouts p on p.range_id = r.id
        where r.status = 'active'
        group by r.country_code order by r.country_code`;
    },

    async insertRange(
      db: Db,
      r: Omit<RangeRow, 'available' | 'allocated' | 'testNumbers' | 'payouts' | 'paidThrough'>,
    ) {
      await db`
        insert into revshare_ranges (id, supplier_id, name, country_code, country, prefix, number_type, rate_per_minute,
          billing_initial, billing_increment, hold_days, release_on, source_ips, max_call_seconds, status, fraud_rules,
          created_at, updated_at)
        values (${r.id}, ${r.supplierId}, ${r.name}, ${r.countryCode}, ${r.country}, ${r.prefix}, ${r.numberType},
          ${r.ratePerMinute}, ${r.billingInitial}, ${r.billingIncrement}, ${r.holdDays}, ${r.releaseOn}, ${r.sourceIps},
          ${r.maxCallSeconds}, ${r.status}, ${db.json(r.fraudRules as never)}, ${r.createdAt}, ${r.createdAt})`;
    },

    async updateRange(db: Db, id: string, set: Record<string, unknown>, at: Date) {
      const cols = Object.keys(set);
      if (cols.length === 0) return;
      await db`update revshare_ranges set ${db({ ...set, updatedAt: at } as never)} where id = ${id}`;
    },

    async replacePayouts(db: Db, rangeId: string, rows: { origin: string; payoutPerMinute: string }[]) {
      await db`delete from revshare_payouts where range_id = ${rangeId}`;
      if (rows.length === 0) return;
      const values = rows.map((p) => ({ rangeId, origin: p.origin, payoutPerMinute: p.payoutPerMinute }));
      await db`insert into revshare_payouts ${db(values, 'rangeId', 'origin', 'payoutPerMinute')}`;
    },

    async insertNumbers(
      db: Db,
      rows: { id: string; rangeId: string; number: string; isTest: boolean; createdAt: Date }[],
    ) {
      const values = rows.map((r) => ({ ...r, updatedAt: r.createdAt }));
      return db<{ number: string }[]>`
        insert into revshare_numbers ${db(values, 'id', 'rangeId', 'number', 'isTest', 'createdAt', 'updatedAt')}
        on conflict (number) do nothing returning number`;
    },

    async inventory(db: Db, rangeId: string, q: { state?: string; limit: number; cursor?: string }) {
      return db<
        {
          id: string;
          number: string;
          isTest: boolean;
          state: 'available' | 'allocated' | 'withdrawn';
          holderId: string | null;
          allocatedAt: Date | null;
          createdAt: Date;
        }[]
      >`
        select id, number, is_test, state, holder_id, allocated_at, created_at from revshare_numbers
        where range_id = ${rangeId}
          ${q.state ? db`and state = ${q.state}` : db``}
          ${q.cursor ? db`and id < ${q.cursor}` : db``}
        order by id desc limit ${q.limit + 1}`;
    },

    /** Takes `quantity` free numbers of the range for the holder (skipping rows other allocations hold). */
    async allocate(
      db: Db,
      rangeId: string,
      holderId: string,
      quantity: number,
      maxCallSeconds: number | null,
      at: Date,
    ) {
      return db<{ id: string }[]>`
        update revshare_numbers set state = 'allocated', holder_id = ${holderId}, allocated_at = ${at}, released_at = null,
               label = null, max_call_seconds = ${maxCallSeconds}, answer = default, updated_at = ${at}
        where id in (select id from revshare_numbers where range_id = ${rangeId} and state = 'available' and not is_test
                     order by number limit ${quantity} for update skip locked)
        returning id`;
    },

    async numbers(
      db: Db,
      q: {
        holderId: string;
        ids?: string[];
        rangeId?: string;
        countryCode?: string;
        search?: string;
        limit: number;
        cursor?: string;
      },
    ) {
      return db<NumberRow[]>`
        select n.id, n.number, n.range_id, r.name as range_name, r.country, r.country_code, r.number_type, n.label,
               coalesce(n.max_call_seconds, r.max_call_seconds) as max_call_seconds, n.allocated_at, n.answer,
               (select f.id from revshare_fraud_flags f where f.number_id = n.id and f.status = 'open') as open_flag,
               coalesce((select jsonb_agg(jsonb_build_object('origin', p.origin, 'payoutPerMinute', p.payout_per_minute::numeric(20,6)::text)
                                          order by length(p.origin) desc, p.origin)
                         from revshare_payouts p where p.range_id = r.id), '[]') as payouts
        from revshare_numbers n join revshare_ranges r on r.id = n.range_id
        where n.holder_id = ${q.holderId} and n.state = 'allocated'
          ${q.ids ? db`and n.id = any(${q.ids})` : db``}
          ${q.rangeId ? db`and n.range_id = ${q.rangeId}` : db``}
          ${q.countryCode ? db`and r.country_code = ${q.countryCode}` : db``}
          ${q.search ? db`and n.number like ${'%' + q.search + '%'}` : db``}
          ${q.cursor ? db`and n.id < ${q.cursor}` : db``}
        order by n.id desc limit ${q.limit + 1}`;
    },

    async updateNumber(db: Db, holderId: string, id: string, set: Record<string, unknown>, at: Date) {
      return db`update revshare_numbers set ${db({ ...set, updatedAt: at } as never)}
                where id = ${id} and holder_id = ${holderId} and state = 'allocated' returning id`;
    },

    async releaseNumber(db: Db, holderId: string, id: string, at: Date) {
      return db`update revshare_numbers set state = 'available', holder_id = null, label = null, max_call_seconds = null, answer = default,
                  released_at = ${at}, updated_at = ${at}
                where id = ${id} and holder_id = ${holderId} and state = 'allocated' returning id`;
    },

    /** Numbers the SIP plane answers: allocated ones and test numbers, of ranges not retired, with how to answer them. */
    async answerable(db: Db) {
      return db<AnswerableRow[]>`
        select n.number, n.id as number_id, n.range_id, n.is_test, r.source_ips, r.status = 'active' as range_active,
               coalesce(n.max_call_seconds, r.max_call_seconds) as max_call_seconds, coalesce(s.ring_seconds, 0) as ring_seconds,
               n.holder_id, case when n.is_test then '{"mode": "silence"}'::jsonb else n.answer end as answer
        from revshare_numbers n join revshare_ranges r on r.id = n.range_id
        left join revshare_settings s on s.account_id = n.holder_id
        where r.status <> 'retired' and (n.state = 'allocated' or (n.is_test and n.state <> 'withdrawn'))`;
    },

    async settings(db: Db, accountId: string) {
      const [s] = await db<{ ringSeconds: number; defaultMaxCallSeconds: number | null; notifyFraud: boolean }[]>`
        select ring_seconds, default_max_call_seconds, notify_fraud from revshare_settings where account_id = ${accountId}`;
      return s ?? { ringSeconds: 0, defaultMaxCallSeconds: null, notifyFraud: true };
    },

    async putSettings(
      db: Db,
      accountId: string,
      s: { ringSeconds: number; defaultMaxCallSeconds: number | null; notifyFraud: boolean },
      at: Date,
    ) {
      await db`
        insert into revshare_settings (account_id, ring_seconds, default_max_call_seconds, notify_fraud, updated_at)
        values (${accountId}, ${s.ringSeconds}, ${s.defaultMaxCallSeconds}, ${s.notifyFraud}, ${at})
        on conflict (account_id) do update set ring_seconds = excluded.ring_seconds,
          default_max_call_seconds = excluded.default_max_call_seconds, notify_fraud = excluded.notify_fraud,
          updated_at = excluded.updated_at`;
    },
  };
}

export type Repo = ReturnType<typeof createRepo>;
