import type { Logger } from 'pino';
import type { Sql } from '../../../db/connection.js';
import { conflict, notFound, ruleError } from '../../../http/errors.js';
import type { Clock } from '../../../platform/clock.js';
import { newId } from '../../../platform/ids.js';
import { emit } from '../../../webhooks/emit.js';
import type { RoutingCache } from '../routing/routing-cache.js';
import type { RoutesService } from '../listings/service.js';
import * as repo from './repo.js';
import type { PurchaseRow } from './repo.js';

const present = (p: PurchaseRow) => ({
  id: p.id,
  routeId: p.routeId,
  routeName: p.routeName,
  type: p.routeType,
  status: p.status,
  routingPriority: p.position,
  createdAt: p.createdAt.toISOString(),
  cancelledAt: p.cancelledAt === null ? null : p.cancelledAt.toISOString(),
  pausedAt: p.pausedAt === null ? null : p.pausedAt.toISOString(),
});

export type PurchaseView = ReturnType<typeof present>;

/** Buying routes and the buyer's routing order; owns purchases and routing_orders. */
export function createPurchasesService(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  routes: RoutesService;
  routingCache?: RoutingCache;
}) {
  const { sql, clock, routes } = deps;

  return {
    /** Buys a route; buying it again while the purchase is active returns that purchase (`created: false`). */
    async buy(accountId: string, routeId: string): Promise<{ purchase: PurchaseView; created: boolean }> {
      const route = await routes.visibleRoute(routeId, accountId);
      if (route === undefined) throw notFound('Route');
      routes.conflictIfOwn(route, accountId);
      if (route.status !== 'active') throw ruleError('Route is not active');
      const purchaseId = newId();
      // The purchase and its `route.purchased` events commit together: the seller learns of the sale
      // (never of the buyer), the buyer gets a confirmation for its own systems.
      const created = await sql.begin(async (tx) => {
        if (!(await repo.insert(tx, purchaseId, accountId, routeId))) return false;
        const data = {
          purchaseId,
          routeId,
          routeName: route.name,
          type: route.type,
          purchasedAt: clock.now().toISOString(),
        };
        await emit(tx, { accountId: route.sellerId, event: 'route.purchased', data: { ...data, role: 'seller' } });
        await emit(tx, { accountId, event: 'route.purchased', data: { ...data, role: 'buyer' } });
        return true;
      });
      // Every write below tells the cache at once so this daemon's next send sees it before the trigger's NOTIFY arrives.
      if (created) deps.routingCache?.accountChanged(accountId);
      const p = await repo.findActive(sql, accountId, routeId);
      // The insert also yields to a paused purchase (one open purchase per buyer and route).
      if (p === undefined) throw conflict('A paused purchase of this route exists: resume it');
      deps.log.info({ accountId, routeId, created }, 'route purchased');
      return { purchase: present(p), created };
    },

    async list(accountId: string, q: { status?: 'active' | 'paused' | 'cancelled'; cursor?: string; limit: number }) {
      return (await repo.list(sql, accountId, q)).map(present);
    },

    async get(accountId: string, id: string) {
      const p = await repo.findById(sql, id, accountId);
      if (p === undefined) throw notFound('Purchase');
      return present(p);
    },

    async cancel(accountId: string, id: string) {
      const done = await sql.begin((tx) => repo.cancel(tx, id, accountId, clock.now()));
      if (done) deps.routingCache?.accountChanged(accountId);
      if (!done) {
        const p = await repo.findById(sql, id, accountId);
        if (p === undefined) throw notFound('Purchase');
        throw ruleError('Purchase is already cancelled');
      }
      return this.get(accountId, id);
    },

    /**
     * Pauses or resumes a purchase. Paused, the route carries no new call or message of the buyer
     * (and its purchase SIP credentials stop authenticating); calls in progress finish and settle
     * against their holds as they started. Resuming restores it, routing-order position included.
     */
    async setPaused(accountId: string, id: string, paused: boolean) {
      const p = await repo.findById(sql, id, accountId);
      if (p === undefined) throw notFound('Purchase');
      if (p.status === 'cancelled') throw ruleError('Purchase is cancelled');
      if (p.status === (paused ? 'paused' : 'active')) return present(p);
      if (!paused) {
        const route = await routes.visibleRoute(p.routeId, accountId);
        if (route === undefined || route.status !== 'active') throw ruleError('Route is not active');
      }
      const done = await repo.setPaused(sql, id, accountId, paused, clock.now());
      if (!done) throw conflict('The purchase changed meanwhile; read it again');
      deps.routingCache?.accountChanged(accountId);
      deps.log.info({ accountId, purchaseId: id, paused }, paused ? 'purchase paused' : 'purchase resumed');
      return this.get(accountId, id);
    },

    /** The buyer's traffic and spend on a purchase's route over the last `days` (its sub-accounts' included). */
    async usage(accountId: string, id: string, days: number) {
      const p = await repo.findById(sql, id, accountId);
      if (p === undefined) throw notFound('Purchase');
      const since = new Date(clock.now().getTime() - days * 86_400_000);
      const u = await repo.buyerUsage(sql, accountId, p.routeId, since);
      return {
        purchaseId: p.id,
        routeId: p.routeId,
        days,
        since: since.toISOString(),
        calls: u.calls,
        answeredCalls: u.answered,
        billedMinutes: Math.round((Number(u.billedSeconds) / 60) * 100) / 100,
        messages: u.messages,
        spend: u.spend,
      };
    },

    /** Increases and removals scheduled on a purchased route (spec: buyers see upcoming rate changes). */
    async upcomingRateChanges(accountId: string, id: string) {
      const p = await repo.findById(sql, id, accountId);
      if (p === undefined) throw notFound('Purchase');
      return routes.upcomingChanges(p.routeId, p.id);
    },

    /**
     * The buyer accepts a scheduled increase (or removal) before it comes into force: `changeId`, or
     * every change scheduled on the route when omitted. Acceptance is recorded consent shown as
     * `acceptedAt` in the upcoming changes; the change's time and price are not moved, since one
     * deck serves every buyer of the route and the seller gave notice to all of them.
     */
    async acceptRate(accountId: string, id: string, changeId: string | null) {
      const p = await repo.findById(sql, id, accountId);
      if (p === undefined) throw notFound('Purchase');
      if (p.status !== 'active') throw ruleError('Purchase is cancelled');
      const accepted = await routes.acceptChanges(p.routeId, p.id, changeId);
      return { purchaseId: p.id, routeId: p.routeId, accepted };
    },

    usableRoutes: (accountId: string, type: 'voice' | 'sms') =>
      deps.routingCache?.usableRoutes(accountId, type) ?? repo.usableRoutes(sql, accountId, type),
    /** The same, read from the database: for rare checks that must see a change made a moment ago (the cache follows NOTIFY). */
    usableRoutesNow: (accountId: string, type: 'voice' | 'sms') => repo.usableRoutes(sql, accountId, type),

    async routingOrder(accountId: string) {
      const rows = await repo.routingOrder(sql, accountId);
      return rows.map((r) => ({ routeId: r.routeId, position: r.position, routeName: r.routeName, type: r.routeType }));
    },

    /** Replaces the whole order; every route must be a purchase or an own route. */
    async setRoutingOrder(accountId: string, routeIds: readonly string[]) {
      if (new Set(routeIds).size !== routeIds.length) throw ruleError('A route appears twice in the routing order');
      const usable = new Set([
        ...(await repo.usableRoutes(sql, accountId, 'voice')).map((u) => u.routeId),
        ...(await repo.usableRoutes(sql, accountId, 'sms')).map((u) => u.routeId),
      ]);
      const unknown = routeIds.filter((id) => !usable.has(id));
      if (unknown.length > 0) throw ruleError(`Not a purchased or own active route: ${unknown.join(', ')}`);
      await sql.begin((tx) => repo.replaceOrder(tx, accountId, routeIds));
      deps.routingCache?.accountChanged(accountId);
      return this.routingOrder(accountId);
    },

    async setPriority(accountId: string, purchaseId: string, priority: number | null) {
      const p = await repo.findById(sql, purchaseId, accountId);
      if (p === undefined || p.status !== 'active') throw notFound('Purchase');
      await repo.setPosition(sql, accountId, p.routeId, priority);
      deps.routingCache?.accountChanged(accountId);
      return this.get(accountId, purchaseId);
    },
  };
}

export type PurchasesService = ReturnType<typeof createPurchasesService>;
