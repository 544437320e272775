import type { Db, Sql } from '../../db/connection.js';

export interface HandsetRow {
  id: string;
  number: string;
  country: string;
  label: string | null;
  createdAt: Date;
}

export type TestStatus =
  'scheduled' | 'pending' | 'dispatching' | 'in_progress' | 'completed' | 'failed' | 'not_tested' | 'cancelled';

export interface TestRow {
  id: string;
  accountId: string;
  batchId: string | null;
  routeId: string | null;
  blendRouteId: string | null;
  displayCli: string;
  testCountry: string;
  testNumber: string | null;
  handsetId: string | null;
  status: TestStatus;
  recurrence: 'none' | 'daily' | 'weekly';
  scheduledAt: Date | null;
  simulated: boolean;
  reportedCli: string | null;
  displayedCorrectly: boolean | null;
  resultNotes: string | null;
  rang: boolean | null;
  ringMs: number | null;
  answerMs: number | null;
  sipCode: number | null;
  failureCause: string | null;
  cost: string;
  dispatchedAt: Date | null;
  completedAt: Date | null;
  createdAt: Date;
}

export interface BatchRow {
  id: string;
  accountId: string;
  status: 'running' | 'completed' | 'cancelled';
  displayCli: string;
  routeIds: string[];
  createdAt: Date;
  completedAt: Date | null;
}

export type NewTest = Pick<
  TestRow,
  | 'id'
  | 'accountId'
  | 'batchId'
  | 'routeId'
  | 'blendRouteId'
  | 'displayCli'
  | 'testCountry'
  | 'testNumber'
  | 'status'
  | 'recurrence'
  | 'scheduledAt'
  | 'simulated'
  | 'createdAt'
> &
  Partial<Pick<TestRow, 'resultNotes' | 'reportedCli' | 'displayedCorrectly' | 'completedAt' | 'dispatchedAt'>>;

export type TestUpdate = Partial<Omit<TestRow, 'id' | 'accountId' | 'createdAt'>>;

const TEST_COLUMNS = `id, account_id, batch_id, route_id, blend_route_id, display_cli, test_country, test_number, handset_id,
  status, recurrence, scheduled_at, simulated, reported_cli, displayed_correctly, result_notes, rang, ring_ms, answer_ms,
  sip_code, failure_cause, cost::text as cost, dispatched_at, completed_at, created_at`;

export const FINAL: readonly TestStatus[] = ['completed', 'failed', 'not_tested', 'cancelled'];

/** Tests not yet dispatched (scheduled or pending) among `which` are cancelled; how many. */
async function cancelOpen(db: Db, which: ReturnType<Db>, now: Date): Promise<number> {
  const res = await db`update cli_tests set status = 'cancelled', completed_at = ${now},
      result_notes = 'Cancelled before the route was called'
    where ${which} and status in ('scheduled', 'pending')`;
  return res.count;
}

