import type { Readable } from 'node:stream';
import type { Sql } from '../../db/connection.js';
import { csvBatches } from '../../http/csv-body.js';
import { notFound, validationError, type ErrorDetail } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { isE164Digits } from '../../platform/e164.js';
import { newId } from '../../platform/ids.js';
import { createDncRepo, type DncInsert, type DncRow } from './repo.js';

/** A DNC import file holds up to 500,000 numbers (spec "Further operations": a DNC scrub file). */
export const DNC_IMPORT_MAX = 500_000;
const BATCH = 5000;
const ERRORS_KEPT = 100;

/** `+44 7700-900 123` → `447700900123`: the API's E.164 form without the '+' and separators. */
export function digitsOf(input: string): string {
  const s = input.replace(/[\s\-().]/g, '');
  if (s.startsWith('+')) return s.slice(1);
  if (s.startsWith('00')) return s.slice(2);
  return s;
}

const PREFIX = /^[1-9]\d{0,14}$/;

/** One value of a list: a whole E.164 number, or a prefix (given in `prefixes`, or ending with `*` in a file). */
export function parseEntry(
  raw: string,
  kind: 'number' | 'prefix',
): { ok: true; kind: 'number' | 'prefix'; value: string } | { ok: false; message: string } {
  const starred = raw.trim().endsWith('*');
  const k = starred ? 'prefix' : kind;
  const v = digitsOf(starred ? raw.trim().slice(0, -1) : raw);
  if (k === 'number') {
    return isE164Digits(v) ? { ok: true, kind: k, value: v } : { ok: false, message: 'must be an E.164 number' };
  }
  return PREFIX.test(v)
    ? { ok: true, kind: k, value: v }
    : { ok: false, message: 'must be a dial prefix of 1 to 15 digits' };
}

export interface DncView {
  id: string;
  kind: 'number' | 'prefix';
  value: string;
  note: string | null;
  source: 'api' | 'import';
  createdAt: string;
}

const view = (r: DncRow): DncView => ({
  id: r.id,
  kind: r.kind,
  value: `${r.kind === 'number' ? '+' : ''}${r.value}`,
  note: r.note,
  source: r.source,
  createdAt: r.createdAt.toISOString(),
});

export function createDncService(deps: { sql: Sql; clock: Clock }) {
  const repo = createDncRepo(deps.sql);

  return {
    async add(
      accountId: string,
      input: { numbers?: string[] | undefined; prefixes?: string[] | undefined; note?: string | undefined },
    ) {
      const problems: ErrorDetail[] = [];
      const rows: DncInsert[] = [];
      const seen = new Set<string>();
      for (const [field, kind, list] of [
        ['numbers', 'number', input.numbers ?? []],
        ['prefixes', 'prefix', input.prefixes ?? []],
      ] as const) {
        list.forEach((raw, i) => {
          const e = parseEntry(raw, kind);
          if (!e.ok) return problems.push({ path: `${field}/${i}`, message: e.message });
          const key = `${e.kind}:${e.value}`;
          if (!seen.has(key)) rows.push({ id: newId(), kind: e.kind, value: e.value, note: input.note ?? null });
          seen.add(key);
        });
      }
      if (problems.length) throw validationError(problems);
      if (rows.length === 0)
        throw validationError([{ path: 'numbers', message: 'give at least one number or prefix' }]);
      const added = await repo.insertMany(accountId, rows, 'api', deps.clock.now());
      return { added, duplicates: rows.length - added };
    },

    /**
     * A CSV file (first column a number, or a prefix ending with `*`; an optional second column a
     * note; a header row is skipped), stored in batches as it streams in.
     */
    async import(accountId: string, body: Readable) {
      const at = deps.clock.now();
      let rowsRead = 0;
      let imported = 0;
      let candidates = 0;
      let invalid = 0;
      let truncated = false;
      const errors: { row: number; value: string; message: string }[] = [];
      let batch: DncInsert[] = [];
      // One batch is stored while the next is read: the database and the parser work at once.
      let storing: Promise<void> = Promise.resolve();
      const store = async (rows: DncInsert[]) => {
        imported += await repo.insertMany(accountId, rows, 'import', at);
      };
      const flush = async () => {
        await storing;
        storing = store(batch);
        // Handled when awaited; a failure must not surface as an unhandled rejection meanwhile.
        storing.catch(() => {});
        batch = [];
      };
      try {
        reading: for await (const rows of csvBatches(body)) {
          for (const { row, cells } of rows) {
            const raw = cells[0] ?? '';
            if (row === 1 && /^[a-z_ ]+$/i.test(raw)) continue;
            rowsRead++;
            if (candidates >= DNC_IMPORT_MAX) {
              truncated = true;
              body.destroy();
              break reading;
            }
            const e = parseEntry(raw, 'number');
            if (!e.ok) {
              invalid++;
              if (errors.length < ERRORS_KEPT) errors.push({ row, value: raw.slice(0, 40), message: e.message });
              continue;
            }
            candidates++;
            batch.push({ id: newId(), kind: e.kind, value: e.value, note: cells[1]?.slice(0, 500) || null });
            if (batch.length >= BATCH) await flush();
          }
        }
        await flush();
      } finally {
        await storing;
      }
      return {
        rowsRead,
        imported,
        duplicates: candidates - imported,
        invalid,
        truncated,
        maxRows: DNC_IMPORT_MAX,
        errors,
      };
    },

    async list(
      accountId: string,
      q: { kind?: string | undefined; search?: string | undefined; cursor?: string | undefined; limit: number },
    ) {
      const search = q.search ? digitsOf(q.search) : undefined;
      return (await repo.list(accountId, { ...q, search, limit: q.limit + 1 })).map(view);
    },

    async remove(accountId: string, id: string) {
      if (!(await repo.remove(accountId, id))) throw notFound('Do-not-call entry');
      return { id };
    },

    async check(accountId: string, number: string) {
      const digits = digitsOf(number);
      if (!isE164Digits(digits)) throw validationError([{ path: 'number', message: 'must be an E.164 number' }]);
      const m = await repo.match(accountId, digits);
      return { number: `+${digits}`, blocked: m !== null, match: m ? view(m) : null };
    },

    /** Whether the account may not call or message `e164` (the dialer asks at dial time). */
    async isBlocked(accountId: string, e164: string): Promise<boolean> {
      return (await repo.match(accountId, digitsOf(e164))) !== null;
    },

    /** The blocked numbers among a batch (E.164, with or without '+'), as given: every form given of one number. */
    async blockedAmong(accountId: string, numbers: string[]): Promise<Set<string>> {
      const byDigits = new Map<string, string[]>();
      for (const n of numbers) {
        const d = digitsOf(n);
        const forms = byDigits.get(d);
        if (forms) forms.push(n);
        else byDigits.set(d, [n]);
      }
      const hit = await repo.blockedAmong(accountId, [...byDigits.keys()]);
      return new Set([...hit].flatMap((d) => byDigits.get(d)!));
    },
  };
}

export type DncService = ReturnType<typeof createDncService>;
