import { createHash } from 'node:crypto';
import { createReadStream, mkdirSync, rmSync, writeFileSync, type ReadStream } from 'node:fs';
import { join } from 'node:path';
import { strToU8, zipSync, type Zippable } from 'fflate';
import { conflict, notFound } from '../../http/errors.js';
import type { CoreDeps } from '../../platform/core.js';
import { newId } from '../../platform/ids.js';
import { emit } from '../../webhooks/emit.js';
import type { ExportRow, LifecycleRepo } from './repo.js';

/**
 * One file of the archive: what the account holds of one kind. Paged readers are called until
 * they answer fewer rows than asked, up to `MAX_ROWS`.
 */
export type ExportSource =
  | { kind: 'object'; read(accountId: string): Promise<unknown> }
  | { kind: 'paged'; read(accountId: string, cursor: string | undefined, limit: number): Promise<{ id: string }[]> };

/** Rows one file of the archive holds; past it the file ends and its count says so. */
export const MAX_ROWS = 100_000;
const PAGE = 1000;
const DAY = 86_400_000;

/**
 * Data export (docs/account.md "Data export"): a background job writing a ZIP of JSON files, one
 * per source, under `<state>/account-exports/` (0600), downloadable by the account until it expires.
 */
export function createDataExports(
  deps: Pick<CoreDeps, 'config' | 'clock' | 'log'> & { repo: LifecycleRepo; sources: Record<string, ExportSource> },
) {
  const { repo, clock, log, config } = deps;
  const dir = join(config.paths.state, 'account-exports');
  const inFlight = new Set<Promise<void>>();

  const view = (e: ExportRow) => ({
    id: e.id,
    state: e.state,
    sizeBytes: e.sizeBytes === null ? null : Number(e.sizeBytes),
    sha256: e.sha256,
    files: e.sections,
    error: e.error,
    createdAt: e.createdAt.toISOString(),
    completedAt: e.completedAt?.toISOString() ?? null,
    expiresAt: e.expiresAt.toISOString(),
    downloadUrl: e.state === 'completed' ? `/account/exports/${e.id}/download` : null,
  });

  async function collect(accountId: string, source: ExportSource): Promise<{ data: unknown; rows: number }> {
    if (source.kind === 'object') {
      const data = await source.read(accountId);
      return { data, rows: Array.isArray(data) ? data.length : 1 };
    }
    const rows: unknown[] = [];
    let cursor: string | undefined;
    while (rows.length < MAX_ROWS) {
      const page = await source.read(accountId, cursor, Math.min(PAGE, MAX_ROWS - rows.length));
      rows.push(...page);
      if (page.length < PAGE) break;
      cursor = page[page.length - 1]!.id;
    }
    return { data: rows, rows: rows.length };
  }

  async function run(e: ExportRow) {
    const file = join(dir, `${e.id}.zip`);
    try {
      const files: Zippable = {};
      const sections: Record<string, number> = {};
      for (const [name, source] of Object.entries(deps.sources)) {
        const { data, rows } = await collect(e.accountId, source);
        files[`${name}.json`] = strToU8(JSON.stringify(data, null, 2));
        sections[`${name}.json`] = rows;
      }
      files['README.txt'] = strToU8(
        `Data of account ${e.accountId}, exported ${clock.now().toISOString()}.\n` +
          'One JSON file per kind of data; money is in USD as 6-place strings; times are UTC.\n' +
          'Secrets (API keys, webhook signing secrets, SIP passwords) are never exported.\n',
      );
      const zip = zipSync(files, { level: 6 });
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      writeFileSync(file, zip, { mode: 0o600 });
      const at = clock.now();
      await repo.sql.begin(async (tx) => {
        const done = {
          file,
          sizeBytes: zip.byteLength,
          sha256: createHash('sha256').update(zip).digest('hex'),
          sections,
          at,
        };
        await repo.finishExport(tx, e.id, done);
        await emit(tx, {
          accountId: e.accountId,
          event: 'account.export_completed',
          data: {
            exportId: e.id,
            sizeBytes: done.sizeBytes,
            expiresAt: e.expiresAt.toISOString(),
            downloadUrl: `/account/exports/${e.id}/download`,
          },
          at,
        });
      });
    } catch (err) {
      log.warn({ err, exportId: e.id }, 'account data export failed');
      rmSync(file, { force: true });
      await repo.failExport(e.id, clock.now(), 'the export could not be written');
    }
  }

  async function own(accountId: string, id: string) {
    const [row] = await repo.exports(accountId, id);
    if (!row) throw notFound('Export');
    return row;
  }

  return {
    async create(accountId: string, requestedBy: string) {
      const now = clock.now();
      const row = await repo.insertExport({
        id: newId(),
        accountId,
        requestedBy,
        now,
        expiresAt: new Date(now.getTime() + config.account.export_keep_days * DAY),
      });
      const p = run(row).finally(() => inFlight.delete(p));
      inFlight.add(p);
      return view(row);
    },

    list: async (accountId: string) => (await repo.exports(accountId)).map(view),
    get: async (accountId: string, id: string) => view(await own(accountId, id)),

    async download(accountId: string, id: string): Promise<{ stream: ReadStream; name: string; size: number }> {
      const e = await own(accountId, id);
      if (e.state !== 'completed' || !e.file) throw conflict(`The export is ${e.state}`);
      return { stream: createReadStream(e.file), name: `account-data-${e.id}.zip`, size: Number(e.sizeBytes) };
    },

    async remove(accountId: string, id: string) {
      const gone = await repo.deleteExport(accountId, id);
      if (!gone) {
        await own(accountId, id);
        throw conflict('The export is still running');
      }
      if (gone.file) rmSync(gone.file, { force: true });
      return { id, deleted: true };
    },

    /** Expired archives go; an export a dead daemon left running (over an hour) is failed. */
    async sweep() {
      const now = clock.now();
      for (const f of await repo.sweepExports(now, new Date(now.getTime() - 3_600_000)))
        if (f) rmSync(f, { force: true });
    },

    /** Waits for exports in flight (daemon stop; tests). */
    async settle() {
      await Promise.all([...inFlight]);
    },
  };
}

export type DataExports = ReturnType<typeof createDataExports>;