export function createCliTestsRepo(sql: Sql) {
  return {
    async addHandset(h: Omit<HandsetRow, 'createdAt'>, now: Date): Promise<HandsetRow> {
      const [row] = await sql<HandsetRow[]>`insert into cli_handsets (id, number, country, label, created_at)
        values (${h.id}, ${h.number}, ${h.country}, ${h.label}, ${now}) returning id, number, country, label, created_at`;
      return row!;
    },
    handsets: () =>
      sql<HandsetRow[]>`select id, number, country, label, created_at from cli_handsets order by country, number`,
    async removeHandset(idOrNumber: string): Promise<HandsetRow | undefined> {
      const [row] = /^[0-9a-f-]{36}$/i.test(idOrNumber)
        ? await sql<
            HandsetRow[]
          >`delete from cli_handsets where id = ${idOrNumber} returning id, number, country, label, created_at`
        : await sql<HandsetRow[]>`delete from cli_handsets where number = ${idOrNumber.replace(/^\+/, '')}
            returning id, number, country, label, created_at`;
      return row;
    },

    async insertTests(db: Db, rows: NewTest[]): Promise<void> {
      for (const r of rows) await db`insert into cli_tests ${db(r as unknown as Record<string, never>)}`;
    },
    async updateTest(db: Db, id: string, u: TestUpdate): Promise<void> {
      if (Object.keys(u).length === 0) return;
      await db`update cli_tests set ${db(u as unknown as Record<string, never>)} where id = ${id}`;
    },
    /** Takes a test for dispatch once: false when another worker (or a cancel) got there first. */
    async claim(id: string, now: Date): Promise<TestRow | undefined> {
      const [row] = await sql<TestRow[]>`update cli_tests set status = 'dispatching', dispatched_at = ${now}
        where id = ${id} and status in ('pending', 'scheduled') returning ${sql.unsafe(TEST_COLUMNS)}`;
      return row;
    },
    async test(id: string): Promise<TestRow | undefined> {
      const [row] = await sql<TestRow[]>`select ${sql.unsafe(TEST_COLUMNS)} from cli_tests where id = ${id}`;
      return row;
    },
    testsOfBatch: (batchId: string) =>
      sql<TestRow[]>`select ${sql.unsafe(TEST_COLUMNS)} from cli_tests where batch_id = ${batchId} order by id`,
    list: (
      accountId: string,
      q: {
        routeId?: string | undefined;
        blendRouteId?: string | undefined;
        status?: string | undefined;
        cursor?: string | undefined;
        limit: number;
      },
    ) =>
      sql<TestRow[]>`select ${sql.unsafe(TEST_COLUMNS)} from cli_tests where account_id = ${accountId}
        ${q.routeId ? sql`and route_id = ${q.routeId}` : sql``}
        ${q.blendRouteId ? sql`and blend_route_id = ${q.blendRouteId}` : sql``}
        ${q.status ? sql`and status = ${q.status}` : sql``}
        ${q.cursor ? sql`and id < ${q.cursor}` : sql``}
        order by id desc limit ${q.limit}`,
    due: (now: Date, limit: number) =>
      sql<TestRow[]>`select ${sql.unsafe(TEST_COLUMNS)} from cli_tests
        where status = 'scheduled' and scheduled_at <= ${now} order by scheduled_at limit ${limit}`,
    async usedThisHour(accountId: string, now: Date): Promise<number> {
      const [row] = await sql<{ n: string }[]>`select count(*) as n from cli_tests where account_id = ${accountId}
        and status <> 'cancelled' and created_at > ${now}::timestamptz - interval '1 hour'`;
      return Number(row!.n);
    },
    /** Tests waiting for or on a handset, every account: what a new batch queues behind. */
    async queued(): Promise<number> {
      const [row] = await sql<{ n: string }[]>`select count(*) as n from cli_tests
        where status in ('pending', 'dispatching', 'in_progress') and not simulated`;
      return Number(row!.n);
    },

    async insertBatch(db: Db, b: Omit<BatchRow, 'completedAt'>): Promise<void> {
      await db`insert into cli_test_batches (id, account_id, status, display_cli, route_ids, created_at)
        values (${b.id}, ${b.accountId}, ${b.status}, ${b.displayCli}, ${db.array(b.routeIds)}::uuid[], ${b.createdAt})`;
    },
    async batch(id: string): Promise<BatchRow | undefined> {
      const [row] = await sql<
        BatchRow[]
      >`select id, account_id, status, display_cli, route_ids, created_at, completed_at
        from cli_test_batches where id = ${id}`;
      return row;
    },
    batches: (accountId: string, limit: number) =>
      sql<BatchRow[]>`select id, account_id, status, display_cli, route_ids, created_at, completed_at
        from cli_test_batches where account_id = ${accountId} order by id desc limit ${limit}`,
    async runningBatch(accountId: string): Promise<string | null> {
      const [row] = await sql<
        { id: string }[]
      >`select id from cli_test_batches where account_id = ${accountId} and status = 'running'`;
      return row?.id ?? null;
    },
    /** The batch completes when none of its tests is still open. */
    async finishBatchIfDone(db: Db, batchId: string, now: Date): Promise<void> {
      await db`update cli_test_batches b set status = 'completed', completed_at = ${now}
        where b.id = ${batchId} and b.status = 'running'
          and not exists (select 1 from cli_tests where batch_id = b.id
                          and status in ('scheduled', 'pending', 'dispatching', 'in_progress'))`;
    },
    /** Cancels one test not yet dispatched; false when it was dispatched meanwhile. */
    async cancelTest(id: string, now: Date): Promise<boolean> {
      return (await cancelOpen(sql, sql`id = ${id}`, now)) > 0;
    },
    async cancelBatch(db: Db, batchId: string, now: Date): Promise<number> {
      const n = await cancelOpen(db, db`batch_id = ${batchId}`, now);
      await db`update cli_test_batches set status = 'cancelled', completed_at = ${now} where id = ${batchId} and status = 'running'`;
      return n;
    },
  };
}

export type CliTestsRepo = ReturnType<typeof createCliTestsRepo>;
