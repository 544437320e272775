import { Decimal } from 'decimal.js';
import { parse as parseStream } from 'csv-parse';
import { parse } from 'csv-parse/sync';
import { giveTurn, runSliced, runToEnd, STEP_ITEMS, type Slicing, type Steps } from '../platform/cooperative.js';
import type { BillingIncrement } from './increment.js';
import { parseIncrement } from './increment.js';
import { parseRate } from './money.js';
import { parseOrigin } from './origin.js';

export type DeckType = 'voice' | 'sms';

/** One valid row of a rate sheet. */
export interface SheetRow {
  /** CSV: the file line (header is line 1). JSON: the 1-based position in the array. */
  readonly line: number;
  readonly prefix: string;
  readonly destination: string;
  /** 6-place string. */
  readonly rate: string;
  readonly increment: BillingIncrement;
  /** When the sheet states one; null means "as soon as the rate-change rules allow". Rows with the same date share one Date: do not mutate. */
  readonly effectiveAt: Date | null;
  /** SMS network row (`<mcc>-<mnc>`), null for country rows and voice. */
  readonly mccMnc: string | null;
  /** The callers this row prices (A-number prefix, country or region; see origin.ts), null for the default row. */
  readonly origin: string | null;
}

export interface SheetError {
  readonly line: number;
  readonly reason: string;
}

export interface SheetResult {
  /** Valid rows, in sheet order; empty when any row is bad, since a sheet replaces a deck whole. */
  readonly rows: SheetRow[];
  /** Every bad row with its line and reason; empty when the sheet can be applied. */
  readonly errors: SheetError[];
}

export interface SheetOptions {
  readonly type: DeckType;
  /** Used for rows that leave the increment empty (the route's default). */
  readonly defaultIncrement: BillingIncrement;
  /** Defaults to 500,000. */
  readonly maxRows?: number;
  /** Told how many rows have been checked so far (every few hundred rows). */
  readonly onProgress?: (rowsChecked: number) => void;
}

/** A row before validation: text fields as found (JSON may carry numbers). */
export interface RawSheetRow {
  readonly line: number;
  readonly prefix?: unknown;
  readonly destination?: unknown;
  readonly rate?: unknown;
  readonly increment?: unknown;
  readonly effectiveDate?: unknown;
  readonly mccMnc?: unknown;
  readonly origin?: unknown;
}

type Field = 'prefix' | 'destination' | 'rate' | 'increment' | 'effectiveDate' | 'mccMnc' | 'origin';

// Header spellings sellers use, folded to lower case without spaces, dashes and underscores.
const HEADER_ALIASES: Readonly<Record<string, Field>> = {
  prefix: 'prefix',
  code: 'prefix',
  dialcode: 'prefix',
  dialprefix: 'prefix',
  destination: 'destination',
  destinationname: 'destination',
  name: 'destination',
  description: 'destination',
  rate: 'rate',
  price: 'rate',
  rateperminute: 'rate',
  ratepermessage: 'rate',
  rateusd: 'rate',
  increment: 'increment',
  billingincrement: 'increment',
  billing: 'increment',
  effectivedate: 'effectiveDate',
  effective: 'effectiveDate',
  effectiveat: 'effectiveDate',
  effectivefrom: 'effectiveDate',
  mccmnc: 'mccMnc',
  network: 'mccMnc',
  mcc: 'mccMnc',
  origin: 'origin',
  originprefix: 'origin',
  origincountry: 'origin',
  originregion: 'origin',
  anumber: 'origin',
  anumberprefix: 'origin',
  aprefix: 'origin',
};

const DEFAULT_MAX_ROWS = 500_000;
const PREFIX_RE = /^\d{1,15}$/;
const MCCMNC_RE = /^(\d{3})-?(\d{2,3})$/;
const DATE_RE = /^\d{4}-\d{2}-\d{2}$/;
const DATETIME_RE = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})$/;
const MAX_DESTINATION = 100;

interface CsvRecord {
  readonly record: string[];
  readonly line: number;
}

/** Records by position: the header is record 0. */
interface CsvRecords {
  readonly length: number;
  lineOf(k: number): number;
  cells(k: number): readonly string[];
}

const recordsOf = (list: readonly CsvRecord[]): CsvRecords => ({
  length: list.length,
  lineOf: (k) => list[k]!.line,
  cells: (k) => list[k]!.record,
});

