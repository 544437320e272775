import { createWriteStream, createReadStream, mkdirSync, rmSync, type ReadStream } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Sql } from '../../db/connection.js';
import { AppError, conflict, notFound, validationError } from '../../http/errors.js';
import { createCsvWriter } from '../../http/csv.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { emit } from '../../webhooks/emit.js';
import { cdrCsv, type CdrFilter, type CdrRow } from '../cdrs/index.js';
import { CSV_COLUMNS, CSV_NUMERIC, presentTransaction } from './service.js';
import type { BillingRepo, TransactionFilter, TransactionRow } from './repo.js';

export type ExportKind = 'transactions' | 'cdrs' | 'switch_cdrs';

/**
 * The rows of an export kind another module owns (the Switch call records): its CSV columns and
 * the rows of one export, in order; `stop` says the file is full (truncated past MAX_EXPORT_ROWS).
 */
export interface ExportSource {
  columns: readonly string[];
  numeric?: readonly string[] | undefined;
  rows(e: { id: string; accountId: string; params: ExportParams }, max: number): AsyncIterable<Record<string, unknown>>;
}

/** The kinds GET /billing/exports lists: its own. */
const BILLING_KINDS: readonly ExportKind[] = ['transactions', 'cdrs'];

export interface ExportParams {
  from?: string | undefined;
  to?: string | undefined;
  /** transactions: entry type; cdrs: voice or sms. */
  type?: string | undefined;
  /** Another source's own filters (kept as `requestedScope`). */
  [filter: string]: unknown;
}

interface ExportRow {
  id: string;
  accountId: string;
  kind: ExportKind;
  params: ExportParams;
  phase: 'queued' | 'running' | 'completed' | 'failed';
  rowCount: number | null;
  truncated: boolean;
  file: string | null;
  error: string | null;
  expiresAt: Date;
  createdAt: Date;
  completedAt: Date | null;
}

/** At most this many exports of an account run at once (as Switch exports). */
export const MAX_RUNNING = 3;
/** Rows one export file holds; past it the file is marked truncated. */
export const MAX_EXPORT_ROWS = 1_000_000;
const KEEP_DAYS = 7;
const BATCH = 5000;

const iso = (d: Date | null) => d?.toISOString() ?? null;

function present(e: ExportRow) {
  const done = e.phase === 'completed';
  return {
    id: e.id,
    kind: e.kind,
    phase: e.phase,
    status: e.phase,
    requestedScope: e.params,
    requestedAt: e.createdAt.toISOString(),
    recordCount: done ? e.rowCount : null,
    rowCount: e.rowCount,
    truncated: e.truncated,
    error: e.error,
    completedAt: iso(e.completedAt),
    expiresAt: e.expiresAt.toISOString(),
    downloadable: done,
    downloadUrl: done ? `/billing/exports/${e.id}/download` : null,
    createdAt: e.createdAt.toISOString(),
  };
}

/**
 * Billing exports: CSV files of transactions or call and message records past the inline CSV
 * limits, written in the background under the state directory and downloaded once completed.
 */
