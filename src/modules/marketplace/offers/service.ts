import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import type { Config } from '../../../config/schema.js';
import type { Db, Sql } from '../../../db/connection.js';
import { conflict, notFound, ruleError, validationError, type ErrorDetail } from '../../../http/errors.js';
import type { Clock } from '../../../platform/clock.js';
import { newId } from '../../../platform/ids.js';
import { buyerRate, toMoney } from '../../../rating/index.js';
import { emit } from '../../../webhooks/emit.js';
import type { BlendCache } from '../blends/blend-cache.js';
import { platformFeeFrom, type RoutesService } from '../listings/service.js';
import type { PrivateRateCache } from './private-rates.js';
import * as repo from './repo.js';
import type { OfferRow, OfferStatus, Side } from './repo.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
export const DEFAULT_EXPIRY_HOURS = 72;
export const DEFAULT_VALID_DAYS = 30;
export const MAX_DESTINATIONS = 100;

export interface RateIn {
  prefix: string;
  rate: string;
}

/**
 * Offers (spec group "Offers"): a buyer asks a route's seller for prices on destinations and a
 * volume; the receiving side counters, accepts or declines; an open offer expires at `expiresAt`.
 * Accepting writes the proposal as the buyer's private rates on the route for `validDays`, which
 * rating uses instead of the deck's rate (routing/routing.ts). Rates are seller rates, before the
 * platform fee; `buyerPrice` shows them with it. Neither side's account is shown to the other.
 */
