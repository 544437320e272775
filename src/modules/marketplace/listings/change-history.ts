import type { Sql } from '../../../db/connection.js';
import { notFound } from '../../../http/errors.js';
import type { RoutesService } from './service.js';

/**
 * Fields of a listing any account that may see it also sees change (what it is buying: terms,
 * stated figures, status); the rest (SMS delivery, the operator's suspension reason, the blend
 * flag's bookkeeping) and who changed anything are the seller's alone.
 */
const BUYER_FIELDS: ReadonlySet<string> = new Set([
  'name',
  'type',
  'country',
  'visibility',
  'status',
  'expected_asr',
  'expected_acd',
  'expected_pdd',
  'cli_type',
  'billing_increment',
  'capacity',
  'max_cps',
  'notice_days',
  'media_mode',
]);

/** Column names as the API names the listing's fields (`max_cps` → `maxCps`). */
const apiName = (column: string): string => column.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
const columnOf = (field: string): string => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

interface ChangeRow {
  id: string;
  field: string;
  oldValue: unknown;
  newValue: unknown;
  actorId: string | null;
  sellerId: string;
  changedAt: Date;
  total: string;
}

/**
 * The history of a listing's changes (migration 287 records them): the seller reads every field
 * with who changed it (the seller or the operator); buyers and anyone else who can see the
 * listing read the fields in BUYER_FIELDS, without who. Newest first, offset-paged.
 */
export function createListingChanges(deps: { sql: Sql; routes: RoutesService }) {
  const { sql } = deps;
  return {
    async list(viewerId: string, routeId: string, q: { field?: string; limit: number; offset: number }) {
      const route = await deps.routes.visibleRoute(routeId, viewerId);
      if (route === undefined) throw notFound('Route');
      const seller = route.sellerId === viewerId;
      const fields = seller ? null : [...BUYER_FIELDS];
      const rows = await sql<ChangeRow[]>`
        select c.id::text, c.field, c.old_value, c.new_value, c.actor_id, r.seller_id, c.changed_at,
          count(*) over () as total
        from route_changes c join routes r on r.id = c.route_id
        where c.route_id = ${routeId}
          ${fields === null ? sql`` : sql`and c.field = any(${sql.array(fields)}::text[])`}
          ${q.field === undefined ? sql`` : sql`and c.field = ${columnOf(q.field)}`}
        order by c.id desc limit ${q.limit} offset ${q.offset}`;
      return {
        rows: rows.map((r) => ({
          id: r.id,
          field: apiName(r.field),
          from: r.oldValue ?? null,
          to: r.newValue ?? null,
          changedAt: new Date(r.changedAt).toISOString(),
          ...(seller
            ? { by: r.actorId === null || r.actorId === r.sellerId ? ('seller' as const) : ('operator' as const) }
            : {}),
          ...(seller ? { actorId: r.actorId } : {}),
        })),
        total: rows.length === 0 ? 0 : Number(rows[0]!.total),
        limit: q.limit,
        offset: q.offset,
      };
    },
  };
}

export type ListingChanges = ReturnType<typeof createListingChanges>;