// Most sheets have no quoting at all; for those a plain split gives the same records as csv-parse
// several times faster (200,000 rows must upload quickly), so csv-parse is kept for sheets with quotes.
// Each record is kept as its line's text and split when read (the last split is reused): one
// string a row instead of an array of cells, which keeps a 500,000-row sheet's heap and its
// garbage collection pauses small.
function* splitUnquoted(text: string): Steps<CsvRecords> {
  const texts: string[] = [];
  let lines = new Int32Array(1024);
  let start = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let line = 1;
  const len = text.length;
  while (start < len) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = len;
    const stop = end > start && text.charCodeAt(end - 1) === 13 ? end - 1 : end;
    const raw = text.slice(start, stop);
    if (raw.trim() !== '') {
      if (texts.length === lines.length) {
        const grown = new Int32Array(lines.length * 2);
        grown.set(lines);
        lines = grown;
      }
      lines[texts.length] = line;
      texts.push(raw);
    }
    if (line % STEP_ITEMS === 0) yield;
    line++;
    start = end + 1;
  }
  let lastK = -1;
  let last: readonly string[] = [];
  return {
    length: texts.length,
    lineOf: (k) => lines[k]!,
    cells: (k) => {
      if (k !== lastK) {
        last = texts[k]!.split(',');
        lastK = k;
      }
      return last;
    },
  };
}

function parseQuoted(text: string): CsvRecords | { line: number } {
  try {
    const recs = parse(text, {
      bom: true,
      info: true,
      relax_column_count: true,
      skip_empty_lines: true,
    }) as unknown as {
      record: string[];
      info: { lines: number };
    }[];
    return recordsOf(recs.map((r) => ({ record: r.record, line: r.info.lines })));
  } catch (err) {
    return { line: errorLine(err) };
  }
}

const errorLine = (err: unknown): number =>
  typeof (err as { lines?: unknown }).lines === 'number' ? (err as { lines: number }).lines : 0;

// The streaming parser fed 64 KiB at a time, with a turn of the event loop between pieces. Bytes,
// not string slices, so a piece boundary never splits a character.
const QUOTED_PIECE = 64 * 1024;
async function parseQuotedSliced(text: string, slicing: Slicing): Promise<CsvRecords | { line: number }> {
  const out: CsvRecord[] = [];
  let failed: { line: number } | null = null;
  const parser = parseStream({ bom: true, info: true, relax_column_count: true, skip_empty_lines: true });
  parser.on('data', (r: { record: string[]; info: { lines: number } }) =>
    out.push({ record: r.record, line: r.info.lines }),
  );
  const done = new Promise<void>((resolve) => {
    parser.on('end', resolve);
    parser.on('error', (err) => {
      failed ??= { line: errorLine(err) };
      resolve();
    });
  });
  const bytes = Buffer.from(text, 'utf8');
  for (let i = 0; i < bytes.length && failed === null; i += QUOTED_PIECE) {
    parser.write(bytes.subarray(i, i + QUOTED_PIECE));
    try {
      await giveTurn(slicing.signal);
    } catch (err) {
      parser.destroy();
      throw err;
    }
  }
  if (failed === null) parser.end();
  await done;
  return failed ?? recordsOf(out);
}

/** Parses a CSV rate sheet (header row required) and validates every row. */
export function parseRateSheetCsv(input: string | Buffer, opts: SheetOptions): SheetResult {
  const text = typeof input === 'string' ? input : input.toString('utf8');
  const records = text.includes('"') ? parseQuoted(text) : runToEnd(splitUnquoted(text));
  return runToEnd(csvSteps(records, opts));
}

/**
 * `parseRateSheetCsv` that gives the event loop a turn after every `sliceMs` of work, for sheets large
 * enough to stall requests if parsed in one go.
 */
export async function parseRateSheetCsvSliced(
  text: string,
  opts: SheetOptions,
  slicing: Slicing = {},
): Promise<SheetResult> {
  const records = text.includes('"')
    ? await parseQuotedSliced(text, slicing)
    : await runSliced(splitUnquoted(text), slicing);
  return runSliced(csvSteps(records, opts), slicing);
}

/** A CSV text's non-empty lines after the header, counted before parsing to choose how to load it. */
export function countCsvRows(text: string): number {
  let lines = 0;
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    if (end - start > 1 || (end - start === 1 && text.charCodeAt(start) !== 13)) lines++;
    start = end + 1;
  }
  return Math.max(0, lines - 1);
}

