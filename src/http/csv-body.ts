import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
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

const QUOTE = 34;
const COMMA = 44;
const LF = 10;
const CR = 13;
/** An unclosed quote would otherwise gather the rest of the file into one record. */
const MAX_RECORD_CHARS = 1 << 20;

const isBlank = (s: string) => s.trim() === '';

/**
 * An RFC 4180 reader fed text as it arrives: quoted fields (with `""` escapes and line breaks),
 * `\n`, `\r\n` or `\r` line ends, cells trimmed outside quotes, a leading BOM dropped, blank lines
 * skipped, ragged rows allowed; a quote inside an unquoted cell is kept as a character. A row's
 * number is the line it ends on, as an editor shows it.
 */
export class CsvReader {
  private line = 1;
  private cells: string[] = [];
  private cellsChars = 0;
  private field = '';
  private inQuotes = false;
  /** The field's closing quote was read: only blanks may follow before the delimiter. */
  private closed = false;
  /** A quote ended the last chunk inside a quoted field: an escape or the closing quote. */
  private quoteAtEnd = false;
  /** A `\r` ended the last chunk: a `\n` opening the next belongs to the same line end. */
  private crAtEnd = false;
  private first = true;

  /** Parses `text`, appending every row it completes to `out`. */
  push(text: string, out: CsvRow[]): void {
    let i = 0;
    if (this.first) {
      this.first = false;
      if (text.charCodeAt(0) === 0xfeff) i = 1;
    }
    if (this.crAtEnd) {
      this.crAtEnd = false;
      if (text.charCodeAt(i) === LF) i++;
    }
    if (this.quoteAtEnd) {
      this.quoteAtEnd = false;
      if (text.charCodeAt(i) === QUOTE) {
        this.field += '"';
        i++;
      } else {
        this.inQuotes = false;
        this.closed = true;
      }
    }
    const n = text.length;
    let start = i;
    while (i < n) {
      const c = text.charCodeAt(i);
      if (this.inQuotes) {
        if (c === QUOTE) {
          this.field += text.slice(start, i);
          if (i + 1 === n) {
            this.quoteAtEnd = true;
            start = n;
            break;
          }
          if (text.charCodeAt(i + 1) === QUOTE) {
            this.field += '"';
            i += 2;
          } else {
            this.inQuotes = false;
            this.closed = true;
            i++;
          }
          start = i;
          continue;
        }
        if (c === LF || (c === CR && text.charCodeAt(i + 1) !== LF)) this.line++;
        i++;
        continue;
      }
      if (c === COMMA) {
        this.endField(text.slice(start, i));
        start = ++i;
        continue;
      }
      if (c === LF || c === CR) {
        this.endField(text.slice(start, i));
        this.endRecord(out);
        this.line++;
        i++;
        if (c === CR) {
          if (i === n) this.crAtEnd = true;
          else if (text.charCodeAt(i) === LF) i++;
        }
        start = i;
        continue;
      }
      if (this.closed) {
        if (c !== 32 && c !== 9) throw this.malformed('text after a closing quote');
      } else if (c === QUOTE && isBlank(this.field) && isBlank(text.slice(start, i))) {
        this.field = '';
        this.inQuotes = true;
        start = i + 1;
      }
      i++;
    }
    if (start < n && !this.closed) this.field += text.slice(start, n);
    if (this.cellsChars + this.field.length > MAX_RECORD_CHARS) throw this.malformed('a row longer than 1 MiB');
  }

  /** The file ended: the last row if it had no line end. */
  end(out: CsvRow[]): void {
    if (this.quoteAtEnd) {
      this.quoteAtEnd = false;
      this.inQuotes = false;
      this.closed = true;
    }
    if (this.inQuotes) throw this.malformed('a quote that is never closed');
    if (this.cells.length > 0 || this.field !== '' || this.closed) {
      this.endField('');
      this.endRecord(out);
    }
  }

  private endField(tail: string): void {
    // After a closing quote only blanks were read (checked as they came): the quoted text stands.
    const value = this.closed ? this.field : (this.field + tail).trim();
    this.cells.push(value);
    this.cellsChars += value.length;
    this.field = '';
    this.closed = false;
  }

  private endRecord(out: CsvRow[]): void {
    const cells = this.cells;
    this.cells = [];
    this.cellsChars = 0;
    if (cells.length === 1 && cells[0] === '') return;
    out.push({ row: this.line, cells });
  }

  private malformed(what: string) {
    return ruleError(`The CSV file is malformed at line ${this.line}: ${what}`);
  }
}

/**
 * Rows of a CSV stream, a chunk's worth at a time: a row costs no promise of its own, so a
 * million-row file is read at the speed of the bytes (see `CsvReader` for the dialect).
 */
export async function* csvBatches(body: Readable): AsyncGenerator<CsvRow[]> {
  const reader = new CsvReader();
  const decoder = new StringDecoder('utf8');
  for await (const chunk of body as AsyncIterable<Buffer | string>) {
    const out: CsvRow[] = [];
    reader.push(typeof chunk === 'string' ? chunk : decoder.write(chunk), out);
    if (out.length > 0) yield out;
  }
  const out: CsvRow[] = [];
  const rest = decoder.end();
  if (rest) reader.push(rest, out);
  reader.end(out);
  if (out.length > 0) yield out;
}

/** Rows of a CSV stream, one at a time (see `CsvReader`). */
export async function* csvRows(body: Readable): AsyncGenerator<CsvRow> {
  for await (const rows of csvBatches(body)) yield* rows;
}

/** Whether the request carried a CSV stream (as `acceptCsvStream` passes it) rather than JSON. */
export function isStream(body: unknown): body is Readable {
  return typeof body === 'object' && body !== null && typeof (body as Readable).pipe === 'function';
}
