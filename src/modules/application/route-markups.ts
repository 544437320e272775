import { Decimal } from 'decimal.js';
import type { Sql } from '../../db/connection.js';
import { notFound } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { NO_MARKUP, type MarkupTerms } from '../cdrs/index.js';
import { createApplicationRepo } from './repo.js';

const pct = (v: string) => new Decimal(v).toFixed(3);

/**
 * A reseller's markup per route for one sub-account: on a route with its own markup, the
 * sub-account's calls and messages carry it instead of the sub-account's markup (or the
 * operator's default). The billing path reads `terms` (API calls, SMS) or the trunk payer
 * terms (sip-trunks), and prices each route with it (`PricedRoute.markupPct`).
 */
export function createRouteMarkups(deps: { sql: Sql; clock: Clock }) {
  const repo = createApplicationRepo(deps.sql);

  async function ownSub(operatorId: string, subId: string) {
    const row = await repo.get(subId, deps.clock.now());
    if (!row || row.parentId !== operatorId) throw notFound('Sub-account');
    return row;
  }

  const item = (r: { routeId: string; markupPct: string; createdAt: Date; updatedAt: Date }) => ({
    routeId: r.routeId,
    markupPct: pct(r.markupPct),
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
  });

  /** The markups a sub-account pays (NO_MARKUP for an account that is not a sub-account). */
  async function terms(subId: string): Promise<MarkupTerms> {
    const r = await repo.markupTerms(subId);
    if (!r) return NO_MARKUP;
    return {
      pct: new Decimal(r.markupPct ?? r.defaultMarkupPct ?? 0),
      byRoute: new Map(r.routeIds.map((id, i) => [id, new Decimal(r.routePcts[i]!)])),
    };
  }

  return {
    terms,

    async list(operatorId: string, subId: string) {
      await ownSub(operatorId, subId);
      const [own, rows] = await Promise.all([terms(subId), repo.routeMarkups(subId)]);
      return { subAccountId: subId, markupPct: own.pct.toFixed(3), items: rows.map(item) };
    },

    async put(operatorId: string, subId: string, routeId: string, markupPct: string | number) {
      await ownSub(operatorId, subId);
      const value = new Decimal(typeof markupPct === 'number' ? String(markupPct) : markupPct).toFixed(3);
      return item(await repo.putRouteMarkup(subId, routeId, value, deps.clock.now()));
    },

    async remove(operatorId: string, subId: string, routeId: string) {
      await ownSub(operatorId, subId);
      if (!(await repo.deleteRouteMarkup(subId, routeId))) throw notFound('Route markup');
      return { routeId, deleted: true as const };
    },
  };
}

export type RouteMarkups = ReturnType<typeof createRouteMarkups>;
