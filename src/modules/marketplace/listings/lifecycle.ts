import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import type { Sql } from '../../../db/connection.js';
import { AppError, conflict, notFound, ruleError } from '../../../http/errors.js';
import type { Clock } from '../../../platform/clock.js';
import { newId } from '../../../platform/ids.js';
import { toMoney } from '../../../rating/index.js';
import type { RoutingCache } from '../routing/routing-cache.js';
import { sellerSales } from './quality.js';
import * as repo from './repo.js';
import type { RoutesService, SmsDeliveryInput } from './service.js';

const DAY = 86_400_000;

/**
 * A listing's lifecycle beyond creation and terms (spec group "Marketplace routes"): pause and
 * resume, visibility, delete while unsold, clone, one route's SMS delivery, removing a SIP
 * endpoint, and the seller's sales per route. A status change reaches this daemon's caches at once
 * and the peers through the routes trigger and the deck notification.
 */
export function createListingLifecycle(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  routes: RoutesService;
  routingCache?: RoutingCache;
}) {
  const { sql, clock, log, routes } = deps;

  const own = async (sellerId: string, id: string) => {
    const r = await repo.findOwnRoute(sql, id, sellerId);
    if (r === undefined) throw notFound('Route');
    return r;
  };
  const changed = async (id: string) => {
    deps.routingCache?.routeChanged(id);
    await routes.decks.reload(id);
  };
  const setStatus = async (id: string, status: 'active' | 'paused') => {
    await sql.begin(async (tx) => {
      await tx`update routes set status = ${status}, updated_at = ${clock.now()} where id = ${id}`;
      await repo.bumpDeck(tx, id);
    });
    await changed(id);
  };

  return {
    /** No new call or message goes over a paused listing (calls in progress end as they started); it leaves the marketplace. */
    async pause(sellerId: string, id: string) {
      const r = await own(sellerId, id);
      if (r.status === 'suspended') throw conflict('The operator suspended this listing');
      if (r.status === 'active') await setStatus(id, 'paused');
      return routes.getRoute(id, sellerId);
    },

    async resume(sellerId: string, id: string) {
      const r = await own(sellerId, id);
      if (r.status === 'suspended')
        throw conflict('The operator suspended this listing: only the operator reinstates it');
      if (r.status === 'paused') await setStatus(id, 'active');
      return routes.getRoute(id, sellerId);
    },

    /**
     * Public or private. Going private keeps the purchases buyers hold; new buyers need a grant.
     * A blend holding routes the seller bought stays private.
     */
    async setVisibility(sellerId: string, id: string, visibility: 'public' | 'private') {
      await own(sellerId, id);
      if (visibility === 'public') {
        const [lent] = await sql`
          select 1 from route_blend_members m join routes x on x.id = m.member_id
          where m.blend_id = ${id} and x.seller_id <> ${sellerId} limit 1`;
        if (lent !== undefined)
          throw ruleError('A blend holding routes you bought is for your own traffic: it stays private');
      }
      await sql.begin(async (tx) => {
        await tx`update routes set visibility = ${visibility}, updated_at = ${clock.now()} where id = ${id}`;
        await repo.bumpDeck(tx, id);
      });
      await changed(id);
      return routes.getRoute(id, sellerId);
    },

    /** Deletes a listing nobody else holds a purchase of and no live blend uses; it leaves every routing order. */
    async remove(sellerId: string, id: string) {
      await own(sellerId, id);
      await sql.begin(async (tx) => {
        await tx`select 1 from routes where id = ${id} for update`;
        const [sold] = await tx`
          select 1 from purchases where route_id = ${id} and status in ('active', 'paused') and account_id <> ${sellerId} limit 1`;
        if (sold !== undefined) throw conflict('The listing has buyers: pause it, or wait until their purchases end');
        const [blend] = await tx`select 1 from route_blends where route_id = ${id}`;
        if (blend !== undefined) throw ruleError('Delete a blend with DELETE /routes/blends/{id}');
        const [member] = await tx`
          select 1 from route_blend_members m join routes b on b.id = m.blend_id
          where m.member_id = ${id} and b.status <> 'deleted' limit 1`;
        if (member !== undefined) throw conflict('A blend uses this route: take it out of the blend first');
        await tx`update routes set status = 'deleted', updated_at = ${clock.now()} where id = ${id}`;
        await tx`delete from routing_orders where route_id = ${id}`;
        await repo.bumpDeck(tx, id);
      });
      await changed(id);
      log.info({ sellerId, routeId: id }, 'listing deleted');
      return { id, deleted: true as const };
    },

    /** A new private listing with the same terms, delivery (credentials included) and rates in force now. */
    async clone(sellerId: string, id: string, name: string | undefined) {
      const r = await own(sellerId, id);
      const [blend] = await sql`select 1 from route_blends where route_id = ${id}`;
      if (blend !== undefined) throw ruleError('A blend is composed anew with POST /routes/blends');
      const copy = newId();
      const now = clock.now();
      await sql.begin(async (tx) => {
        await tx`
          insert into routes (id, seller_id, type, name, country, visibility, expected_asr, expected_acd, expected_pdd,
            cli_type, billing_increment, capacity, max_cps, notice_days, sms_delivery, media_mode)
          select ${copy}, seller_id, type, ${name ?? `${r.name} (copy)`.slice(0, 120)}, country, 'private', expected_asr,
            expected_acd, expected_pdd, cli_type, billing_increment, capacity, max_cps, notice_days, sms_delivery, media_mode
          from routes where id = ${id}`;
        await tx`insert into rate_decks (route_id) values (${copy})`;
        const endpoints = await tx<
          { id: string }[]
        >`select id from route_endpoints where route_id = ${id} order by priority, id`;
        for (const e of endpoints)
          await tx`
            insert into route_endpoints (id, route_id, host, port, transport, tech_prefix, username, password, priority, weight, label)
            select ${newId()}, ${copy}, host, port, transport, tech_prefix, username, password, priority, weight, label
            from route_endpoints where id = ${e.id}`;
        const [n] = await tx<{ n: number }[]>`
          with ins as (
            insert into rate_rows (route_id, prefix, mcc_mnc, origin, destination, rate, increment, effective_from)
            select ${copy}, prefix, mcc_mnc, origin, destination, rate, increment, ${now}
            from rate_rows where route_id = ${id} and effective_from <= ${now} and (effective_to is null or effective_to > ${now})
            returning 1)
          select count(*)::int as n from ins`;
        await tx`update rate_decks set row_count = ${n!.n}, uploaded_at = ${now} where route_id = ${copy}`;
        await repo.bumpDeck(tx, copy);
      });
      await routes.decks.reload(copy);
      return routes.getRoute(copy, sellerId);
    },

    /** One SMS route's delivery (SMPP or HTTPS), checked as the bulk form checks it. */
    async setSmsDelivery(sellerId: string, id: string, delivery: SmsDeliveryInput) {
      const r = await own(sellerId, id);
      if (r.type !== 'sms') throw ruleError('Only SMS routes have SMS delivery');
      const done = await routes.bulkSmsDelivery(sellerId, { routeIds: [id], smsDelivery: delivery });
      if (!done.check.ok) throw new AppError('VALIDATION_ERROR', 'Request validation failed', done.check.problems);
      return routes.getRoute(id, sellerId);
    },

    /** Removes a saved SIP endpoint; a voice route keeps at least one. */
    async removeEndpoint(sellerId: string, endpointId: string) {
      const e = await repo.findOwnEndpoint(sql, endpointId, sellerId);
      if (e === undefined) throw notFound('Endpoint');
      await sql.begin(async (tx) => {
        await tx`select 1 from routes where id = ${e.routeId} for update`;
        if ((await repo.countEndpoints(tx, e.routeId)) <= 1)
          throw ruleError('A voice route needs at least one SIP endpoint: add another first');
        await tx`delete from route_endpoints where id = ${endpointId}`;
      });
      deps.routingCache?.routeChanged(e.routeId);
      return { id: endpointId, routeId: e.routeId, deleted: true as const };
    },

    /** The seller's sales per own route over `days`: buyers holding it, traffic and revenue (never who bought). */
    async sales(sellerId: string, days: number) {
      const since = new Date(clock.now().getTime() - days * DAY);
      const listings = await sql<
        { id: string; name: string; type: 'voice' | 'sms'; status: string; buyers: number; purchases: number }[]
      >`
        select r.id, r.name, r.type, r.status,
          (select count(distinct p.account_id)::int from purchases p where p.route_id = r.id and p.status = 'active') as buyers,
          (select count(*)::int from purchases p where p.route_id = r.id and p.created_at >= ${since}) as purchases
        from routes r where r.seller_id = ${sellerId} and r.status <> 'deleted' order by r.id desc limit 10000`;
      const traffic = new Map((await sellerSales(sql, sellerId, since)).map((s) => [s.routeId, s]));
      const rows = listings.map((l) => {
        const t = traffic.get(l.id);
        return {
          routeId: l.id,
          name: l.name,
          type: l.type,
          status: l.status,
          activeBuyers: l.buyers,
          newPurchases: l.purchases,
          calls: t?.calls ?? 0,
          answeredCalls: t?.answered ?? 0,
          billedMinutes: Math.round((Number(t?.billedSeconds ?? 0) / 60) * 100) / 100,
          messages: t?.messages ?? 0,
          revenue: t?.revenue ?? '0.000000',
        };
      });
      return {
        days,
        since: since.toISOString(),
        revenue: toMoney(rows.reduce((s, r) => s.plus(r.revenue), new Decimal(0))),
        routes: rows,
      };
    },
  };
}

export type ListingLifecycle = ReturnType<typeof createListingLifecycle>;