function* csvSteps(records: CsvRecords | { line: number }, opts: SheetOptions): Steps<SheetResult> {
  if (!('cells' in records)) return { rows: [], errors: [{ line: records.line, reason: 'malformed CSV' }] };
  if (records.length === 0) return { rows: [], errors: [{ line: 1, reason: 'sheet is empty' }] };
  const headerLine = records.lineOf(0);
  const cols: Partial<Record<Field, number>> = {};
  records.cells(0).forEach((h, i) => {
    const f =
      HEADER_ALIASES[
        h
          .trim()
          .toLowerCase()
          .replace(/[\s_\-()]/g, '')
      ];
    if (f !== undefined && cols[f] === undefined) cols[f] = i;
  });
  const missing = (['prefix', 'destination', 'rate'] as const).filter((f) => cols[f] === undefined);
  if (missing.length > 0) {
    return { rows: [], errors: [{ line: headerLine, reason: `missing column: ${missing.join(', ')}` }] };
  }
  const idx = (f: Field): number => cols[f] ?? -1;
  const fieldIdx: Record<Field, number> = {
    prefix: idx('prefix'),
    destination: idx('destination'),
    rate: idx('rate'),
    increment: idx('increment'),
    effectiveDate: idx('effectiveDate'),
    mccMnc: idx('mccMnc'),
    origin: idx('origin'),
  };
  // Validate straight from the split records: no intermediate row objects for 200,000-row sheets.
  return yield* validate(
    records.length - 1,
    (k) => records.lineOf(k + 1),
    (k, f) => {
      const i = fieldIdx[f];
      return i < 0 ? undefined : records.cells(k + 1)[i];
    },
    opts,
  );
}

/**
 * Parses a JSON rate sheet: an array of row objects, or `{ rows: [...] }`. Row keys: `prefix`,
 * `destination`, `rate`, `increment` (or `billingIncrement`), `effectiveDate` (or `effectiveAt`),
 * `mccMnc`, `origin`. A row's "line" is its 1-based position in the array.
 */
export function parseRateSheetJson(input: unknown, opts: SheetOptions): SheetResult {
  return runToEnd(jsonSteps(input, opts));
}

/** `parseRateSheetJson` that gives the event loop a turn after every `sliceMs` of work. */
export function parseRateSheetJsonSliced(
  input: unknown,
  opts: SheetOptions,
  slicing: Slicing = {},
): Promise<SheetResult> {
  return runSliced(jsonSteps(input, opts), slicing);
}

const JSON_KEYS: Readonly<Record<Field, readonly string[]>> = {
  prefix: ['prefix'],
  destination: ['destination'],
  rate: ['rate'],
  increment: ['increment', 'billingIncrement'],
  effectiveDate: ['effectiveDate', 'effectiveAt'],
  mccMnc: ['mccMnc'],
  origin: ['origin'],
};

function* jsonSteps(input: unknown, opts: SheetOptions): Steps<SheetResult> {
  let value = input;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value) as unknown;
    } catch {
      return { rows: [], errors: [{ line: 0, reason: 'malformed JSON' }] };
    }
  }
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) value = (value as { rows?: unknown }).rows;
  if (!Array.isArray(value)) return { rows: [], errors: [{ line: 0, reason: 'expected an array of rows' }] };
  const items: readonly unknown[] = value;
  // Fields read straight from the items: no copy of a 500,000-row array before validating it.
  return yield* validate(
    items.length,
    (k) => k + 1,
    (k, f) => {
      const item = items[k];
      if (item === null || typeof item !== 'object') return undefined;
      const o = item as Record<string, unknown>;
      const [first, second] = JSON_KEYS[f];
      return o[first!] ?? (second === undefined ? undefined : o[second]);
    },
    opts,
  );
}

function parseDate(v: string): Date | null {
  if (DATE_RE.test(v)) {
    const d = new Date(`${v}T00:00:00Z`);
    return Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== v ? null : d;
  }
  if (!DATETIME_RE.test(v)) return null;
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? null : d;
}

const asText = (v: unknown): string | undefined =>
  typeof v === 'string' ? v.trim() : typeof v === 'number' && Number.isFinite(v) ? String(v) : undefined;

/** Validates rows from any source; collects every problem instead of stopping at the first. */
export function validateSheetRows(raw: readonly RawSheetRow[], opts: SheetOptions): SheetResult {
  return runToEnd(
    validate(
      raw.length,
      (k) => raw[k]!.line,
      (k, f) => raw[k]![f],
      opts,
    ),
  );
}

