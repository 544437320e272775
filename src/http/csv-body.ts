import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { CsvError, Parser, type Options } from 'csv-parse';
import type { FastifyInstance } from 'fastify';
import { ruleError } from './errors.js';

/**
 * Imports of hundreds of thousands of rows take `text/csv` bodies as a stream: the parser below
 * hands the handler the request stream unread, so rows are parsed and stored batch by batch
 * with the event loop free between batches and no body held in memory. Register it inside an
 * encapsulated scope (`app.register`) so it never touches other modules' routes.
 */
export function acceptCsvStream(scope: FastifyInstance): void {
  scope.addContentTypeParser('text/csv', (_req, payload, done) => done(null, payload));
}

export interface CsvRow {
  /** 1-based line number in the file (a header row counts). */
  row: number;
  cells: string[];
}

/** An unclosed quote would otherwise gather the rest of the file into one record. */
const MAX_RECORD_BYTES = 1 << 20;
/** Rows handed over at a time; the event loop turns between batches (bench/dialer/csv-import.bench.ts). */
const BATCH_ROWS = 2048;
const CR = 13;
const LF = 10;

/**
 * The dialect (RFC 4180 as people export it): quoted fields with `""` escapes and line breaks,
 * `\n`, `\r\n` or `\r` line ends (mixed too), cells trimmed outside quotes, a leading BOM dropped,
 * blank lines skipped, ragged rows allowed, a quote inside an unquoted cell kept as a character,
 * text after a closing quote refused.
 */
const OPTIONS: Options = {
  bom: true,
  trim: true,
  relax_quotes: true,
  relax_column_count: true,
  skip_empty_lines: true,
  record_delimiter: ['\r\n', '\n', '\r'],
  max_record_size: MAX_RECORD_BYTES,
};

/** Quoted `\r\n` pairs in a record's cells (unquoted cells hold no line break). */
function crlfsIn(cells: string[]): number {
  let n = 0;
  for (const c of cells) for (let i = c.indexOf('\r\n'); i >= 0; i = c.indexOf('\r\n', i + 2)) n++;
  return n;
}

/**
 * csv-parse with each record tagged with its line as it is parsed. `info` per record (the
 * library's option) copies the whole counter object for every row and doubles the parse time;
 * the live `info.lines` read when the record is pushed is the same figure. csv-parse counts a
 * `\r\n` inside a quoted cell as two lines: such pairs are taken off, so the row is the line it
 * ends on, as an editor shows it. Only a record that moved the count by more than one line can
 * hold them, so other rows cost no look at their cells.
 */
class LineParser extends Parser {
  private seen = 0;
  private crlfs = 0;

  constructor() {
    // A few batches of rows may wait parsed while the reader takes a batch (object mode counts rows).
    super({ ...OPTIONS, readableHighWaterMark: BATCH_ROWS * 2 } as Options);
  }

  /** Quoted `\r\n` pairs before the record being parsed (for an error's line). */
  get extraLines(): number {
    return this.crlfs;
  }

  override push(record: unknown, encoding?: BufferEncoding): boolean {
    if (record === null) return super.push(null, encoding);
    const cells = record as string[];
    const lines = this.info.lines;
    if (lines - this.seen > 1) this.crlfs += crlfsIn(cells);
    this.seen = lines;
    return super.push({ row: lines - this.crlfs, cells } satisfies CsvRow, encoding);
  }
}

/** Line breaks as an editor counts them (`\n`, `\r\n` or a lone `\r` each one), across chunks. */
class LineCounter {
  breaks = 0;
  private crAtEnd = false;

  add(b: Buffer): void {
    if (b.length === 0) return;
    let lf = 0;
    for (let i = b.indexOf(LF); i >= 0; i = b.indexOf(LF, i + 1)) lf++;
    let lone = 0;
    if (this.crAtEnd && b[0] === LF) lone--;
    for (let i = b.indexOf(CR); i >= 0; i = b.indexOf(CR, i + 1)) lone++;
    // Every CR counted; the LF of a CRLF is counted above, so its CR comes off again.
    for (let i = b.indexOf('\r\n'); i >= 0; i = b.indexOf('\r\n', i + 2)) lone--;
    this.crAtEnd = b[b.length - 1] === CR;
    this.breaks += lf + lone;
  }
}

function malformed(line: number, what: string) {
  return ruleError(`The CSV file is malformed at line ${line}: ${what}`);
}

/** csv-parse's refusal as the import's 400, naming the line. */
function refusal(err: CsvError, parser: LineParser, counter: LineCounter) {
  // The file ended inside a quote: the line the file ends on.
  if (err.code === 'CSV_QUOTE_NOT_CLOSED') return malformed(counter.breaks + 1, 'a quote that is never closed');
  const line = Number(err['lines']) - parser.extraLines;
  if (err.code === 'CSV_MAX_RECORD_SIZE') return malformed(line, 'a row longer than 1 MiB');
  if (err.code === 'CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE' || err.code === 'CSV_INVALID_CLOSING_QUOTE') {
    return malformed(line, 'text after a closing quote');
  }
  return malformed(line, 'text that cannot be read as CSV');
}

/**
 * Rows of a CSV stream in batches of up to 2,048 (csv-parse, see `OPTIONS` for the dialect),
 * taken with `read()` from the parser, so a row costs no promise of its own; the event loop turns
 * between batches. Bytes are written to the parser as it takes them (its back-pressure holds the
 * request), so nothing is held whole. A malformed file is a 400 `VALIDATION_ERROR` naming the line.
 */
export async function* csvBatches(body: Readable): AsyncGenerator<CsvRow[]> {
  const parser = new LineParser();
  const counter = new LineCounter();
  let failure: unknown = null;
  let ended = false;
  let wake: (() => void) | null = null;
  const rouse = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  parser.on('readable', rouse);
  parser.on('end', () => {
    ended = true;
    rouse();
  });
  parser.on('error', (err) => {
    failure ??= err;
    rouse();
  });
  const stop = new AbortController();
  void (async () => {
    for await (const chunk of body as AsyncIterable<Buffer | string>) {
      const b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      counter.add(b);
      if (!parser.write(b)) await once(parser, 'drain', { signal: stop.signal });
    }
    parser.end();
  })().catch((err: unknown) => {
    failure ??= err;
    rouse();
  });
  try {
    for (;;) {
      const batch: CsvRow[] = [];
      let rec: CsvRow | null;
      while (batch.length < BATCH_ROWS && (rec = parser.read() as CsvRow | null) !== null) batch.push(rec);
      if (batch.length > 0) {
        yield batch;
        await nextTurn();
        continue;
      }
      if (failure !== null) throw failure instanceof CsvError ? refusal(failure, parser, counter) : failure;
      if (ended) return;
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    // Left early (a refused file, a row limit, an error downstream): the rest is never read.
    stop.abort();
    parser.destroy();
    if (!ended) body.destroy();
  }
}

/** Rows of a CSV stream, one at a time (see `csvBatches`). */
export async function* csvRows(body: Readable): AsyncGenerator<CsvRow> {
  for await (const rows of csvBatches(body)) yield* rows;
}

/** Whether the request carried a CSV stream (as `acceptCsvStream` passes it) rather than JSON. */
export function isStream(body: unknown): body is Readable {
  return typeof body === 'object' && body !== null && typeof (body as Readable).pipe === 'function';
}
