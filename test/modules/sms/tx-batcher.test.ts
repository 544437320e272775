import t from 'tap';
import pino from 'pino';
import { createTxBatcher } from '../../../src/modules/sms/tx-batcher.js';
import { createTestDatabase } from '../../helpers/db.js';

/**
 * Money transactions of concurrent sends share a commit; one job's failure rolls the batch back
 * and every job runs again alone, so only the failing caller sees an error and nothing of a
 * rolled-back batch is kept.
 */
t.test('jobs share one transaction; a failing job fails alone', async (t) => {
  const { sql } = await createTestDatabase(t);
  await sql`create table batch_probe (id int primary key, txid bigint not null)`;
  const batcher = createTxBatcher(sql, { maxBatch: 8, concurrency: 1, log: pino({ level: 'silent' }) });
  const runs = new Map<number, number>();
  const job = (id: number, fail = false) =>
    batcher.run('acct', async (tx) => {
      runs.set(id, (runs.get(id) ?? 0) + 1);
      await tx`insert into batch_probe (id, txid) values (${id}, txid_current())`;
      if (fail) await tx`select 1 / 0`;
      return id;
    });

  // The first job starts a batch alone; the next ones queue behind it and share the second.
  const first = await Promise.all([1, 2, 3, 4, 5].map((i) => job(i)));
  t.same(first, [1, 2, 3, 4, 5]);
  const txs = await sql<
    { txid: string; n: number }[]
  >`select txid::text, count(*)::int as n from batch_probe group by txid order by n`;
  t.same(
    txs.map((x) => x.n),
    [1, 4],
    'one job alone, then four in one transaction',
  );

  const results = await Promise.allSettled([10, 11, 12, 13].map((i) => job(i, i === 12)));
  t.same(
    results.map((r) => r.status),
    ['fulfilled', 'fulfilled', 'rejected', 'fulfilled'],
  );
  t.match((results[2] as PromiseRejectedResult).reason, { message: /division by zero/ });
  const kept = await sql<{ id: number }[]>`select id from batch_probe where id >= 10 order by id`;
  t.same(
    kept.map((r) => r.id),
    [10, 11, 13],
    'the failed job left nothing; the others committed once',
  );
  t.equal(runs.get(11), 2, 'a job of the rolled-back batch ran again alone');
});

/**
 * Rows the jobs put are written by the batch's writer in one statement after every job ran, in
 * the batch's transaction; when the batch rolls back, each job's rows go in again with it alone.
 */
t.test('rows put by the jobs of a batch are written together, and again alone after a rollback', async (t) => {
  const { sql } = await createTestDatabase(t);
  await sql`create table batch_rows (id int primary key, txid bigint not null)`;
  const statements: number[] = [];
  const batcher = createTxBatcher<{ row: { id: number } }>(sql, {
    maxBatch: 8,
    log: pino({ level: 'silent' }),
    writers: {
      row: async (tx, rows) => {
        statements.push(rows.length);
        await tx`insert into batch_rows (id, txid) select id, txid_current() from unnest(${rows.map((r) => r.id)}::int[]) as u(id)`;
      },
    },
  });
  const job = (id: number, fail = false) =>
    batcher.run('acct', async (tx, put) => {
      put('row', { id });
      if (fail) await tx`select 1 / 0`;
      return id;
    });

  t.same(await Promise.all([1, 2, 3, 4].map((i) => job(i))), [1, 2, 3, 4]);
  t.same(statements, [1, 3], 'the first job alone, then one statement for the three queued behind it');
  const txs = await sql<{ n: number }[]>`select count(*)::int as n from batch_rows group by txid order by n`;
  t.same(
    txs.map((x) => x.n),
    [1, 3],
    "each batch's rows in its own transaction",
  );

  statements.length = 0;
  const results = await Promise.allSettled([10, 11, 12].map((i) => job(i, i === 11)));
  t.same(
    results.map((r) => r.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  const kept = await sql<{ id: number }[]>`select id from batch_rows where id >= 10 order by id`;
  t.same(
    kept.map((r) => r.id),
    [10, 12],
    "the failed job's row is not kept; the others' are, once",
  );
});

/**
 * When a writer's statement fails, none of the batch (jobs' statements included) is kept; each
 * job then runs alone and only the one whose row fails sees the error. (A COMMIT pipelined behind
 * a statement not yet prepared overtook it and committed the jobs' rows: this caught that.)
 */
t.test('a failing writer statement rolls the whole batch back', async (t) => {
  const { sql } = await createTestDatabase(t);
  await sql`create table batch_jobs (id int primary key)`;
  await sql`create table batch_rows2 (id int primary key check (id <> 22))`;
  const batcher = createTxBatcher<{ row: { id: number } }>(sql, {
    maxBatch: 8,
    log: pino({ level: 'silent' }),
    writers: {
      row: async (tx, rows) => void (await tx`insert into batch_rows2 select unnest(${rows.map((r) => r.id)}::int[])`),
    },
  });
  const job = (id: number) =>
    batcher.run('acct', async (tx, put) => {
      await tx`insert into batch_jobs values (${id})`;
      put('row', { id });
      return id;
    });
  // A batch of one starts when the first job is queued; the next three queue behind it and share a batch.
  const results = await Promise.allSettled([1, 21, 22, 23].map(job));
  t.same(
    results.map((r) => r.status),
    ['fulfilled', 'fulfilled', 'rejected', 'fulfilled'],
  );
  t.match((results[2] as PromiseRejectedResult).reason, { message: /check constraint/ });
  t.same(
    (await sql<{ id: number }[]>`select id from batch_jobs order by id`).map((r) => r.id),
    [1, 21, 23],
    'the job statements of the failed row rolled back with it',
  );
  t.same(
    (await sql<{ id: number }[]>`select id from batch_rows2 order by id`).map((r) => r.id),
    [1, 21, 23],
  );
  batcher.close();
});
