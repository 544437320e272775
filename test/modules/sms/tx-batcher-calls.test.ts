import t from 'tap';
import pino from 'pino';
import { createTxBatcher, JobRefused } from '../../../src/modules/sms/tx-batcher.js';
import { createTestDatabase } from '../../helpers/db.js';

/**
 * Items the jobs of a batch pass to `call` go in one set-based call; a job refused with
 * JobRefused fails alone (its rows dropped) while the rest of its batch commits.
 */
t.test('calls of a batch go in one call; a refused job fails alone and the batch commits', async (t) => {
  const { sql } = await createTestDatabase(t);
  await sql`create table call_rows (id int primary key, txid bigint not null)`;
  const calls: number[][] = [];
  const batcher = createTxBatcher<{ row: { id: number } }, { double: { in: number; out: number } }>(sql, {
    maxBatch: 8,
    log: pino({ level: 'silent' }),
    writers: {
      row: async (tx, rows) => {
        await tx`insert into call_rows (id, txid) select id, txid_current() from unnest(${rows.map((r) => r.id)}::int[]) as u(id)`;
      },
    },
    calls: {
      // Odd items are refused (-1), as a ledger batch refuses an item it cannot pay.
      double: async (tx, items) => {
        calls.push(items);
        const [row] = await tx<
          { r: number[] }[]
        >`select array(select case when i % 2 = 0 then i * 2 else -1 end from unnest(${items}::int[]) as i) as r`;
        return row!.r;
      },
    },
  });
  const runs = new Map<number, number>();
  const job = (id: number) =>
    batcher.run('acct', async (_tx, put, call) => {
      runs.set(id, (runs.get(id) ?? 0) + 1);
      const r = await call('double', id);
      if (r < 0) throw new JobRefused(new Error(`refused ${id}`));
      put('row', { id });
      return r;
    });

  // The first job starts a batch alone; the next ones queue behind it and share the second.
  const results = await Promise.allSettled([0, 2, 3, 4, 6].map(job));
  t.same(
    results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)),
    [0, 4, 'refused 3', 8, 12],
    'each caller gets its own result; the refused one its reason',
  );
  t.same(calls, [[0], [2, 3, 4, 6]], 'one call for the four jobs of the second batch');
  t.same([...runs.values()], [1, 1, 1, 1, 1], 'no job ran twice: the refusal did not roll the batch back');
  const txs = await sql<
    { ids: number[] }[]
  >`select array_agg(id order by id) as ids from call_rows group by txid order by min(id)`;
  t.same(
    txs.map((x) => x.ids),
    [[0], [2, 4, 6]],
    "the kept jobs' rows in one transaction, none of the refused job",
  );
  batcher.close();
});

t.test('a refused job alone and a failing call', async (t) => {
  const { sql } = await createTestDatabase(t);
  const batcher = createTxBatcher<Record<string, never>, { check: { in: number; out: number } }>(sql, {
    maxBatch: 8,
    log: pino({ level: 'silent' }),
    calls: {
      check: async (tx, items) => {
        await tx`select 1 / ${items.includes(0) ? 0 : 1}`;
        return items;
      },
    },
  });
  await t.rejects(
    batcher.run('a', async () => {
      throw new JobRefused(Object.assign(new Error('Insufficient balance: 0'), { code: 'SVC01' }));
    }),
    { code: 'SVC01', message: 'Insufficient balance: 0' },
    'a batch of one refused job rejects with the reason',
  );
  const results = await Promise.allSettled(
    [5, 0, 7].map((i) => batcher.run('a', (_tx, _put, call) => call('check', i))),
  );
  t.same(
    results.map((r) => r.status),
    ['fulfilled', 'rejected', 'fulfilled'],
    'a call that fails fails the batch; run one by one, only the job whose item fails sees the error',
  );
  batcher.close();
});
