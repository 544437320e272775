import { pipeline, Readable } from 'node:stream';
import type { Stringifier } from 'csv-stringify';
import type { Sql } from '../../db/connection.js';
import { createCsvWriter } from '../../http/csv.js';
import { notFound } from '../../http/errors.js';
import type { Logger } from 'pino';
import type { AttemptInsert } from './repo.js';

/** One attempt as stored (numbers as E.164 digits, money as 6-place text), with its disposition. */
export interface AttemptRow extends Omit<AttemptInsert, 'campaignId' | 'accountId'> {
  disposition: string | null;
  dispositionNote: string | null;
  dispositionAt: Date | null;
}

export const attemptView = (r: AttemptRow) => ({
  id: r.id,
  number: `+${r.number}`,
  attempt: r.attempt,
  callId: r.callId,
  cli: r.cli ? `+${r.cli}` : null,
  status: r.status,
  sipCode: r.sipCode,
  cause: r.cause,
  durationSeconds: r.durationSeconds,
  cost: r.cost,
  fee: r.fee,
  disposition: r.disposition,
  dispositionNote: r.dispositionNote,
  dispositionAt: r.dispositionAt?.toISOString() ?? null,
  startedAt: r.startedAt.toISOString(),
  endedAt: r.endedAt.toISOString(),
});

const COLUMNS = (sql: Sql) => sql`
  id, number, attempt, call_id, cli, status, sip_code, cause, duration_seconds,
  cost::numeric(20,6)::text as cost, fee::numeric(20,6)::text as fee,
  disposition, disposition_note, disposition_at, started_at, ended_at`;

const CSV_COLUMNS = [
  'attemptId',
  'number',
  'attempt',
  'callId',
  'cli',
  'status',
  'sipCode',
  'cause',
  'durationSeconds',
  'cost',
  'fee',
  'disposition',
  'dispositionNote',
  'startedAt',
  'endedAt',
] as const;
const CSV_NUMERIC = ['attempt', 'sipCode', 'durationSeconds', 'cost', 'fee'] as const;
/** Rows fetched per round trip while an export streams. */
const EXPORT_BATCH = 1000;

/** A campaign's attempts: pages, one number's history, the account's dispositions and the CSV export. */
export function createResults(deps: { sql: Sql; log: Logger }) {
  const { sql } = deps;
  return {
    async page(campaignId: string, q: { status?: string | undefined; cursor?: string | undefined; limit: number }) {
      const rows = await sql<AttemptRow[]>`
        select ${COLUMNS(sql)} from dialer_attempts where campaign_id = ${campaignId}
          ${q.status ? sql`and status = ${q.status}` : sql``}
          ${q.cursor ? sql`and id < ${q.cursor}` : sql``}
        order by id desc limit ${q.limit}`;
      return rows.map(attemptView);
    },

    /** Every attempt to one number of the campaign, first attempt first. */
    async history(campaignId: string, number: string) {
      const rows = await sql<AttemptRow[]>`
        select ${COLUMNS(sql)} from dialer_attempts where campaign_id = ${campaignId} and number = ${number}
        order by attempt, started_at`;
      return rows.map(attemptView);
    },

    /** The account's outcome of a call (interested, callback, wrong_number…); null clears it. */
    async setDisposition(
      campaignId: string,
      attemptId: string,
      input: { disposition: string | null; note?: string | null | undefined },
      now: Date,
    ) {
      const [row] = await sql<AttemptRow[]>`
        update dialer_attempts set disposition = ${input.disposition},
               disposition_note = ${input.disposition === null ? null : (input.note ?? null)},
               disposition_at = ${input.disposition === null ? null : now}
        where id = ${attemptId} and campaign_id = ${campaignId}
        returning ${COLUMNS(sql)}`;
      if (!row) throw notFound('Attempt');
      return attemptView(row);
    },

    /**
     * Every attempt as CSV, oldest first, read in batches by keyset as the client takes the bytes
     * (a campaign of a million numbers is never held whole).
     */
    exportCsv(campaignId: string, q: { status?: string | undefined }): Stringifier {
      async function* rows() {
        let after: string | null = null;
        for (;;) {
          const batch: AttemptRow[] = await sql<AttemptRow[]>`
            select ${COLUMNS(sql)} from dialer_attempts where campaign_id = ${campaignId}
              ${q.status ? sql`and status = ${q.status}` : sql``}
              ${after ? sql`and id > ${after}` : sql``}
            order by id limit ${EXPORT_BATCH}`;
          for (const r of batch) {
            const v = attemptView(r);
            yield {
              attemptId: v.id,
              number: v.number,
              attempt: String(v.attempt),
              callId: v.callId ?? '',
              cli: v.cli ?? '',
              status: v.status,
              sipCode: v.sipCode === null ? '' : String(v.sipCode),
              cause: v.cause ?? '',
              durationSeconds: String(v.durationSeconds),
              cost: v.cost,
              fee: v.fee,
              disposition: v.disposition ?? '',
              dispositionNote: v.dispositionNote ?? '',
              startedAt: v.startedAt,
              endedAt: v.endedAt,
            };
          }
          if (batch.length < EXPORT_BATCH) return;
          after = batch[batch.length - 1]!.id;
        }
      }
      const csv = createCsvWriter(CSV_COLUMNS, CSV_NUMERIC);
      pipeline(Readable.from(rows()), csv, (err) => {
        if (err) deps.log.error({ err, campaignId }, 'campaign export failed');
      });
      return csv;
    },
  };
}

export type Results = ReturnType<typeof createResults>;
