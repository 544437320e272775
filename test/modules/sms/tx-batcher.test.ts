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
  const job = (id: number, fail = false) => batcher.run('acct', async (tx) => {
    runs.set(id, (runs.get(id) ?? 0) + 1);
    await tx`insert into batch_probe (id, txid) values (${id}, txid_current())`;
    if (fail) await tx`select 1 / 0`;
    return id;
  });

  // The first job starts a batch alone; the next ones queue behind it and share the second.
  const first = await Promise.all([1, 2, 3, 4, 5].map((i) => job(i)));
  t.same(first, [1, 2, 3, 4, 5]);
  const txs = await sql<{ txid: string; n: number }[]>`select txid::text, count(*)::int as n from batch_probe group by txid order by n`;
  t.same(txs.map((x) => x.n), [1, 4], 'one job alone, then four in one transaction');

  const results = await Promise.allSettled([10, 11, 12, 13].map((i) => job(i, i === 12)));
  t.same(results.map((r) => r.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
  t.match((results[2] as PromiseRejectedResult).reason, { message: /division by zero/ });
  const kept = await sql<{ id: number }[]>`select id from batch_probe where id >= 10 order by id`;
  t.same(kept.map((r) => r.id), [10, 11, 13], 'the failed job left nothing; the others committed once');
  t.equal(runs.get(11), 2, 'a job of the rolled-back batch ran again alone');
});
