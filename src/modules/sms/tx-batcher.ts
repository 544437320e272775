import type { Logger } from 'pino';
import type postgres from 'postgres';
import type { Db, Sql } from '../../db/connection.js';

/**
 * Runs many small money transactions as one. Every send of an account locks that account's
 * ledger row until commit, so one transaction (and one WAL flush) per message caps a busy sender
 * at the disk's flush rate; here the work queued while a batch commits goes into the next one.
 * Each job's statements are pipelined on the batch's connection. When the batch fails (one job's
 * refusal, such as insufficient balance, or a deadlock with another batch) nothing of it is
 * kept and every job runs again in a transaction of its own, so each caller sees only its own
 * outcome. Jobs must touch nothing but the database (they may run twice) and resolve only after
 * commit.
 */
export function createTxBatcher<W extends Record<string, unknown> = Record<string, never>>(
  sql: Sql,
  opts: { maxBatch: number; log: Logger; concurrency?: number; writers?: { [K in keyof W]: (tx: Db, rows: W[K][]) => Promise<void> } },
) {
  type Put = <K extends keyof W>(kind: K, row: W[K]) => void;
  interface Job { key: string; fn: (tx: Db, put: Put) => Promise<unknown>; resolve(v: unknown): void; reject(e: unknown): void }
  let queue: Job[] = [];
  const writers = opts.writers;

  /**
   * Runs the jobs in `tx`, then writes the rows they put, one statement per kind for the whole
   * batch (an executor start, a statement trigger and a round trip per batch, not per message).
   */
  async function runJobs(tx: Db, jobs: Job[]): Promise<unknown[]> {
    const { put, write } = collector();
    const results = await Promise.all(jobs.map((j) => j.fn(tx, put)));
    await Promise.all(write(tx));
    return results;
  }

  /** Where a batch's jobs put their rows, and the writers' statements for them. */
  function collector() {
    const rows = new Map<keyof W, unknown[]>();
    const put: Put = (kind, row) => {
      const list = rows.get(kind);
      if (list) list.push(row);
      else rows.set(kind, [row]);
    };
    const write = (tx: Db) => (writers ? [...rows].map(([kind, list]) => writers[kind](tx, list as W[typeof kind][])) : []);
    return { put, write };
  }
  let running = 0;
  // More than one batch in flight lets the work outside row locks of one batch overlap another's,
  // at the price of lock waits between them; on this 2-core machine the bench could not tell
  // 1 from 2 apart through other load, so the default stays 1.
  const concurrency = opts.concurrency ?? 1;

  /** Connections kept for batches, one per batch in flight (their statements are pipelined). */
  const idle: postgres.ReservedSql[] = [];
  let closed = false;

  /**
   * One batch on a reserved connection with BEGIN pipelined ahead of the jobs' statements, so no
   * round trip waits for BEGIN (under load that wait was a fifth of a batch's time). BEGIN is
   * started with execute() before any job runs; an awaited query starts a microtask later, so
   * every job statement is queued on the connection after it. A failure rolls the batch back.
   */
  async function together(jobs: Job[]): Promise<unknown[]> {
    const c = idle.pop() ?? (await sql.reserve());
    let healthy = true;
    try {
      const begin = c`begin`.execute();
      const { put, write } = collector();
      // Settled, not raced: every job has finished with the connection before it is rolled back
      // or reused, so no statement of a failed job lands outside its transaction.
      const [, ...results] = valuesOf(await Promise.allSettled([begin, ...jobs.map((j) => j.fn(c, put))]));
      valuesOf(await Promise.allSettled(write(c)));
      // Only after the rows are written: a COMMIT started along with the writers' awaited queries
      // was queued ahead of them and committed the batch without its rows (tx-batcher test).
      await c`commit`;
      return results;
    } catch (err) {
      await c`rollback`.execute().catch(() => (healthy = false));
      throw err;
    } finally {
      if (healthy && !closed) idle.push(c);
      else c.release();
    }
  }

  async function alone(j: Job): Promise<void> {
    try {
      const [r] = await sql.begin((tx) => runJobs(tx, [j]));
      j.resolve(r);
    } catch (err) {
      j.reject(err);
    }
  }

  async function flush(): Promise<void> {
    if (running >= concurrency || queue.length === 0) return;
    running++;
    const batch = queue.length <= opts.maxBatch ? queue : queue.slice(0, opts.maxBatch);
    queue = queue.length <= opts.maxBatch ? [] : queue.slice(opts.maxBatch);
    // Rows are locked in key (account) order within every batch, which keeps two batches from
    // waiting on each other in most cases; a deadlock that still happens ends in the fallback.
    batch.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    try {
      let results: unknown[] | null = null;
      try {
        results = await together(batch);
      } catch (err) {
        if (batch.length === 1) batch[0]!.reject(err);
        else opts.log.debug({ err, jobs: batch.length }, 'sms batch rolled back: jobs run one by one');
      }
      if (results) batch.forEach((j, i) => j.resolve(results[i]));
      else if (batch.length > 1) await Promise.all(batch.map(alone));
    } finally {
      running--;
      void flush();
    }
  }

  return {
    /** Gives the reserved connections back to the pool (the batcher's owner is stopping). */
    close() {
      closed = true;
      for (const c of idle.splice(0)) c.release();
    },
    /**
     * `key`: the account whose rows the job locks first (batches run their jobs in key order).
     * `fn` may `put` rows for the batch's writers; they are written after every job of the batch ran.
     */
    run<T>(key: string, fn: (tx: Db, put: Put) => Promise<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ key, fn, resolve: resolve as (v: unknown) => void, reject });
        void flush();
      });
    },
  };
}

export type TxBatcher = ReturnType<typeof createTxBatcher>;

/** The values of settled promises, or the first rejection's reason thrown. */
function valuesOf(settled: PromiseSettledResult<unknown>[]): unknown[] {
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((r) => (r as PromiseFulfilledResult<unknown>).value);
}
