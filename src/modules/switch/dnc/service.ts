import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, rm, stat, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Logger } from 'pino';
import type { Sql } from '../../../db/connection.js';
import { csvBatches } from '../../../http/csv-body.js';
import { createCsvWriter } from '../../../http/csv.js';
import { AppError, conflict, notFound, validationError } from '../../../http/errors.js';
import type { Clock } from '../../../platform/clock.js';
import { isE164Digits } from '../../../platform/e164.js';
import { newId } from '../../../platform/ids.js';
import type { ApplicationService } from '../../application/service.js';
import type { DncService } from '../../dnc/index.js';
import { digitsOf } from '../../dnc/service.js';
import { honored, type DncGate } from './gate.js';
import { createSwitchDncRepo, type HitRow, type ScrubCheckpoint, type ScrubCounts, type ScrubRow } from './repo.js';

/** Spec "Further operations": a DNC scrub file holds up to 500,000 numbers. */
export const SCRUB_MAX_NUMBERS = 500_000;
/** 500,000 lines of a number and a note fit well within this; a larger upload is refused while it streams. */
export const SCRUB_MAX_BYTES = 32 * 1024 * 1024;
/** Scrubs an account may have queued or running at once. */
export const SCRUB_MAX_OPEN = 2;
/** Customers whose override one PATCH sets. */
export const HONOR_MAX_CUSTOMERS = 100;
const SCRUB_BATCH = 5000;
const EXPORT_PAGE = 5000;
const RECENT_MS = 30 * 86_400_000;
/** A scrub cut short by this daemon stopping: left open, it resumes when the daemon starts again. */
class ScrubStopped extends Error {
  constructor() {
    super('stopped: the exchange shut down; the scrub resumes when it starts again');
  }
}

/** A scrub whose uploaded file is no longer where its daemon keeps it: it cannot go on. */
class ScrubFileGone extends Error {
  constructor() {
    super('interrupted: the uploaded file is gone from the exchange that received it; upload the file again');
  }
}

/** Another daemon's open scrub silent this long was left by a daemon that has not come back (a batch takes seconds). */
const SCRUB_STALE_SECONDS = 3600;
const LIST_HEADER = 'number\n';

export type ScrubList = 'clean' | 'listed';

const scrubView = (r: ScrubRow) => ({
  id: r.id,
  phase: r.phase,
  fileBytes: Number(r.fileBytes),
  counts: { total: r.total, listed: r.listed, clean: r.clean, invalid: r.invalid },
  truncated: r.truncated,
  maxNumbers: SCRUB_MAX_NUMBERS,
  error: r.error,
  createdAt: r.createdAt.toISOString(),
  finishedAt: r.finishedAt?.toISOString() ?? null,
  downloads:
    r.phase === 'done'
      ? {
          clean: `/api/v1/switch/dnc/scrub/${r.id}?download=clean`,
          listed: `/api/v1/switch/dnc/scrub/${r.id}?download=listed`,
        }
      : null,
});

const hitView = (r: HitRow) => ({
  id: r.id,
  customerId: r.customerId,
  channel: r.channel,
  number: r.numberMasked,
  matchedBy: r.entryKind,
  at: r.createdAt.toISOString(),
});

/** Writes `text` and resolves once it is handed to the file (a checkpoint counts only flushed bytes). */
const writeFlushed = (out: WriteStream, text: string) =>
  new Promise<void>((resolve, reject) => {
    if (text === '') return resolve();
    out.write(text, (err) => (err ? reject(err) : resolve()));
  });

const closeFile = (out: WriteStream) =>
  new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));

/** The file's size, or -1 when it is missing. */
const sizeOf = async (path: string) => (await stat(path).catch(() => null))?.size ?? -1;

const FRESH: ScrubCheckpoint = {
  counts: { total: 0, listed: 0, clean: 0, invalid: 0, truncated: false },
  cleanBytes: 0,
  listedBytes: 0,
};

/**
 * The Switch's DNC operations over the dnc module's store of its account (no copy of the list):
 * honor settings, hits, customers, check, import and export, and scrub jobs whose files live under
 * `<state>/switch-dnc-scrubs/<account>/<id>/`.
 */