export function createBillingExports(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  stateDir: string;
  repo: BillingRepo;
  cdrs: { listCdrs(f: CdrFilter): Promise<CdrRow[]> };
  /** Kinds other modules write (an instance made by that module, sharing the table and its limits). */
  sources?: Partial<Record<ExportKind, ExportSource>>;
}) {
  const { sql, clock, log } = deps;
  const dir = join(deps.stateDir, 'exports');
  const cols = sql`id, account_id, kind, params, phase, row_count, truncated, file, error, expires_at, created_at, completed_at`;
  const inFlight = new Set<Promise<void>>();

  async function writeRows(e: ExportRow, write: (row: Record<string, unknown>) => Promise<void>): Promise<number> {
    let n = 0;
    const source = deps.sources?.[e.kind];
    if (source) {
      for await (const row of source.rows(e, MAX_EXPORT_ROWS)) {
        await write(row);
        if (++n >= MAX_EXPORT_ROWS) break;
      }
      return n;
    }
    if (e.kind === 'transactions') {
      const f: TransactionFilter = {
        type: e.params.type as TransactionFilter['type'],
        from: e.params.from as string | undefined,
        to: e.params.to as string | undefined,
      };
      await deps.repo.eachTransactionBatch(e.accountId, f, MAX_EXPORT_ROWS, async (rows: TransactionRow[]) => {
        for (const r of rows) {
          await write(presentTransaction(r));
          n++;
        }
      });
      return n;
    }
    let cursor: string | undefined;
    while (n < MAX_EXPORT_ROWS) {
      const rows = await deps.cdrs.listCdrs({
        viewerId: e.accountId,
        from: e.params.from ? new Date(e.params.from as string) : undefined,
        to: e.params.to ? new Date(e.params.to as string) : undefined,
        kind: e.params.type as CdrFilter['kind'],
        cursor,
        limit: Math.min(BATCH, MAX_EXPORT_ROWS - n),
      });
      const shape = cdrCsv(e.accountId);
      for (const r of rows) await write(shape.row(r));
      n += rows.length;
      if (rows.length < BATCH) break;
      cursor = rows[rows.length - 1]!.id;
    }
    return n;
  }

  async function run(e: ExportRow) {
    const file = join(dir, `${e.id}.csv`);
    try {
      mkdirSync(dir, { recursive: true });
      const out = createWriteStream(file);
      const cdr = cdrCsv(e.accountId);
      const source = deps.sources?.[e.kind];
      const csv = source
        ? createCsvWriter(source.columns, source.numeric ?? [])
        : e.kind === 'transactions'
          ? createCsvWriter(CSV_COLUMNS, CSV_NUMERIC)
          : createCsvWriter(cdr.columns, cdr.numeric);
      csv.pipe(out);
      const n = await writeRows(e, async (row) => {
        if (!csv.write(row)) await once(csv, 'drain');
      });
      csv.end();
      await once(out, 'finish');
      await sql.begin(async (tx) => {
        await tx`update billing_exports set phase = 'completed', row_count = ${n}, truncated = ${n >= MAX_EXPORT_ROWS},
                 file = ${file}, completed_at = ${clock.now()} where id = ${e.id}`;
        await emit(tx, {
          accountId: e.accountId,
          event: 'billing.export_completed',
          data: { exportId: e.id, kind: e.kind, rowCount: n, downloadUrl: `/billing/exports/${e.id}/download` },
          at: clock.now(),
        });
      });
    } catch (err) {
      log.warn({ err, exportId: e.id }, 'billing export failed');
      rmSync(file, { force: true });
      await sql`update billing_exports set phase = 'failed', error = 'the export could not be written',
                completed_at = ${clock.now()} where id = ${e.id}`;
    }
  }

  /** Runs an export in the background; `stop` waits for those in flight. */
  function start(e: ExportRow) {
    const p = run(e).finally(() => inFlight.delete(p));
    inFlight.add(p);
  }

  async function own(accountId: string, id: string) {
    const [row] = await sql<
      ExportRow[]
    >`select ${cols} from billing_exports where id = ${id} and account_id = ${accountId}`;
    if (!row) throw notFound('Export');
    return row;
  }

  return {
    async create(accountId: string, kind: ExportKind, params: ExportParams) {
      if (params.from && params.to && new Date(params.from) >= new Date(params.to))
        throw validationError([{ path: 'from', message: 'must be before "to"' }]);
      const now = clock.now();
      const row = await sql.begin(async (tx) => {
        await tx`select pg_advisory_xact_lock(hashtextextended(${`billing-export:${accountId}`}, 0))`;
        const [n] = await tx<{ n: number }[]>`
          select count(*)::int as n from billing_exports where account_id = ${accountId} and phase in ('queued', 'running')`;
        if (n!.n >= MAX_RUNNING)
          throw new AppError('TOO_MANY_EXPORTS', `At most ${MAX_RUNNING} exports run at once; wait for one to finish`);
        const [row] = await tx<ExportRow[]>`
          insert into billing_exports (id, account_id, kind, params, phase, expires_at, created_at)
          values (${newId()}, ${accountId}, ${kind}, ${tx.json(params as never)}, 'running',
                  ${new Date(now.getTime() + KEEP_DAYS * 86_400_000)}, ${now})
          returning ${cols}`;
        return row!;
      });
      start(row);
      return present(row);
    },

    /** The latest 25 exports of `kinds` (default: the billing kinds). */
    async list(accountId: string, kinds: readonly ExportKind[] = BILLING_KINDS) {
      return (
        await sql<ExportRow[]>`select ${cols} from billing_exports
          where account_id = ${accountId} and kind = any(${kinds as string[]}) order by id desc limit 25`
      ).map(present);
    },

    /** One export of the account; 404 when unknown (or, with `kinds`, of another kind). */
    async get(accountId: string, id: string, kinds?: readonly ExportKind[]) {
      const e = await own(accountId, id);
      if (kinds && !kinds.includes(e.kind)) throw notFound('Export');
      return present(e);
    },

    async download(accountId: string, id: string): Promise<{ stream: ReadStream; name: string }> {
      const e = await own(accountId, id);
      if (e.phase !== 'completed' || !e.file) throw conflict(`The export is ${e.phase}`);
      return { stream: createReadStream(e.file), name: `${e.kind}-${e.id}.csv` };
    },

    /** At start: exports a dead daemon left running are failed; expired exports and their files go. */
    async housekeeping(startup = false) {
      const now = clock.now();
      if (startup)
        await sql`update billing_exports set phase = 'failed', error = 'interrupted by a restart', completed_at = ${now}
                  where phase in ('queued', 'running') and created_at < ${new Date(now.getTime() - 3_600_000)}`;
      const gone = await sql<{ file: string | null }[]>`
        delete from billing_exports where expires_at <= ${now} returning file`;
      for (const g of gone) if (g.file) rmSync(g.file, { force: true });
    },

    async stop() {
      await Promise.all([...inFlight]);
    },
  };
}

export type BillingExports = ReturnType<typeof createBillingExports>;
