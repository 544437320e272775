import type { Logger } from 'pino';
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
export function createTxBatcher(sql: Sql, opts: { maxBatch: number; log: Logger; concurrency?: number }) {
  interface Job { key: string; fn: (tx: Db) => Promise<unknown>; resolve(v: unknown): void; reject(e: unknown): void }
  let queue: Job[] = [];
  let running = 0;
  // More than one batch in flight lets the work outside row locks of one batch overlap another's,
  // at the price of lock waits between them; on this 2-core machine the bench could not tell
  // 1 from 2 apart through other load, so the default stays 1.
  const concurrency = opts.concurrency ?? 1;

  async function alone(j: Job): Promise<void> {
    try {
      j.resolve(await sql.begin((tx) => j.fn(tx)));
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
      if (batch.length === 1) {
        await alone(batch[0]!);
      } else {
        let results: unknown[] | null = null;
        try {
          results = await sql.begin((tx) => Promise.all(batch.map((j) => j.fn(tx))));
        } catch (err) {
          opts.log.debug({ err, jobs: batch.length }, 'sms batch rolled back: jobs run one by one');
        }
        if (results) batch.forEach((j, i) => j.resolve(results[i]));
        else await Promise.all(batch.map(alone));
      }
    } finally {
      running--;
      void flush();
    }
  }

  return {
    /** `key`: the account whose rows the job locks first (batches run their jobs in key order). */
    run<T>(key: string, fn: (tx: Db) => Promise<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ key, fn, resolve: resolve as (v: unknown) => void, reject });
        void flush();
      });
    },
  };
}

export type TxBatcher = ReturnType<typeof createTxBatcher>;
