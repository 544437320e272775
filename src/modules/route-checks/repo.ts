import type { Db, Sql } from '../../db/connection.js';
import type { LegResult } from './verdict.js';

export interface TestLineRow {
  id: string;
  number: string;
  country: string;
  lineType: 'fixed' | 'mobile';
  label: string | null;
  createdAt: Date;
}

export interface CheckRow {
  id: string;
  accountId: string;
  mode: 'network' | 'ring_me' | 'sms';
  status: 'running' | 'done';
  simulated: boolean;
  number: string | null;
  totalCost: string;
  createdAt: Date;
  completedAt: Date | null;
}

export interface LegRow {
  checkId: string;
  position: number;
  routeId: string;
  routeName: string;
  country: string | null;
  ownRoute: boolean;
  result: LegResult;
  message: string;
  checkType: 'full' | 'light' | 'ring_me' | 'sms' | 'simulated' | null;
  destination: string | null;
  lineType: 'fixed' | 'mobile' | null;
  rang: boolean | null;
  answered: boolean | null;
  pddMs: number | null;
  sipCode: number | null;
  billableSeconds: number;
  cost: string;
  paidFrom: 'test_credit' | 'balance' | 'mixed' | null;
  answerMs: number | null;
  completedAt: Date | null;
  messageRef: string | null;
  sender: string | null;
  errorCode: 'SELLER_REJECTED' | 'NO_ENDPOINT' | 'UNDELIVERABLE' | 'EXPIRED' | 'REJECTED' | null;
  carrierStatus: string | null;
  carrierError: string | null;
  acceptedAt: Date | null;
  receiptAt: Date | null;
  routeReturnsReceipts: boolean | null;
}

export type NewLeg = Pick<
  LegRow,
  'position' | 'routeId' | 'routeName' | 'country' | 'ownRoute' | 'result' | 'message'
> &
  Partial<
    Omit<LegRow, 'checkId' | 'position' | 'routeId' | 'routeName' | 'country' | 'ownRoute' | 'result' | 'message'>
  >;

/** The leg fields a finished check call (or receipt) writes. */
export type LegUpdate = Partial<
  Omit<LegRow, 'checkId' | 'position' | 'routeId' | 'routeName' | 'country' | 'ownRoute'> & {
    chargePostingIds: string[];
    /** A test message's supplier ids (receipt keys) until its final receipt. */
    supplierKeys: string[] | null;
  }
>;

const LEG_COLUMNS = `check_id, position, route_id, route_name, country, own_route, result, message, check_type, destination,
  line_type, rang, answered, pdd_ms, sip_code, billable_seconds, cost::text as cost, paid_from, answer_ms, completed_at,
  message_ref, sender, error_code, carrier_status, carrier_error, accepted_at, receipt_at, route_returns_receipts`;

const snake = (k: string) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