export function createOffersService(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  config: Readonly<Config>;
  routes: RoutesService;
  blends: BlendCache;
  privateRates: PrivateRateCache;
}) {
  const { sql, clock, log, routes } = deps;
  const fee = platformFeeFrom(deps.config);

  const sideOf = (o: OfferRow, accountId: string): Side => (o.buyerId === accountId ? 'buyer' : 'seller');
  const otherOf = (o: OfferRow, side: Side): string => (side === 'buyer' ? o.sellerId : o.buyerId);
  /** An open offer past its time reads as expired before the sweep marks it. */
  const statusOf = (o: OfferRow): OfferStatus =>
    (o.status === 'pending' || o.status === 'countered') && o.expiresAt.getTime() <= clock.now().getTime()
      ? 'expired'
      : o.status;

  const present = (o: OfferRow, viewerId: string) => {
    const side = sideOf(o, viewerId);
    const status = statusOf(o);
    const open = status === 'pending' || status === 'countered';
    const unit = o.routeType === 'voice' ? 'min' : 'msg';
    return {
      id: o.id,
      routeId: o.routeId,
      routeName: o.routeName,
      type: o.routeType,
      role: side,
      status,
      proposedBy: o.proposedBy,
      // The side that did not make the proposal on the table may accept or counter it.
      awaiting: open ? ((o.proposedBy === 'buyer' ? 'seller' : 'buyer') as Side) : null,
      rates: o.rates.map((r) => ({
        prefix: r.prefix,
        rate: toMoney(new Decimal(r.rate)),
        buyerPrice: toMoney(buyerRate(new Decimal(r.rate), fee, unit)),
      })),
      volume: o.volume,
      note: o.note,
      validDays: o.validDays,
      rounds: o.rounds,
      expiresAt: o.expiresAt.toISOString(),
      decidedAt: o.decidedAt === null ? null : o.decidedAt.toISOString(),
      declinedBy: o.declinedBy,
      createdAt: o.createdAt.toISOString(),
      updatedAt: o.updatedAt.toISOString(),
    };
  };

  /** Every prefix must be a destination the route's deck covers; one rate per prefix. */
  const checkRates = (routeId: string, rates: readonly RateIn[]) => {
    const problems: ErrorDetail[] = [];
    const index = routes.decks.registry.get(routeId);
    const seen = new Set<string>();
    rates.forEach((r, i) => {
      if (seen.has(r.prefix)) problems.push({ path: `/rates/${i}/prefix`, message: 'appears twice' });
      seen.add(r.prefix);
      if (index?.lookup(r.prefix) === undefined)
        problems.push({ path: `/rates/${i}/prefix`, message: "not a destination the route's rates cover" });
    });
    if (problems.length > 0) throw validationError(problems);
    return rates.map((r) => ({ prefix: r.prefix, rate: toMoney(new Decimal(r.rate)) }));
  };

  const expiryFrom = (hours: number | undefined) =>
    new Date(clock.now().getTime() + (hours ?? DEFAULT_EXPIRY_HOURS) * HOUR);

  /** The open offer, locked, for the side that may act on it now. */
  const openFor = async (tx: Db, accountId: string, id: string, needAwaiting: boolean) => {
    const o = await repo.find(tx, id, accountId, true);
    if (o === undefined) throw notFound('Offer');
    const status = statusOf(o);
    if (status !== 'pending' && status !== 'countered') throw conflict(`The offer is ${status}`);
    const side = sideOf(o, accountId);
    if (needAwaiting && o.proposedBy === side) throw conflict('The other side has not answered your last proposal yet');
    return { o, side };
  };

  const eventData = (o: OfferRow, extra: Record<string, unknown>) => ({
    offerId: o.id,
    routeId: o.routeId,
    routeName: o.routeName,
    ...extra,
  });

  return {
    async create(
      buyerId: string,
      input: {
        routeId: string;
        rates: RateIn[];
        volume?: number;
        note?: string;
        validDays?: number;
        expiresInHours?: number;
      },
    ) {
      const route = await routes.visibleRoute(input.routeId, buyerId);
      if (route === undefined) throw notFound('Route');
      if (route.sellerId === buyerId) throw conflict('An offer is asked of another seller’s route');
      if (route.status !== 'active') throw ruleError('Route is not active');
      if (await deps.blends.isBlend(route.id))
        throw ruleError('A blend is priced by its members: ask for an offer on a route');
      await routes.decks.ensureLoaded();
      const rates = checkRates(route.id, input.rates);
      const id = newId();
      await sql.begin(async (tx) => {
        await tx`select 1 from routes where id = ${route.id} for update`;
        if (await repo.openOfferExists(tx, buyerId, route.id))
          throw conflict('An open offer on this route exists: counter, accept or decline it first');
        await repo.insert(tx, {
          id,
          routeId: route.id,
          buyerId,
          sellerId: route.sellerId,
          volume: input.volume ?? null,
          note: input.note ?? null,
          validDays: input.validDays ?? DEFAULT_VALID_DAYS,
          expiresAt: expiryFrom(input.expiresInHours),
        });
        await repo.replaceRates(tx, id, rates);
        await emit(tx, {
          accountId: route.sellerId,
          event: 'offer.received',
          data: {
            offerId: id,
            routeId: route.id,
            routeName: route.name,
            kind: 'request',
            destinations: rates.length,
            volume: input.volume ?? null,
          },
        });
      });
      log.info({ offerId: id, routeId: route.id }, 'offer requested');
      return this.get(buyerId, id);
    },

    async list(
      accountId: string,
      q: { role?: Side; status?: OfferStatus; routeId?: string; cursor?: string; limit: number },
    ) {
      return (await repo.list(sql, accountId, q)).map((o) => present(o, accountId));
    },

    async get(accountId: string, id: string) {
      const o = await repo.find(sql, id, accountId);
      if (o === undefined) throw notFound('Offer');
      return present(o, accountId);
    },

    /** The side the offer awaits puts its own prices on the table; the other side is told. */
    async counter(accountId: string, id: string, input: { rates: RateIn[]; note?: string; expiresInHours?: number }) {
      await routes.decks.ensureLoaded();
      await sql.begin(async (tx) => {
        const { o, side } = await openFor(tx, accountId, id, true);
        const rates = checkRates(o.routeId, input.rates);
        await repo.replaceRates(tx, id, rates);
        await repo.counter(tx, id, side, input.note ?? null, expiryFrom(input.expiresInHours), clock.now());
        await emit(tx, {
          accountId: otherOf(o, side),
          event: 'offer.received',
          data: eventData(o, { kind: 'counter', from: side, destinations: rates.length, round: o.rounds + 1 }),
        });
      });
      return this.get(accountId, id);
    },

    /** The side the offer awaits accepts the proposal: it becomes the buyer's private rates at once. */
    async accept(accountId: string, id: string) {
      let buyerId = '';
      await sql.begin(async (tx) => {
        const { o, side } = await openFor(tx, accountId, id, true);
        const now = clock.now();
        await repo.decide(tx, id, 'accepted', side, now);
        await repo.grantPrivateRates(tx, o, now, new Date(now.getTime() + o.validDays * DAY));
        buyerId = o.buyerId;
        await emit(tx, {
          accountId: otherOf(o, side),
          event: 'offer.accepted',
          data: eventData(o, { by: side, destinations: o.rates.length, validDays: o.validDays }),
        });
      });
      // This daemon's next call sees the rates before the trigger's NOTIFY arrives.
      deps.privateRates.changed(buyerId);
      log.info({ offerId: id }, 'offer accepted');
      return this.get(accountId, id);
    },

    /** Either side ends an open offer (the buyer withdraws, the seller refuses). */
    async decline(accountId: string, id: string) {
      await sql.begin(async (tx) => {
        const { o, side } = await openFor(tx, accountId, id, false);
        await repo.decide(tx, id, 'declined', side, clock.now());
        await emit(tx, { accountId: otherOf(o, side), event: 'offer.declined', data: eventData(o, { by: side }) });
      });
      return this.get(accountId, id);
    },

    /** Private rates in force: the caller's as a buyer, or those the caller granted as a seller (buyers not named). */
    async privateRates(accountId: string, q: { role: Side; routeId?: string; limit: number; offset: number }) {
      const page = await repo.privateRates(sql, accountId, q, clock.now());
      return {
        rows: page.rows.map((r) => ({
          routeId: r.routeId,
          routeName: r.routeName,
          type: r.routeType,
          prefix: r.prefix,
          rate: r.rate,
          buyerPrice: toMoney(buyerRate(new Decimal(r.rate), fee, r.routeType === 'voice' ? 'min' : 'msg')),
          offerId: r.offerId,
          validFrom: r.validFrom.toISOString(),
          validUntil: r.validUntil.toISOString(),
        })),
        total: page.total,
        limit: q.limit,
        offset: q.offset,
      };
    },

    /** Marks open offers past their time expired and tells both sides; returns how many. */
    async expireDue(): Promise<number> {
      return sql.begin(async (tx) => {
        const rows = await repo.expireDue(tx, clock.now());
        for (const r of rows)
          for (const accountId of [r.buyerId, r.sellerId])
            await emit(tx, { accountId, event: 'offer.expired', data: { offerId: r.id, routeId: r.routeId } });
        return rows.length;
      });
    },
  };
}

export type OffersService = ReturnType<typeof createOffersService>;
