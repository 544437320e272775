import type { Readable } from 'node:stream';
import { parse } from 'csv-parse';
import type { FastifyInstance } from 'fastify';

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

/** Rows of a CSV stream, one at a time, RFC 4180 quoting; blank lines skipped, ragged rows allowed. */
export async function* csvRows(body: Readable): AsyncGenerator<CsvRow> {
  const parser = body.pipe(
    parse({ relax_column_count: true, skip_empty_lines: true, trim: true, bom: true, info: true }),
  );
  for await (const rec of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
    yield { row: rec.info.lines, cells: rec.record };
  }
}

/** Whether the request carried a CSV stream (as `acceptCsvStream` passes it) rather than JSON. */
export function isStream(body: unknown): body is Readable {
  return typeof body === 'object' && body !== null && typeof (body as Readable).pipe === 'function';
}
