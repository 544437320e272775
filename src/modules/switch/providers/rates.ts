import type { Sql } from '../../../db/connection.js';
import { Readable } from 'node:stream';
import { csvRows, type CsvRow } from '../../../http/csv-body.js';
import { validationError, type ErrorDetail } from '../../../http/errors.js';
import type { Clock } from '../../../platform/clock.js';
import { newId } from '../../../platform/ids.js';
import type { Actor, SwitchAudit } from './audit.js';
import type { TrunkService } from './trunks.js';
import { moneyIn } from './views.js';

export interface DeckRowIn {
  prefix: string;
  originPrefix?: string;
  ratePerUnit: number | string;
  destinationName?: string | null;
  billingIncrement?: string | null;
  /** ISO date or timestamp; absent: now. */
  effectiveFrom?: string;
}

export const MAX_UPLOAD_ROWS = 20_000;
const PREFIX = /^[0-9]{1,16}$/;
const ORIGIN = /^[0-9]{0,16}$/;
const INCREMENT = /^\d{1,4}\/\d{1,4}$/;
const CSV_COLUMNS = ['prefix', 'rate', 'effective_date', 'destination', 'origin_prefix', 'billing_increment'] as const;

/**
 * A CSV deck: a header naming at least `prefix` and `rate` (also `effective_date`, `destination`,
 * `origin_prefix`, `billing_increment`, in any order), then one row per prefix.
 */
export async function parseDeckCsv(text: string): Promise<DeckRowIn[]> {
  const rows: CsvRow[] = [];
  for await (const row of csvRows(Readable.from([text]))) rows.push(row);
  const [head, ...body] = rows;
  const names = (head?.cells ?? []).map((c) => c.toLowerCase().replace(/\s+/g, '_'));
  const at = Object.fromEntries(CSV_COLUMNS.map((c) => [c, names.indexOf(c)])) as Record<
    (typeof CSV_COLUMNS)[number],
    number
  >;
  if (at.prefix < 0 || at.rate < 0)
    throw validationError([{ path: '/csv', message: 'the header must name the columns prefix and rate' }]);
  const cell = (r: CsvRow, i: number) => (i < 0 ? undefined : (r.cells[i] ?? '').trim() || undefined);
  return body.map((r) => ({
    prefix: cell(r, at.prefix) ?? '',
    ratePerUnit: cell(r, at.rate) ?? '',
    ...(cell(r, at.effective_date) ? { effectiveFrom: cell(r, at.effective_date)! } : {}),
    ...(cell(r, at.destination) ? { destinationName: cell(r, at.destination)! } : {}),
    ...(cell(r, at.origin_prefix) ? { originPrefix: cell(r, at.origin_prefix)! } : {}),
    ...(cell(r, at.billing_increment) ? { billingIncrement: cell(r, at.billing_increment)! } : {}),
  }));
}

