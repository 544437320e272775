import { Decimal } from 'decimal.js';
import { billableSeconds, callCost, round6, toMoney, type BillingIncrement } from '../../rating/index.js';

/** What one finished leg costs, split the way the ledger posts it. */
export interface LegCharge {
  billableSeconds: number;
  /** Buyer price per minute: seller rate plus platform fee, plus the reseller markup when a sub-account pays. */
  ratePerMinute: string;
  /** Everything the paying account is charged. */
  total: string;
  /** The route seller's part. */
  seller: string;
  /** The platform fee. */
  fee: string;
  /** The reseller's margin on a sub-account call (0 otherwise). */
  markup: string;
}

export interface PricedRoute {
  /** Buyer price per minute before markup (seller rate plus platform fee). */
  price: Decimal;
  sellerRate: Decimal;
  increment: BillingIncrement;
  /**
   * The payer's own markup on this route (a sub-account's route markup); it replaces the markup
   * given for the call. Absent: the call's markup applies.
   */
  markupPct?: Decimal | undefined;
  /**
   * A second leg the payer pays for the same seconds from the same hold (a forwarded number call's
   * inbound minutes beside the forward route): the hold and the affordable length count both.
   */
  alongside?: PricedRoute | undefined;
  /**
   * The payer's sell rate for the dialled number (a Switch customer's deck): charged instead of
   * price plus markup, the difference the operator's margin. Absent: the markup applies.
   */
  sell?: SellPrice | undefined;
}

/** A Switch customer's sell rate per minute and its billing increment (src/modules/switch/customers). */
export interface SellPrice {
  rate: Decimal;
  increment: BillingIncrement;
}

/** A sub-account's markups: its own (or its operator's default) and those it has per route. */
export interface MarkupTerms {
  pct: Decimal;
  byRoute: ReadonlyMap<string, Decimal>;
}

export const NO_MARKUP: MarkupTerms = { pct: new Decimal(0), byRoute: new Map() };

/** The markup a payer with `terms` pays on `routeId`, as the route's `markupPct` (undefined: the payer's own). */
export const routeMarkup = (terms: MarkupTerms, routeId: string): Decimal | undefined => terms.byRoute.get(routeId);

const hundred = new Decimal(100);

/** Price plus markup percent, rounded once to 6 places. */
export function withMarkup(amount: Decimal, markupPct: Decimal): { markup: Decimal; total: Decimal } {
  const markup = round6(amount.times(markupPct).div(hundred));
  return { markup, total: amount.plus(markup) };
}

/** Prices a leg of `durationSeconds`, rounding each part once to 6 places (spec "Conventions"). */
export function chargeLeg(route: PricedRoute, durationSeconds: number, callMarkupPct: Decimal): LegCharge {
  if (route.sell) return chargeAtSellRate(route, route.sell, durationSeconds);
  const markupPct = route.markupPct ?? callMarkupPct;
  const billable = billableSeconds(durationSeconds, route.increment);
  const base = callCost(billable, route.price);
  const seller = Decimal.min(callCost(billable, route.sellerRate), base);
  const { markup, total } = withMarkup(base, markupPct);
  return {
    billableSeconds: billable,
    ratePerMinute: toMoney(withMarkup(route.price, markupPct).total),
    total: toMoney(total),
    seller: toMoney(seller),
    fee: toMoney(base.minus(seller)),
    markup: toMoney(markup),
  };
}

/**
 * A leg at the payer's sell rate (docs/switch.md "Customers and sell rates"): the route's cost in
 * its own increments as ever (seller and fee), the customer billed the sell rate in the sell row's
 * increments, the difference the operator's margin. A call is never routed where the sell rate per
 * minute is below the route's price (planning leaves such routes out); where increments alone would
 * put one call's sell amount under its cost, the customer pays the cost and the margin is 0, so the
 * operator never pays for a customer's call.
 */
function chargeAtSellRate(route: PricedRoute, sell: SellPrice, durationSeconds: number): LegCharge {
  const costSeconds = billableSeconds(durationSeconds, route.increment);
  const base = callCost(costSeconds, route.price);
  const seller = Decimal.min(callCost(costSeconds, route.sellerRate), base);
  const sold = callCost(billableSeconds(durationSeconds, sell.increment), sell.rate);
  const total = Decimal.max(sold, base);
  return {
    billableSeconds: costSeconds === 0 ? 0 : billableSeconds(durationSeconds, sell.increment),
    ratePerMinute: toMoney(sell.rate),
    total: toMoney(total),
    seller: toMoney(seller),
    fee: toMoney(base.minus(seller)),
    markup: toMoney(total.minus(base)),
  };
}

/**
 * `chargeLeg(...).total` as a Decimal, without the split, the rate and their strings the total does
 * not need (every call's hold prices each candidate route this way). Both parts are already rounded
 * to 6 places, so their sum equals the total chargeLeg formats.
 */
function legTotal(route: PricedRoute, seconds: number, callMarkupPct: Decimal): Decimal {
  if (route.sell) return new Decimal(chargeLeg(route, seconds, callMarkupPct).total);
  const base = callCost(billableSeconds(seconds, route.increment), route.price);
  return withMarkup(base, route.markupPct ?? callMarkupPct).total;
}

/** What `seconds` cost on `r` and the leg billed alongside it, markup included. */
function legsTotal(r: PricedRoute, seconds: number, markupPct: Decimal): Decimal {
  const own = legTotal(r, seconds, markupPct);
  return r.alongside ? own.plus(legTotal(r.alongside, seconds, markupPct)) : own;
}

/**
 * The longest call `available` pays for at the dearest candidate, in whole seconds, capped at
 * `capSeconds`; 0 when not even the first billing block is covered.
 */
export function affordableSeconds(
  available: Decimal,
  routes: readonly PricedRoute[],
  markupPct: Decimal,
  capSeconds: number,
): number {
  let seconds = capSeconds;
  for (const r of routes) {
    // A sell rate bills in its own increments: found by bisection like two legs.
    if (r.alongside || r.sell) {
      seconds = Math.min(seconds, affordableWithAlongside(available, r, markupPct, seconds));
      continue;
    }
    const perMinute = r.price.times((r.markupPct ?? markupPct).plus(hundred)).div(hundred);
    if (perMinute.lte(0)) continue;
    const fit = available.times(60).div(perMinute).floor().toNumber();
    // Round down to what whole billing blocks allow, so the hold always covers the bill.
    const blocks =
      fit < r.increment.first
        ? 0
        : r.increment.first + Math.floor((fit - r.increment.first) / r.increment.next) * r.increment.next;
    seconds = Math.min(seconds, blocks);
  }
  return Math.max(0, seconds);
}

/**
 * Two legs, or a sell rate, with their own increments: the longest length whose cost fits
 * `available`, found by bisection (cost only grows with length, so every shorter call is covered too).
 */
function affordableWithAlongside(available: Decimal, r: PricedRoute, markupPct: Decimal, capSeconds: number): number {
  if (legsTotal(r, capSeconds, markupPct).lte(available)) return capSeconds;
  let lo = 0;
  let hi = capSeconds;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (legsTotal(r, mid, markupPct).lte(available)) lo = mid;
    else hi = mid;
  }
  return lo;
}

/** The hold that covers `seconds` at the dearest candidate (with the leg billed alongside it). */
export function holdFor(seconds: number, routes: readonly PricedRoute[], markupPct: Decimal): string {
  let max = new Decimal(0);
  for (const r of routes) {
    const total = legsTotal(r, seconds, markupPct);
    if (total.gt(max)) max = total;
  }
  return toMoney(max);
}
