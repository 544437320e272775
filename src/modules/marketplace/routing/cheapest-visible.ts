import type { Decimal } from 'decimal.js';
import { buyerRate, priceSms, toMoney, type PlatformFee } from '../../../rating/index.js';
import type { PurchasesService } from '../purchases/service.js';
import type { DeckCache } from './deck-cache.js';

/** The cheapest route a caller can see for a number, priced for a buyer (seller rate plus platform fee). */
export interface CheapestRoute {
  routeId: string;
  rate: string;
  unit: 'min' | 'msg';
  billingIncrement: string | null;
  destination: string;
  matchedPrefix: string;
  /** Visible routes whose deck covers the number. */
  routesServing: number;
  /** Distinct sellers whose decks cover the number, by the destination name each deck gives it. */
  destinationsBySeller: Map<string, string>;
  /** SMS: which row priced the cheapest route, and that route's country price. */
  sms: { rateBasis: 'network' | 'country'; countryRate: string } | null;
}

/**
 * Routes visible to a caller: every public active route, plus, for a signed-in caller, its own
 * and purchased routes (private ones included). Anonymous callers see public routes only.
 */
export async function cheapestVisible(
  deps: { decks: DeckCache; purchases: PurchasesService; fee: PlatformFee },
  q: { digits: string; type: 'voice' | 'sms'; accountId: string | null; mccMnc: string | null },
): Promise<CheapestRoute | null> {
  const { decks } = deps;
  await decks.ensureLoaded();
  const ids = new Set(decks.publicRoutes(q.type).map((m) => m.routeId));
  if (q.accountId !== null) for (const u of await deps.purchases.usableRoutes(q.accountId, q.type)) ids.add(u.routeId);
  let best: { routeId: string; price: Decimal; increment: string | null; destination: string; prefix: string } | null =
    null;
  let bestSms: CheapestRoute['sms'] = null;
  let serving = 0;
  const bySeller = new Map<string, string>();
  for (const routeId of ids) {
    const index = decks.registry.get(routeId);
    const meta = decks.meta(routeId);
    if (index === undefined || meta === undefined || meta.status !== 'active') continue;
    let price: Decimal;
    let match;
    let sms: CheapestRoute['sms'] = null;
    if (q.type === 'sms') {
      const p = priceSms(index, q.digits, q.mccMnc, deps.fee);
      if (p === undefined) continue;
      price = p.buyerRate;
      match = p.network ?? p.country;
      sms = { rateBasis: p.basis, countryRate: toMoney(buyerRate(p.country.rateDecimal, deps.fee, 'msg')) };
    } else {
      const m = index.lookup(q.digits);
      if (m === undefined) continue;
      price = buyerRate(m.rateDecimal, deps.fee, 'min');
      match = m;
    }
    serving++;
    bySeller.set(meta.sellerId, match.destination);
    if (best === null || price.lt(best.price) || (price.eq(best.price) && match.prefix.length > best.prefix.length)) {
      best = {
        routeId,
        price,
        increment: q.type === 'voice' ? match.increment.text : null,
        destination: match.destination,
        prefix: match.prefix,
      };
      bestSms = sms;
    }
  }
  if (best === null) return null;
  return {
    routeId: best.routeId,
    rate: toMoney(best.price),
    unit: q.type === 'voice' ? 'min' : 'msg',
    billingIncrement: best.increment,
    destination: best.destination,
    matchedPrefix: best.prefix,
    routesServing: serving,
    destinationsBySeller: bySeller,
    sms: bestSms,
  };
}