function* validate(
  count: number,
  lineOf: (k: number) => number,
  field: (k: number, f: Field) => unknown,
  opts: SheetOptions,
): Steps<SheetResult> {
  const errors: SheetError[] = [];
  const maxRows = opts.maxRows ?? DEFAULT_MAX_ROWS;
  if (count === 0) return { rows: [], errors: [{ line: 0, reason: 'sheet has no rows' }] };
  if (count > maxRows) return { rows: [], errors: [{ line: 0, reason: `sheet has more than ${maxRows} rows` }] };

  // Sheets repeat the same rates, names, increments and dates; parse each text once and share it.
  const rates = new Map<string, ReturnType<typeof parseRate>>();
  const dates = new Map<string, Date | null>();
  const names = new Map<string, string>();
  const rows: SheetRow[] = [];
  const seen = new Map<string, number>();
  for (let k = 0; k < count; k++) {
    if (k % STEP_ITEMS === 0 && k > 0) {
      opts.onProgress?.(k);
      yield;
    }
    const line = lineOf(k);
    const prefix = asText(field(k, 'prefix'));
    if (prefix === undefined || !PREFIX_RE.test(prefix)) {
      errors.push({ line, reason: 'bad prefix: 1 to 15 digits expected' });
      continue;
    }
    let destination = asText(field(k, 'destination')) ?? '';
    if (destination === '' || destination.length > MAX_DESTINATION || destination.includes('\u0000')) {
      errors.push({ line, reason: `bad destination name: 1 to ${MAX_DESTINATION} characters expected` });
      continue;
    }
    const shared = names.get(destination);
    if (shared === undefined) names.set(destination, destination);
    else destination = shared;
    const rawRate = field(k, 'rate');
    const rateKey = typeof rawRate === 'string' ? rawRate : undefined;
    let rate = rateKey === undefined ? undefined : rates.get(rateKey);
    if (rate === undefined) {
      rate = parseRate(typeof rawRate === 'number' ? String(rawRate) : rawRate);
      if (rateKey !== undefined) rates.set(rateKey, rate);
    }
    if (!rate.ok) {
      errors.push({ line, reason: `bad rate: ${rate.reason}` });
      continue;
    }
    const incText = asText(field(k, 'increment')) ?? '';
    const increment = incText === '' ? opts.defaultIncrement : parseIncrement(incText);
    if (increment === null) {
      errors.push({ line, reason: 'bad increment: <first>/<next> in seconds expected, e.g. 60/60 or 30/6' });
      continue;
    }
    const dateText = asText(field(k, 'effectiveDate')) ?? '';
    let effectiveAt: Date | null = null;
    if (dateText !== '') {
      effectiveAt = dates.has(dateText) ? dates.get(dateText)! : parseDate(dateText);
      dates.set(dateText, effectiveAt);
      if (effectiveAt === null) {
        errors.push({ line, reason: 'bad date: YYYY-MM-DD or ISO-8601 date-time with zone expected' });
        continue;
      }
    }
    const mccText = asText(field(k, 'mccMnc')) ?? '';
    let mccMnc: string | null = null;
    if (mccText !== '') {
      if (opts.type !== 'sms') {
        errors.push({ line, reason: 'bad MCC-MNC: only SMS sheets price per network' });
        continue;
      }
      const m = MCCMNC_RE.exec(mccText);
      if (m === null) {
        errors.push({ line, reason: 'bad MCC-MNC: <mcc>-<mnc> expected' });
        continue;
      }
      mccMnc = `${m[1]}-${m[2]}`;
    }
    const originText = asText(field(k, 'origin')) ?? '';
    let origin: string | null = null;
    if (originText !== '') {
      const o = parseOrigin(originText);
      if (o === null) {
        errors.push({
          line,
          reason: 'bad origin: an A-number prefix (digits), an ISO country code, EU or EEA expected',
        });
        continue;
      }
      if (mccMnc !== null) {
        errors.push({ line, reason: 'bad origin: origins price country rows, not network rows' });
        continue;
      }
      origin = o.origin;
    }
    const key = mccMnc === null ? (origin === null ? prefix : `${prefix}@${origin}`) : `${prefix}|${mccMnc}`;
    const first = seen.get(key);
    if (first !== undefined) {
      const what = mccMnc !== null ? ` for network ${mccMnc}` : origin !== null ? ` for origin ${origin}` : '';
      errors.push({ line, reason: `duplicate prefix ${prefix}${what} (first on line ${first})` });
      continue;
    }
    seen.set(key, line);
    rows.push({ line, prefix, destination, rate: rate.text, increment, effectiveAt, mccMnc, origin });
  }

  opts.onProgress?.(count);
  checkNetworkCeilings(rows, errors);
  if (errors.length > 0) {
    errors.sort((a, b) => a.line - b.line);
    return { rows: [], errors };
  }
  return { rows, errors };
}

// A network price is capped by the country price: the country row is the longest country prefix
// that starts the network row's prefix.
function checkNetworkCeilings(rows: readonly SheetRow[], errors: SheetError[]): void {
  let country: Map<string, SheetRow> | undefined;
  for (const r of rows) {
    if (r.mccMnc === null) continue;
    if (country === undefined) {
      country = new Map();
      for (const c of rows) if (c.mccMnc === null && c.origin === null) country.set(c.prefix, c);
    }
    let ceiling: SheetRow | undefined;
    for (let len = r.prefix.length; len > 0 && ceiling === undefined; len--)
      ceiling = country.get(r.prefix.slice(0, len));
    if (ceiling === undefined) {
      errors.push({ line: r.line, reason: `network row has no country price for prefix ${r.prefix}` });
    } else if (new Decimal(r.rate).gt(ceiling.rate)) {
      errors.push({
        line: r.line,
        reason: `network price above country price (${r.rate} > ${ceiling.rate} on line ${ceiling.line})`,
      });
    }
  }
}
