import type { Db, Sql } from '../../../db/connection.js';
import { AppError } from '../../../http/errors.js';
import type { SheetError } from '../../../rating/index.js';

/** What a change of a sheet did, row by row (uploads, jobs and sheet versions). */
export interface SheetChangeCounts {
  rows: number;
  increases: number;
  decreases: number;
  newDestinations: number;
  removals: number;
  updates: number;
  unchanged: number;
  scheduledChanges: number;
}

/** What an applied sheet changed (the 200 answer of a small upload, a completed job's `result`). */
export interface UploadSummary extends SheetChangeCounts {
  routeId: string;
  version: number;
}

export type SheetJobStatus = 'queued' | 'parsing' | 'loading' | 'completed' | 'failed';

/** A rate sheet job as `GET /routes/{id}/rates/jobs/{jobId}` shows it. */
export interface SheetJob {
  jobId: string;
  routeId: string;
  status: SheetJobStatus;
  rowsTotal: number;
  rowsParsed: number;
  rowsLoaded: number;
  errorCount: number;
  errors: SheetError[];
  result: UploadSummary | null;
  createdAt: string;
  finishedAt: string | null;
}

/** Bad rows a job keeps; the count of all of them is `errorCount`. */
export const MAX_JOB_ERRORS = 1000;
/** A job without a heartbeat for this long belonged to a daemon that died. */
export const JOB_STALE_MS = 120_000;
export const JOB_HEARTBEAT_MS = 30_000;

interface JobRow {
  id: string;
  routeId: string;
  status: SheetJobStatus;
  rowsTotal: number;
  rowsParsed: number;
  rowsLoaded: number;
  errorCount: number;
  errors: SheetError[];
  result: UploadSummary | null;
  createdAt: Date;
  finishedAt: Date | null;
}

const present = (r: JobRow): SheetJob => ({
  jobId: r.id,
  routeId: r.routeId,
  status: r.status,
  rowsTotal: r.rowsTotal,
  rowsParsed: r.rowsParsed,
  rowsLoaded: r.rowsLoaded,
  errorCount: r.errorCount,
  errors: r.errors,
  result: r.result,
  createdAt: r.createdAt.toISOString(),
  finishedAt: r.finishedAt?.toISOString() ?? null,
});

export async function createJob(
  db: Db,
  job: { id: string; routeId: string; accountId: string; rowsTotal: number; now: Date },
): Promise<SheetJob> {
  const [row] = await db<JobRow[]>`
    insert into rate_sheet_jobs (id, route_id, account_id, rows_total, created_at)
    values (${job.id}, ${job.routeId}, ${job.accountId}, ${job.rowsTotal}, ${job.now})
    returning id, route_id, status, rows_total, rows_parsed, rows_loaded, error_count, errors, result, created_at, finished_at`;
  return present(row!);
}

/** The job if it belongs to this route of this seller. */
export async function findJob(db: Db, routeId: string, jobId: string, sellerId: string): Promise<SheetJob | undefined> {
  const [row] = await db<JobRow[]>`
    select id, route_id, status, rows_total, rows_parsed, rows_loaded, error_count, errors, result, created_at, finished_at
    from rate_sheet_jobs
    where id = ${jobId} and route_id = ${routeId} and account_id = ${sellerId}`;
  return row === undefined ? undefined : present(row);
}

/** The seller's upload jobs of a route, newest first; offset-paged. */
export async function listJobs(db: Db, routeId: string, sellerId: string, q: { limit: number; offset: number }) {
  const rows = await db<(JobRow & { total: string })[]>`
    select id, route_id, status, rows_total, rows_parsed, rows_loaded, error_count, errors, result, created_at, finished_at,
      count(*) over () as total
    from rate_sheet_jobs
    where route_id = ${routeId} and account_id = ${sellerId}
    order by id desc limit ${q.limit} offset ${q.offset}`;
  return {
    rows: rows.map(present),
    total: rows.length === 0 ? 0 : Number(rows[0]!.total),
    limit: q.limit,
    offset: q.offset,
  };
}