export function createSwitchDncService(deps: {
  sql: Sql;
  log: Logger;
  clock: Clock;
  stateDir: string;
  /** This daemon's lasting id (src/platform/node-id.ts): the scrubs whose files its state directory holds. */
  node: string;
  dnc: Pick<DncService, 'list' | 'check' | 'import'>;
  application: Pick<ApplicationService, 'list' | 'get'>;
  gate: DncGate;
}) {
  const { sql, log, clock, dnc, gate } = deps;
  const repo = createSwitchDncRepo(sql);
  const root = join(deps.stateDir, 'switch-dnc-scrubs');
  const dirOf = (accountId: string, id: string) => join(root, accountId, id);
  // Jobs of this daemon: stop() waits for them to end, each aborted at its next batch.
  const jobs = new Set<Promise<void>>();
  // Renewed at each start: the jobs a stop paused resume under a fresh one.
  let abort = new AbortController();

  const honorOf = async (accountId: string) => {
    const h = await repo.honor(accountId);
    return { calls: h?.calls ?? false, sms: h?.sms ?? false, overrides: h?.overrides ?? new Map<string, boolean>(), h };
  };

  /** The customer, a sub-account of `accountId`, else 404 (its own id included). */
  async function customer(accountId: string, id: string) {
    if (id === accountId) throw notFound('Customer');
    try {
      return await deps.application.get(accountId, id);
    } catch (err) {
      if (err instanceof AppError && err.code === 'NOT_FOUND') throw notFound('Customer');
      throw err;
    }
  }

  /**
   * Where a scrub starts: from its checkpoint when both lists still hold at least the bytes it
   * recorded (cut back to them), else from the first row with empty lists.
   */
  async function startingPoint(dir: string, from: ScrubCheckpoint): Promise<ScrubCheckpoint> {
    const clean = join(dir, 'clean.csv');
    const listed = join(dir, 'listed.csv');
    if (
      from.counts.total > 0 &&
      (await sizeOf(clean)) >= from.cleanBytes &&
      (await sizeOf(listed)) >= from.listedBytes
    ) {
      await truncate(clean, from.cleanBytes);
      await truncate(listed, from.listedBytes);
      return from;
    }
    return FRESH;
  }

  /**
   * Scrubs the stored upload in batches, checkpointing after each (counts and the flushed length of
   * each list), so a scrub this daemon left open when it stopped goes on from its last batch.
   */
  async function runScrub(accountId: string, id: string, from: ScrubCheckpoint = FRESH): Promise<void> {
    const dir = dirOf(accountId, id);
    const inputPath = join(dir, 'input.csv');
    let clean: WriteStream | null = null;
    let listed: WriteStream | null = null;
    let input: ReturnType<typeof createReadStream> | null = null;
    let ended = true;
    try {
      if ((await sizeOf(inputPath)) < 0) throw new ScrubFileGone();
      const at = await startingPoint(dir, from);
      const c: ScrubCounts = { ...at.counts };
      const k: ScrubCheckpoint = { counts: c, cleanBytes: at.cleanBytes, listedBytes: at.listedBytes };
      const flags = at.counts.total > 0 ? 'a' : 'w';
      clean = createWriteStream(join(dir, 'clean.csv'), { mode: 0o600, flags });
      listed = createWriteStream(join(dir, 'listed.csv'), { mode: 0o600, flags });
      input = createReadStream(inputPath);
      const out = { clean, listed };
      const write = async (cleanText: string, listedText: string) => {
        await Promise.all([writeFlushed(out.clean, cleanText), writeFlushed(out.listed, listedText)]);
        k.cleanBytes += Buffer.byteLength(cleanText);
        k.listedBytes += Buffer.byteLength(listedText);
      };
      if (at.counts.total === 0) await write(LIST_HEADER, LIST_HEADER);
      await repo.checkpoint(id, k);
      if (at.counts.total > 0) log.info({ scrubId: id, from: at.counts.total }, 'switch dnc scrub resumed');
      // Prefixes once for the run, numbers per batch by the unique index: the dnc module's
      // blockedAmong tries every prefix of every number in SQL, about 1,000 numbers a second here.
      const prefixes = new Set(await repo.prefixes(accountId));
      const underPrefix = (n: string) => {
        for (let i = 1; i <= n.length; i++) if (prefixes.has(n.slice(0, i))) return true;
        return false;
      };
      const check = async (batch: string[]) => {
        if (batch.length === 0) return;
        const hit = await repo.listedNumbersAmong(accountId, batch);
        let cleanText = '';
        let listedText = '';
        for (const n of batch) {
          if (hit.has(n) || (prefixes.size > 0 && underPrefix(n))) {
            c.listed++;
            listedText += `+${n}\n`;
          } else {
            c.clean++;
            cleanText += `+${n}\n`;
          }
        }
        await write(cleanText, listedText);
        await repo.checkpoint(id, k);
      };
      // Rows the checkpoint counted were scrubbed before the restart: read past them.
      let skip = at.counts.total;
      let batch: string[] = [];
      reading: for await (const rows of csvBatches(input)) {
        if (abort.signal.aborted) throw new ScrubStopped();
        for (const { row, cells } of rows) {
          const raw = cells[0] ?? '';
          if (row === 1 && /^[a-z_ ]+$/i.test(raw)) continue;
          if (skip > 0) {
            skip--;
            continue;
          }
          if (c.total >= SCRUB_MAX_NUMBERS) {
            c.truncated = true;
            break reading;
          }
          c.total++;
          const digits = digitsOf(raw);
          if (!isE164Digits(digits)) {
            c.invalid++;
            continue;
          }
          batch.push(digits);
          if (batch.length >= SCRUB_BATCH) {
            await check(batch);
            batch = [];
          }
        }
      }
      await check(batch);
      await Promise.all([closeFile(clean), closeFile(listed)]);
      await repo.finish(id, c, clock.now());
      log.info({ scrubId: id, ...c }, 'switch dnc scrub done');
    } catch (err) {
      clean?.destroy();
      listed?.destroy();
      if (err instanceof ScrubStopped) {
        // Left open at its last checkpoint, input kept: this daemon resumes it when it starts again.
        ended = false;
        log.info({ scrubId: id }, 'switch dnc scrub paused by shutdown');
        return;
      }
      log.warn({ err, scrubId: id }, 'switch dnc scrub failed');
      const message =
        err instanceof AppError || err instanceof ScrubFileGone ? err.message : 'the file could not be scrubbed';
      await repo.fail(id, message, clock.now()).catch((e: unknown) => log.error({ err: e }, 'scrub not marked'));
    } finally {
      input?.destroy();
      if (ended) await rm(inputPath, { force: true });
    }
  }

  /** Runs a scrub in the background, as one of this daemon's jobs (stop waits for it). */
  function launch(accountId: string, id: string, from?: ScrubCheckpoint): void {
    const job = runScrub(accountId, id, from).finally(() => jobs.delete(job));
    jobs.add(job);
  }

  return {
    /** The check at call admission and SMS send (the planes ask it). */
    gate,

    async summary(accountId: string) {
      const now = clock.now();
      const since = new Date(now.getTime() - RECENT_MS);
      const [s, h, scrubs] = await Promise.all([
        repo.summary(accountId, since),
        honorOf(accountId),
        repo.recentScrubs(accountId, 5),
      ]);
      return {
        list: { numbers: s.numbers, prefixes: s.prefixes, lastAddedAt: s.lastAddedAt?.toISOString() ?? null },
        honor: { calls: h.calls, sms: h.sms, customerOverrides: h.overrides.size },
        hits: {
          total: s.hits,
          last30Days: s.recentHits,
          voiceLast30Days: s.voiceHits,
          smsLast30Days: s.smsHits,
          lastAt: s.lastHitAt?.toISOString() ?? null,
        },
        recentScrubs: scrubs.map(scrubView),
      };
    },

    entries: (
      accountId: string,
      q: { kind?: string | undefined; search?: string | undefined; cursor?: string | undefined; limit: number },
    ) => dnc.list(accountId, q),

    async hits(
      accountId: string,
      q: { customerId?: string | undefined; channel?: string | undefined; cursor?: string | undefined; limit: number },
    ) {
      return (await repo.hits(accountId, { ...q, limit: q.limit + 1 })).map(hitView);
    },

    /** The list's answer for one number and, given a customer, whether its traffic would be refused. */
    async check(accountId: string, number: string, customerId?: string) {
      const r = await dnc.check(accountId, number);
      const h = await repo.honor(accountId);
      if (customerId === undefined) {
        return { ...r, listed: r.blocked, refused: null };
      }
      await customer(accountId, customerId);
      return {
        ...r,
        listed: r.blocked,
        refused: {
          customerId,
          voice: r.blocked && honored(h, customerId, 'voice'),
          sms: r.blocked && honored(h, customerId, 'sms'),
        },
      };
    },

    async customers(accountId: string, q: { cursor?: string | undefined; limit: number; search?: string | undefined }) {
      const page = await deps.application.list(accountId, q);
      const h = await honorOf(accountId);
      // The application list reads one row past the page to tell whether more follow.
      const shown = page.rows.slice(0, q.limit);
      const ids = shown.map((r) => r.id);
      const counts = await repo.hitCounts(accountId, ids, new Date(clock.now().getTime() - RECENT_MS));
      return {
        rows: shown.map((r) => {
          const override = h.overrides.get(r.id) ?? null;
          const n = counts.get(r.id);
          return {
            customerId: r.id,
            label: r.label,
            status: r.status,
            override,
            honored: { voice: honored(h.h, r.id, 'voice'), sms: honored(h.h, r.id, 'sms') },
            hits: { total: n?.total ?? 0, last30Days: n?.recent ?? 0, lastAt: n?.lastAt?.toISOString() ?? null },
          };
        }),
        total: page.total,
        limit: q.limit,
        nextCursor: page.rows.length > q.limit ? (shown[shown.length - 1]?.id ?? null) : null,
        hasMore: page.rows.length > q.limit,
      };
    },

    async honor(accountId: string) {
      const h = await honorOf(accountId);
      return {
        calls: h.calls,
        sms: h.sms,
        customers: [...h.overrides].map(([customerId, honor]) => ({ customerId, honor })),
        updatedAt: h.h?.updatedAt.toISOString() ?? null,
      };
    },

    async setHonor(
      accountId: string,
      patch: {
        calls?: boolean | undefined;
        sms?: boolean | undefined;
        customers?: { customerId: string; honor: boolean | null }[] | undefined;
      },
    ) {
      const customers = patch.customers ?? [];
      const seen = new Set<string>();
      customers.forEach((c, i) => {
        if (seen.has(c.customerId))
          throw validationError([{ path: `customers/${i}/customerId`, message: 'given more than once' }]);
        seen.add(c.customerId);
      });
      for (const c of customers) await customer(accountId, c.customerId);
      const now = await honorOf(accountId);
      await repo.setHonor(
        accountId,
        { calls: patch.calls ?? now.calls, sms: patch.sms ?? now.sms, customers },
        clock.now(),
      );
      // This daemon's own change applies at once; the others drop it on the trigger's NOTIFY.
      gate.settings.changed(accountId);
      return this.honor(accountId);
    },

    import: (accountId: string, body: Readable) => dnc.import(accountId, body),

    /**
     * The list as CSV, page by page from the dnc module: `entry` (a number's digits, or a prefix
     * ending with `*`, the form `import` reads back), `note`, `source`, `createdAt`.
     */
    export(accountId: string): Readable {
      async function* rows() {
        let cursor: string | undefined;
        for (;;) {
          const page = await dnc.list(accountId, { cursor, limit: EXPORT_PAGE });
          for (const e of page.slice(0, EXPORT_PAGE)) {
            yield {
              entry: e.kind === 'prefix' ? `${e.value}*` : e.value.replace(/^\+/, ''),
              note: e.note ?? '',
              source: e.source,
              createdAt: e.createdAt,
            };
          }
          if (page.length <= EXPORT_PAGE) return;
          cursor = page[EXPORT_PAGE - 1]!.id;
        }
      }
      const writer = createCsvWriter(['entry', 'note', 'source', 'createdAt'] as const);
      const out = Readable.from(rows());
      out.on('error', (err) => writer.destroy(err));
      return out.pipe(writer);
    },

    /**
     * Stores the upload (streamed to disk, at most SCRUB_MAX_BYTES), then scrubs it in the
     * background: the answer is the queued job.
     */
    async startScrub(accountId: string, body: Readable) {
      if ((await repo.openScrubs(accountId)) >= SCRUB_MAX_OPEN)
        throw conflict(`At most ${SCRUB_MAX_OPEN} scrubs run at once; wait for one to finish`);
      const id = newId();
      const dir = dirOf(accountId, id);
      await mkdir(dir, { recursive: true, mode: 0o700 });
      let bytes = 0;
      const cap = new Transform({
        transform(chunk: Buffer, _enc, done) {
          bytes += chunk.length;
          if (bytes > SCRUB_MAX_BYTES)
            return done(
              new AppError('PAYLOAD_TOO_LARGE', `A scrub file is at most ${SCRUB_MAX_BYTES / 1024 / 1024} MiB`),
            );
          done(null, chunk);
        },
      });
      try {
        await pipeline(body, cap, createWriteStream(join(dir, 'input.csv'), { mode: 0o600 }));
      } catch (err) {
        await rm(dir, { recursive: true, force: true });
        if (err instanceof AppError) throw err;
        throw err;
      }
      if (bytes === 0) {
        await rm(dir, { recursive: true, force: true });
        throw validationError([{ path: 'body', message: 'the file is empty' }]);
      }
      await repo.createScrub({ id, accountId, node: deps.node, fileBytes: bytes, at: clock.now() });
      // Read before the launch: the 202 answers the job as queued, whatever the runner has begun since.
      const created = (await repo.scrub(accountId, id))!;
      launch(accountId, id);
      return scrubView(created);
    },

    async scrub(accountId: string, id: string) {
      const r = await repo.scrub(accountId, id);
      if (!r) throw notFound('Scrub');
      return scrubView(r);
    },

    /** One result list of a finished scrub, as a file stream. */
    async scrubFile(accountId: string, id: string, list: ScrubList): Promise<{ stream: Readable; bytes: number }> {
      const r = await repo.scrub(accountId, id);
      if (!r) throw notFound('Scrub');
      if (r.phase !== 'done') throw conflict(`The scrub is ${r.phase}: its lists are ready once it is done`);
      const path = join(dirOf(accountId, id), `${list}.csv`);
      const s = await stat(path).catch(() => null);
      if (!s) throw notFound('Scrub file');
      return { stream: createReadStream(path), bytes: s.size };
    },

    /** Waits for every running scrub of this daemon (tests, and stop). */
    idle: async () => {
      while (jobs.size > 0) await Promise.all([...jobs]);
    },

    /**
     * Resumes the scrubs this daemon left open when it stopped (its state directory holds their
     * files), and fails other daemons' open scrubs silent for an hour (theirs have not come back).
     */
    async start() {
      abort = new AbortController();
      await gate.settings.start();
      const failed = await repo.failAbandoned(deps.node, SCRUB_STALE_SECONDS, clock.now());
      if (failed > 0) log.warn({ failed }, 'switch dnc scrubs of a daemon that has not come back marked failed');
      const open = await repo.claimOwn(deps.node);
      for (const o of open) launch(o.accountId, o.id, o);
      if (open.length > 0) log.info({ scrubs: open.length }, 'switch dnc scrubs resumed after a restart');
    },

    async stop() {
      abort.abort();
      await Promise.all([...jobs]);
      await gate.settings.stop();
    },
  };
}

export type SwitchDncService = ReturnType<typeof createSwitchDncService>;