/** A trunk's cost deck: uploads (JSON rows or CSV) and the read of the rows in force. */
export function createRateService(deps: { sql: Sql; clock: Clock; audit: SwitchAudit; trunks: TrunkService }) {
  const { sql, clock, audit, trunks } = deps;

  return {
    /**
     * The rows in force now: per (prefix, origin prefix) the newest row whose effective time has
     * come; archived rows and rows still scheduled are left out.
     */
    async active(accountId: string, trunkId: string, q: { search?: string; limit: number; offset: number }) {
      await trunks.one(accountId, trunkId);
      const now = clock.now();
      const search = q.search ? sql`and prefix like ${q.search + '%'}` : sql``;
      const rows = await sql`
        with live as (
          select distinct on (prefix, origin_prefix) id, trunk_id, prefix, origin_prefix, rate_per_unit,
            destination_name, billing_increment, effective_from
          from switch_trunk_rates
          where trunk_id = ${trunkId} and status <> 'archived' and effective_from <= ${now} ${search}
          order by prefix, origin_prefix, effective_from desc, id desc
        )
        select id, trunk_id as vendor_trunk_id, prefix, origin_prefix, rate_per_unit::text as rate_per_unit,
          destination_name, billing_increment, 'active' as status, effective_from, count(*) over ()::int as total
        from live order by prefix, origin_prefix limit ${q.limit} offset ${q.offset}`;
      let total = (rows[0]?.['total'] as number | undefined) ?? 0;
      if (rows.length === 0 && q.offset > 0) {
        const [c] = await sql<{ n: number }[]>`
          select count(distinct (prefix, origin_prefix))::int as n from switch_trunk_rates
          where trunk_id = ${trunkId} and status <> 'archived' and effective_from <= ${now} ${search}`;
        total = c?.n ?? 0;
      }
      return { rows: rows.map(({ total: _t, ...r }) => r), total, limit: q.limit, offset: q.offset };
    },

    /**
     * Adds deck rows. A row effective now or earlier archives the rows of the same prefix and
     * origin it replaces; a later one is kept as scheduled and takes over when its time comes.
     */
    async upload(accountId: string, actor: Actor, trunkId: string, input: DeckRowIn[]) {
      const trunk = await trunks.one(accountId, trunkId);
      if (input.length === 0) throw validationError([{ path: '/rows', message: 'no rows' }]);
      if (input.length > MAX_UPLOAD_ROWS)
        throw validationError([{ path: '/rows', message: `at most ${MAX_UPLOAD_ROWS} rows per upload` }]);
      const now = clock.now();
      const details: ErrorDetail[] = [];
      const rows = input.map((r, i) => {
        const at = (f: string) => `/rows/${i}/${f}`;
        if (!PREFIX.test(r.prefix)) details.push({ path: at('prefix'), message: 'must be 1 to 16 digits' });
        if (r.originPrefix !== undefined && !ORIGIN.test(r.originPrefix))
          details.push({ path: at('originPrefix'), message: 'must be up to 16 digits' });
        if (r.billingIncrement && !INCREMENT.test(r.billingIncrement))
          details.push({ path: at('billingIncrement'), message: 'must look like 60/60' });
        let rate = '';
        try {
          rate = moneyIn(at('ratePerUnit'), r.ratePerUnit, { min: '0' });
        } catch {
          details.push({ path: at('ratePerUnit'), message: 'must be an amount of at least 0 with at most 6 decimals' });
        }
        const eff = r.effectiveFrom
          ? new Date(/^\d{4}-\d{2}-\d{2}$/.test(r.effectiveFrom) ? `${r.effectiveFrom}T00:00:00Z` : r.effectiveFrom)
          : now;
        if (Number.isNaN(eff.getTime()))
          details.push({ path: at('effectiveFrom'), message: 'must be an ISO date or timestamp' });
        if ((r.destinationName?.length ?? 0) > 120)
          details.push({ path: at('destinationName'), message: 'at most 120 characters' });
        return {
          id: newId(),
          trunkId,
          prefix: r.prefix,
          originPrefix: r.originPrefix ?? '',
          ratePerUnit: rate,
          destinationName: r.destinationName ?? null,
          billingIncrement: r.billingIncrement ?? null,
          status: eff.getTime() <= now.getTime() ? 'active' : 'scheduled',
          effectiveFrom: eff,
          createdAt: now,
        };
      });
      if (details.length) throw validationError(details.slice(0, 100), `${details.length} problems in the deck rows`);
      return sql.begin(async (tx) => {
        // Rows in force now replace the older rows of their prefix and origin that were in force.
        const current = rows.filter((r) => r.status === 'active');
        let archived = 0;
        if (current.length) {
          const res = await tx`
            update switch_trunk_rates o set status = 'archived'
            from (select unnest(${current.map((r) => r.prefix)}::text[]) as prefix,
                         unnest(${current.map((r) => r.originPrefix)}::text[]) as origin_prefix) n
            where o.trunk_id = ${trunkId} and o.status <> 'archived' and o.effective_from <= ${now}
              and o.prefix = n.prefix and o.origin_prefix = n.origin_prefix`;
          archived = res.count;
        }
        for (let i = 0; i < rows.length; i += 1000)
          await tx`insert into switch_trunk_rates ${tx(rows.slice(i, i + 1000))}`;
        const summary = {
          added: rows.length,
          active: current.length,
          scheduled: rows.length - current.length,
          archived,
        };
        await audit.record(tx, actor, {
          accountId,
          providerId: trunk.supplierId,
          trunkId,
          entity: 'trunk',
          entityId: trunkId,
          action: 'rates:uploaded',
          before: null,
          after: summary,
        });
        return summary;
      });
    },
  };
}

export type RateService = ReturnType<typeof createRateService>;