export interface JobProgress {
  status?: SheetJobStatus;
  rowsTotal?: number;
  rowsParsed?: number;
  rowsLoaded?: number;
}

export async function updateJob(db: Db, id: string, p: JobProgress): Promise<void> {
  await db`
    update rate_sheet_jobs set
      status = coalesce(${p.status ?? null}::text, status),
      rows_total = coalesce(${p.rowsTotal ?? null}::int, rows_total),
      rows_parsed = greatest(rows_parsed, coalesce(${p.rowsParsed ?? null}::int, 0)),
      rows_loaded = greatest(rows_loaded, coalesce(${p.rowsLoaded ?? null}::int, 0)),
      heartbeat_at = now()
    where id = ${id} and finished_at is null`;
}

export async function finishJob(
  db: Db,
  id: string,
  end:
    | { ok: true; result: UploadSummary; rows: number }
    | { ok: false; errors: readonly SheetError[]; errorCount: number },
  now: Date,
): Promise<void> {
  if (end.ok) {
    await db`
      update rate_sheet_jobs set status = 'completed', rows_parsed = ${end.rows}, rows_loaded = ${end.rows},
        result = ${db.json(end.result as never)}, finished_at = ${now}, heartbeat_at = now()
      where id = ${id}`;
  } else {
    await db`
      update rate_sheet_jobs set status = 'failed', error_count = ${end.errorCount},
        errors = ${db.json(end.errors.slice(0, MAX_JOB_ERRORS) as never)}, finished_at = ${now}, heartbeat_at = now()
      where id = ${id}`;
  }
}

export async function heartbeat(db: Db, ids: readonly string[]): Promise<void> {
  if (ids.length > 0)
    await db`update rate_sheet_jobs set heartbeat_at = now() where id in ${db(ids as string[])} and finished_at is null`;
}

/**
 * Fails the jobs of daemons that died mid-way (their sheet was only in that daemon's memory).
 * Heartbeats are the database's time, so staleness is real elapsed time whatever the clock.
 */
export async function failStaleJobs(sql: Sql, now: Date): Promise<number> {
  const rows = await sql`
    update rate_sheet_jobs set status = 'failed', finished_at = ${now}, error_count = 1,
      errors = ${sql.json([{ line: 0, reason: 'interrupted: the daemon loading the sheet stopped; upload it again' }])}
    where finished_at is null and heartbeat_at < now() - make_interval(secs => ${JOB_STALE_MS / 1000})`;
  return rows.count;
}

/**
 * Bounds rate sheet uploads in progress on this daemon, per account and in all: a sheet is held
 * in memory while it is parsed and planned, so the bound is on this process's memory.
 */
export function createUploadGate(limits: { perAccount: number; total: number }) {
  const perAccount = new Map<string, number>();
  let total = 0;
  return {
    /** Takes a slot or throws 429; call the returned function exactly once when the upload ends. */
    acquire(accountId: string): () => void {
      const mine = perAccount.get(accountId) ?? 0;
      if (mine >= limits.perAccount) {
        throw tooMany(
          `At most ${limits.perAccount} rate sheet upload${limits.perAccount === 1 ? '' : 's'} per account at once; retry when the one in progress has finished`,
        );
      }
      if (total >= limits.total) throw tooMany('Too many rate sheet uploads in progress; retry shortly');
      perAccount.set(accountId, mine + 1);
      total++;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        total--;
        const left = (perAccount.get(accountId) ?? 1) - 1;
        if (left === 0) perAccount.delete(accountId);
        else perAccount.set(accountId, left);
      };
    },
  };
}

const RETRY_AFTER_SECONDS = 5;
const tooMany = (message: string) =>
  new AppError('RATE_LIMITED', message, undefined, { 'retry-after': String(RETRY_AFTER_SECONDS) });
