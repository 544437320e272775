import type { Logger } from 'pino';
import type { Sql } from '../../../db/connection.js';
import { conflict, notFound, ruleError } from '../../../http/errors.js';
import type { Clock } from '../../../platform/clock.js';
import { newId } from '../../../platform/ids.js';
import { emit } from '../../../webhooks/emit.js';
import type { RoutesService } from '../listings/service.js';
import type { RoutingCache } from '../routing/routing-cache.js';

type RequestStatus = 'pending' | 'approved' | 'denied' | 'withdrawn';

interface RequestRow {
  id: string;
  routeId: string;
  routeName: string;
  sellerId: string;
  accountId: string;
  status: RequestStatus;
  note: string | null;
  reason: string | null;
  createdAt: Date;
  decidedAt: Date | null;
}

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

/**
 * Access to private listings (spec group "Route access"): a buyer holding a private route's id
 * asks for access, the seller approves (a grant: the route becomes visible to and buyable by the
 * buyer) or denies; each side lists what concerns it. Grants and revocations by the seller
 * directly are the listings service's (`grantAccess`, `revokeAccess`).
 */
export function createAccessService(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  routes: RoutesService;
  routingCache?: RoutingCache;
}) {
  const { sql, clock, routes } = deps;

  const requestView = (r: RequestRow) => ({
    id: r.id,
    routeId: r.routeId,
    accountId: r.accountId,
    status: r.status,
    note: r.note,
    reason: r.reason,
    createdAt: r.createdAt.toISOString(),
    decidedAt: iso(r.decidedAt),
  });

  return {
    /** A buyer asks for access to a private route; the seller is told (`route.access_requested`). */
    async request(accountId: string, routeId: string, note: string | null) {
      const [route] = await sql<{ id: string; sellerId: string; name: string; visibility: string; status: string }[]>`
        select id, seller_id, name, visibility, status from routes where id = ${routeId} and status <> 'deleted'`;
      if (route === undefined) throw notFound('Route');
      if (route.sellerId === accountId) throw conflict('The seller always has access to its own route');
      if (route.visibility === 'public') throw ruleError('A public route needs no access: buy it');
      const id = newId();
      await sql.begin(async (tx) => {
        const [granted] =
          await tx`select 1 from route_access where route_id = ${routeId} and account_id = ${accountId}`;
        if (granted !== undefined) throw conflict('Access is already granted');
        const [open] =
          await tx`select 1 from route_access_requests where route_id = ${routeId} and account_id = ${accountId} and status = 'pending'`;
        if (open !== undefined) throw conflict('A request for this route is already open');
        await tx`insert into route_access_requests (id, route_id, account_id, note) values (${id}, ${routeId}, ${accountId}, ${note})`;
        await emit(tx, {
          accountId: route.sellerId,
          event: 'route.access_requested',
          data: { requestId: id, routeId, routeName: route.name, accountId, note },
        });
      });
      deps.log.info({ routeId, requestId: id }, 'route access requested');
      return { id, routeId, status: 'pending' as const, note, createdAt: clock.now().toISOString() };
    },

    /** The seller approves (granting access) or denies an open request; the buyer is told (`route.access_decided`). */
    async decide(
      sellerId: string,
      routeId: string,
      requestId: string,
      decision: 'approve' | 'deny',
      reason: string | null,
    ) {
      const r = await sql.begin(async (tx) => {
        const [row] = await tx<RequestRow[]>`
          select q.*, r.name as route_name, r.seller_id from route_access_requests q join routes r on r.id = q.route_id
          where q.id = ${requestId} and q.route_id = ${routeId} and r.seller_id = ${sellerId} for update of q`;
        if (row === undefined) throw notFound('Access request');
        if (row.status !== 'pending') throw conflict(`The request is already ${row.status}`);
        const status = decision === 'approve' ? 'approved' : 'denied';
        if (decision === 'approve') await routes.grantAccess(sellerId, routeId, row.accountId, tx);
        const [done] = await tx<RequestRow[]>`
          update route_access_requests set status = ${status}, reason = ${reason}, decided_at = ${clock.now()}
          where id = ${requestId} returning *`;
        await emit(tx, {
          accountId: row.accountId,
          event: 'route.access_decided',
          data: { requestId, routeId, routeName: row.routeName, status, reason },
        });
        return done!;
      });
      if (decision === 'approve') deps.routingCache?.accountChanged(r.accountId);
      return requestView(r);
    },

    /** Grants and requests on an own route, newest first; `status` `granted` lists the grants in force. */
    async byRoute(
      sellerId: string,
      routeId: string,
      q: { status?: RequestStatus | 'granted'; limit: number; offset: number },
    ) {
      const [own] =
        await sql`select 1 from routes where id = ${routeId} and seller_id = ${sellerId} and status <> 'deleted'`;
      if (own === undefined) throw notFound('Route');
      const rows = await sql<
        {
          kind: 'grant' | 'request';
          requestId: string | null;
          accountId: string;
          status: string;
          note: string | null;
          at: Date;
          decidedAt: Date | null;
          total: string;
        }[]
      >`
        select *, count(*) over () as total from (
          select 'grant' as kind, null::uuid as request_id, a.account_id, 'granted' as status, null as note,
            a.granted_at as at, null::timestamptz as decided_at
          from route_access a where a.route_id = ${routeId}
          union all
          select 'request', q.id, q.account_id, q.status, q.note, q.created_at, q.decided_at
          from route_access_requests q where q.route_id = ${routeId}
        ) x
        ${q.status ? sql`where x.status = ${q.status}` : sql``}
        order by x.at desc, x.kind, x.account_id
        limit ${q.limit} offset ${q.offset}`;
      return {
        rows: rows.map((r) => ({
          kind: r.kind,
          requestId: r.requestId,
          accountId: r.accountId,
          status: r.status,
          note: r.note,
          at: r.at.toISOString(),
          decidedAt: iso(r.decidedAt),
        })),
        total: rows.length === 0 ? 0 : Number(rows[0]!.total),
        limit: q.limit,
        offset: q.offset,
      };
    },

    /** The caller's grants and requests as a buyer; a route's name shows once access is granted. */
    async mine(accountId: string, q: { status?: RequestStatus | 'granted'; limit: number; offset: number }) {
      const rows = await sql<
        {
          kind: 'grant' | 'request';
          requestId: string | null;
          routeId: string;
          routeName: string | null;
          status: string;
          at: Date;
          decidedAt: Date | null;
          total: string;
        }[]
      >`
        select *, count(*) over () as total from (
          select 'grant' as kind, null::uuid as request_id, a.route_id, r.name as route_name, 'granted' as status,
            a.granted_at as at, null::timestamptz as decided_at
          from route_access a join routes r on r.id = a.route_id where a.account_id = ${accountId} and r.status <> 'deleted'
          union all
          select 'request', q.id, q.route_id,
            case when exists (select 1 from route_access a where a.route_id = q.route_id and a.account_id = q.account_id)
              then r.name end,
            q.status, q.created_at, q.decided_at
          from route_access_requests q join routes r on r.id = q.route_id where q.account_id = ${accountId}
        ) x
        ${q.status ? sql`where x.status = ${q.status}` : sql``}
        order by x.at desc, x.kind, x.route_id
        limit ${q.limit} offset ${q.offset}`;
      return {
        rows: rows.map((r) => ({
          kind: r.kind,
          requestId: r.requestId,
          routeId: r.routeId,
          routeName: r.routeName,
          status: r.status,
          at: r.at.toISOString(),
          decidedAt: iso(r.decidedAt),
        })),
        total: rows.length === 0 ? 0 : Number(rows[0]!.total),
        limit: q.limit,
        offset: q.offset,
      };
    },
  };
}

export type AccessService = ReturnType<typeof createAccessService>;