export function createRouteChecksRepo(sql: Sql) {
  return {
    async addTestLine(l: Omit<TestLineRow, 'createdAt'>, now: Date): Promise<TestLineRow> {
      const [row] = await sql<TestLineRow[]>`
        insert into route_test_lines (id, number, country, line_type, label, created_at)
        values (${l.id}, ${l.number}, ${l.country}, ${l.lineType}, ${l.label}, ${now})
        returning id, number, country, line_type, label, created_at`;
      return row!;
    },
    testLines: () =>
      sql<
        TestLineRow[]
      >`select id, number, country, line_type, label, created_at from route_test_lines order by country, number`,
    async removeTestLine(idOrNumber: string): Promise<TestLineRow | undefined> {
      const byId = /^[0-9a-f-]{36}$/i.test(idOrNumber);
      const [row] = byId
        ? await sql<TestLineRow[]>`delete from route_test_lines where id = ${idOrNumber}
            returning id, number, country, line_type, label, created_at`
        : await sql<TestLineRow[]>`delete from route_test_lines where number = ${idOrNumber.replace(/^\+/, '')}
            returning id, number, country, line_type, label, created_at`;
      return row;
    },

    async insertCheck(tx: Db, c: Omit<CheckRow, 'totalCost' | 'completedAt'>, legs: NewLeg[]): Promise<void> {
      await tx`insert into route_checks (id, account_id, mode, status, simulated, number, created_at)
        values (${c.id}, ${c.accountId}, ${c.mode}, ${c.status}, ${c.simulated}, ${c.number}, ${c.createdAt})`;
      for (const l of legs) {
        const row: Record<string, unknown> = { checkId: c.id, ...l };
        const cols = Object.keys(row);
        await tx`insert into route_check_legs ${tx(
          Object.fromEntries(cols.map((k) => [snake(k), row[k] as never])),
          cols.map(snake),
        )}`;
      }
    },

    async updateLeg(db: Db, checkId: string, position: number, u: LegUpdate): Promise<void> {
      const fields = Object.fromEntries(Object.entries(u).map(([k, v]) => [snake(k), v as never]));
      if (Object.keys(fields).length === 0) return;
      await db`update route_check_legs set ${db(fields)} where check_id = ${checkId} and position = ${position}`;
    },

    /** Done when no leg is still pending or checking; the total is the legs' sum. */
    async finishIfDone(db: Db, checkId: string, now: Date): Promise<boolean> {
      const res = await db`
        update route_checks c set status = 'done', completed_at = ${now},
          total_cost = (select coalesce(sum(cost), 0) from route_check_legs where check_id = c.id)
        where c.id = ${checkId} and c.status = 'running'
          and not exists (select 1 from route_check_legs where check_id = c.id and result in ('pending', 'checking'))`;
      return res.count > 0;
    },

    /**
     * Checks left running by a daemon that stopped mid-check (a check ends within a minute): their
     * open legs become `inconclusive`, nothing is counted against the routes, and the checks end.
     */
    async closeAbandoned(db: Db, olderThan: Date, now: Date): Promise<number> {
      const legs = await db`update route_check_legs l set result = 'inconclusive', completed_at = ${now},
          message = 'The check was interrupted; nothing is counted against the route.'
        from route_checks c
        where c.id = l.check_id and c.status = 'running' and c.created_at < ${olderThan}
          and l.result in ('pending', 'checking')`;
      await db`update route_checks c set status = 'done', completed_at = ${now},
          total_cost = (select coalesce(sum(cost), 0) from route_check_legs where check_id = c.id)
        where c.status = 'running' and c.created_at < ${olderThan}`;
      return legs.count;
    },

    /** The test SMS check a receipt names by its supplier keys (and route); undefined when none waits for it. */
    async checkBySupplierKeys(keys: readonly string[], routeId: string | null): Promise<string | undefined> {
      const [row] = await sql<{ checkId: string }[]>`
        select check_id from route_check_legs
        where supplier_keys && ${sql.array(keys as string[])}::text[] ${routeId ? sql`and route_id = ${routeId}` : sql``}
        limit 1`;
      return row?.checkId;
    },

    /** A later receipt moved a leg's cost: the check's total follows it. */
    async refreshTotal(db: Db, checkId: string): Promise<void> {
      await db`update route_checks c set total_cost = (select coalesce(sum(cost), 0) from route_check_legs where check_id = c.id)
        where c.id = ${checkId}`;
    },

    async check(id: string): Promise<CheckRow | undefined> {
      const [row] = await sql<CheckRow[]>`select id, account_id, mode, status, simulated, number,
        total_cost::text as total_cost, created_at, completed_at from route_checks where id = ${id}`;
      return row;
    },
    legs: (checkIds: readonly string[]) =>
      sql<LegRow[]>`select ${sql.unsafe(LEG_COLUMNS)} from route_check_legs
        where check_id = any(${sql.array(checkIds as string[])}::uuid[]) order by check_id, position`,
    list: (accountId: string, q: { cursor?: string | undefined; mode?: string | undefined; limit: number }) =>
      sql<CheckRow[]>`select id, account_id, mode, status, simulated, number, total_cost::text as total_cost,
        created_at, completed_at from route_checks
        where account_id = ${accountId}
          ${q.cursor ? sql`and id < ${q.cursor}` : sql``}
          ${q.mode ? sql`and mode = ${q.mode}` : sql``}
        order by id desc limit ${q.limit}`,

    /** Live ring-me checks of `number` in the last hour (every account) and this account's distinct numbers today. */
    async ringMeCounts(tx: Db, accountId: string, number: string, now: Date) {
      const [row] = await tx<{ perNumber: string; numbersToday: string; rungToday: boolean }[]>`
        select
          (select count(*) from route_checks where mode = 'ring_me' and number = ${number} and not simulated
             and created_at > ${now}::timestamptz - interval '1 hour') as per_number,
          (select count(distinct number) from route_checks where mode = 'ring_me' and account_id = ${accountId}
             and not simulated and created_at > ${now}::timestamptz - interval '1 day') as numbers_today,
          exists (select 1 from route_checks where mode = 'ring_me' and account_id = ${accountId} and number = ${number}
             and not simulated and created_at > ${now}::timestamptz - interval '1 day') as rung_today`;
      return { perNumber: Number(row!.perNumber), numbersToday: Number(row!.numbersToday), rungToday: row!.rungToday };
    },
    /** Serialises the ring-me limit check of one number (its count and the insert that follows). */
    lockNumber: (tx: Db, number: string) => tx`select pg_advisory_xact_lock(hashtext(${`route-check:${number}`}))`,
  };
}

export type RouteChecksRepo = ReturnType<typeof createRouteChecksRepo>;
