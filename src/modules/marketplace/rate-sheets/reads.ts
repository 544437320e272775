import type { Sql } from '../../../db/connection.js';
import { notFound } from '../../../http/errors.js';
import type { Clock } from '../../../platform/clock.js';
import type { RoutesService } from '../listings/service.js';

/** Rows a full download holds at most (a deck is up to 500,000 rows). */
export const DOWNLOAD_MAX_ROWS = 500_000;

export interface SheetRowOut {
  prefix: string;
  destination: string;
  rate: string;
  increment: string;
  mccMnc: string | null;
  origin: string | null;
  effectiveFrom: string;
  effectiveTo: string | null;
}

/** A rate row as read (money as text, an empty MCC-MNC for a country row). */
interface StoredRow {
  prefix: string;
  destination: string;
  rate: string;
  increment: string;
  mccMnc: string;
  origin: string;
  effectiveFrom: Date;
  effectiveTo: Date | null;
}

/**
 * Reads of a route's rate sheet beyond the page of rates in force: the whole sheet in force for
 * download (the columns an upload takes, so a seller can edit and upload it back), and every row's
 * history (closed, in force and scheduled). Anyone who can see the route may read them.
 */
export function createSheetReads(deps: { sql: Sql; clock: Clock; routes: RoutesService }) {
  const { sql, clock } = deps;

  const visible = async (routeId: string, viewerId: string) => {
    const r = await deps.routes.visibleRoute(routeId, viewerId);
    if (r === undefined) throw notFound('Route');
    return r;
  };
  const out = (r: StoredRow): SheetRowOut => ({
    prefix: r.prefix,
    destination: r.destination,
    rate: r.rate,
    increment: r.increment,
    mccMnc: r.mccMnc === '' ? null : r.mccMnc,
    origin: r.origin === '' ? null : r.origin,
    effectiveFrom: r.effectiveFrom.toISOString(),
    effectiveTo: r.effectiveTo === null ? null : r.effectiveTo.toISOString(),
  });

  return {
    /** The rows in force now, by prefix and network, with the route's facts for a file name. */
    async inForce(viewerId: string, routeId: string) {
      const route = await visible(routeId, viewerId);
      const now = clock.now();
      const rows = await sql<StoredRow[]>`
        select prefix, destination, rate::numeric(20,6)::text as rate, increment, mcc_mnc, origin, effective_from, effective_to
        from rate_rows
        where route_id = ${routeId} and effective_from <= ${now} and (effective_to is null or effective_to > ${now})
        order by prefix, mcc_mnc, origin limit ${DOWNLOAD_MAX_ROWS}`;
      return { route, rows: rows.map(out), at: now.toISOString() };
    },

    /** Every row of the route's history for `prefix` (or all), newest change first per prefix; offset-paged. */
    async history(viewerId: string, routeId: string, q: { prefix?: string; limit: number; offset: number }) {
      await visible(routeId, viewerId);
      const now = clock.now();
      const rows = await sql<(StoredRow & { total: string })[]>`
        select prefix, destination, rate::numeric(20,6)::text as rate, increment, mcc_mnc, origin, effective_from, effective_to,
          count(*) over () as total
        from rate_rows
        where route_id = ${routeId} ${q.prefix ? sql`and prefix like ${q.prefix + '%'}` : sql``}
          -- a row replaced in the instant it came into force was never in force
          and (effective_to is null or effective_to > effective_from)
        order by prefix, mcc_mnc, origin, effective_from desc
        limit ${q.limit} offset ${q.offset}`;
      return {
        rows: rows.map((r) => ({
          ...out(r),
          state:
            r.effectiveFrom.getTime() > now.getTime()
              ? ('scheduled' as const)
              : r.effectiveTo !== null && r.effectiveTo.getTime() <= now.getTime()
                ? ('archived' as const)
                : ('in_force' as const),
        })),
        total: rows.length === 0 ? 0 : Number(rows[0]!.total),
        limit: q.limit,
        offset: q.offset,
      };
    },
  };
}

export type SheetReads = ReturnType<typeof createSheetReads>;
