import type { Logger } from 'pino';
import type postgres from 'postgres';
import type { Db, Sql } from '../../db/connection.js';

/**
 * Runs many small money transactions as one. Every send of an account locks that account's
 * ledger row until commit, so one transaction (and one WAL flush) per message caps a busy sender
 * at the disk's flush rate; here the work queued while a batch commits goes into the next one.
 * Each job's statements are pipelined on the batch's connection, and the items jobs pass to
 * `call` go in one set-based statement per kind (a ledger batch function). A job refused by such
 * a call without having written anything (JobRefused) fails alone and the batch commits. When the
 * batch fails otherwise (a statement's error, such as a single-item function's insufficient
 * balance, or a deadlock with another batch) nothing of it is kept and every job runs again in a
 * transaction of its own, so each caller sees only its own outcome. Jobs must touch nothing but
 * the database (they may run twice) and resolve only after commit.
 */
export function createTxBatcher<
  W extends Record<string, unknown> = Record<string, never>,
  C extends Record<string, { in: unknown; out: unknown }> = Record<string, never>,
>(
  sql: Sql,
  opts: {
    maxBatch: number;
    log: Logger;
    concurrency?: number;
    writers?: { [K in keyof W]: (tx: Db, rows: W[K][]) => Promise<void> };
    /** Set-based calls: the items the jobs pass at one point go in one call, which returns one result per item, in order. */
    calls?: { [K in keyof C]: (tx: Db, items: C[K]['in'][]) => Promise<C[K]['out'][]> };
  },
) {
  type Put = <K extends keyof W>(kind: K, row: W[K]) => void;
  type Call = <K extends keyof C>(kind: K, item: C[K]['in']) => Promise<C[K]['out']>;
  interface Job {
    key: string;
    fn: (tx: Db, put: Put, call: Call) => Promise<unknown>;
    resolve(v: unknown): void;
    reject(e: unknown): void;
  }
  type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };
  let queue: Job[] = [];
  const writers = opts.writers;

  /** A job alone in `tx` (the fallback); a refusal is thrown as its reason. */
  async function runJob(tx: Db, job: Job): Promise<unknown> {
    const { putFor, write } = collector();
    const result = await job.fn(tx, putFor(0), caller(tx)).catch((err: unknown) => {
      throw err instanceof JobRefused ? err.reason : err;
    });
    await Promise.all(write(tx, [0]));
    return result;
  }

  /**
   * Where a batch's jobs put their rows (a list per job, so a refused job's rows are dropped), and
   * the writers' statements for the rows of the jobs kept: one statement per kind for the whole
   * batch (an executor start, a statement trigger and a round trip per batch, not per message).
   */
  function collector() {
    const perJob = new Map<number, Map<keyof W, unknown[]>>();
    const putFor =
      (i: number): Put =>
      (kind, row) => {
        let rows = perJob.get(i);
        if (!rows) perJob.set(i, (rows = new Map()));
        const list = rows.get(kind);
        if (list) list.push(row);
        else rows.set(kind, [row]);
      };
    const write = (tx: Db, kept: number[]) => {
      if (!writers) return [];
      const all = new Map<keyof W, unknown[]>();
      for (const i of kept) {
        for (const [kind, list] of perJob.get(i) ?? []) {
          const into = all.get(kind);
          if (into) into.push(...list);
          else all.set(kind, [...list]);
        }
      }
      return [...all].map(([kind, list]) => writers[kind](tx, list as W[typeof kind][]));
    };
    return { putFor, write };
  }

  /**
   * The batch's `call`: items passed while the jobs run up to their next await (a microtask) go
   * in one call per kind; later ones in the next round.
   */
  function caller(tx: Db): Call {
    const calls = opts.calls;
    let waiting = new Map<keyof C, { item: unknown; resolve(v: unknown): void; reject(e: unknown): void }[]>();
    const round = () => {
      const now = waiting;
      waiting = new Map();
      for (const [kind, list] of now) {
        const call = calls![kind];
        call(
          tx,
          list.map((w) => w.item as C[typeof kind]['in']),
        ).then(
          (outs) => list.forEach((w, i) => w.resolve(outs[i])),
          (err: unknown) => list.forEach((w) => w.reject(err)),
        );
      }
    };
    return (kind, item) =>
      new Promise((resolve, reject) => {
        if (!calls) throw new Error('tx-batcher: no calls configured');
        if (waiting.size === 0) queueMicrotask(round);
        const list = waiting.get(kind);
        const w = { item, resolve: resolve as (v: unknown) => void, reject };
        if (list) list.push(w);
        else waiting.set(kind, [w]);
      });
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
  async function together(jobs: Job[]): Promise<Outcome[]> {
    const c = idle.pop() ?? (await sql.reserve());
    let healthy = true;
    try {
      const begin = c`begin`.execute();
      const { putFor, write } = collector();
      const call = caller(c);
      // Settled, not raced: every job has finished with the connection before it is rolled back
      // or reused, so no statement of a failed job lands outside its transaction.
      const [started, ...settled] = await Promise.allSettled([begin, ...jobs.map((j, i) => j.fn(c, putFor(i), call))]);
      valuesOf([started!, ...settled.filter((r) => r.status === 'fulfilled' || !(r.reason instanceof JobRefused))]);
      const kept = settled.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
      valuesOf(await Promise.allSettled(write(c, kept)));
      // Only after the rows are written: a COMMIT started along with the writers' awaited queries
      // was queued ahead of them and committed the batch without its rows (tx-batcher test).
      await c`commit`;
      return settled.map((r): Outcome =>
        r.status === 'fulfilled' ? { ok: true, value: r.value } : { ok: false, error: (r.reason as JobRefused).reason },
      );
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
      j.resolve(await sql.begin((tx) => runJob(tx, j)));
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
      let results: Outcome[] | null = null;
      try {
        results = await together(batch);
      } catch (err) {
        if (batch.length === 1) batch[0]!.reject(err instanceof JobRefused ? err.reason : err);
        else opts.log.debug({ err, jobs: batch.length }, 'sms batch rolled back: jobs run one by one');
      }
      if (results)
        batch.forEach((j, i) => (results[i]!.ok ? j.resolve(results[i]!.value) : j.reject(results[i]!.error)));
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
     * It may `call` a set-based function with one item (see `calls`). A job that throws a
     * `JobRefused` fails alone (the caller gets its reason) and the batch goes on: it must have
     * written nothing (a refused item of a call posts nothing); the rows it put are dropped.
     */
    run<T>(key: string, fn: (tx: Db, put: Put, call: Call) => Promise<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ key, fn, resolve: resolve as (v: unknown) => void, reject });
        void flush();
      });
    },
  };
}

export type TxBatcher = ReturnType<typeof createTxBatcher>;

/** Thrown by a job refused without writing anything: the job fails with `reason`, its batch is kept. */
export class JobRefused extends Error {
  constructor(readonly reason: unknown) {
    super(reason instanceof Error ? reason.message : String(reason));
    this.name = 'JobRefused';
  }
}

/** The values of settled promises, or the first rejection's reason thrown. */
function valuesOf(settled: PromiseSettledResult<unknown>[]): unknown[] {
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((r) => (r as PromiseFulfilledResult<unknown>).value);
}
