import { Decimal } from 'decimal.js';
import type { BillingIncrement } from './increment.js';
import { billableSeconds } from './increment.js';
import { round6 } from './money.js';
import type { PrefixIndex, RateMatch } from './prefix-index.js';
import { NO_ORIGIN, type CallerOrigin } from './origin.js';

/**
 * The platform fee added to a seller's rate to give a buyer's price. Two forms:
 * - `absolute`: a fixed amount added per minute of voice (`perMinute`) and per SMS segment (`perMessage`);
 *   e.g. seller 0.010000/min + perMinute 0.001500 → buyer 0.011500/min.
 * - `percent`: the seller rate times `percent`/100 added to it; e.g. seller 0.010000 with 12.5 % →
 *   0.011250. The product is rounded to 6 places half-up.
 * A seller's own routes are priced the same way; whether the fee is waived there is the caller's decision.
 */
export type PlatformFee =
  | { readonly kind: 'absolute'; readonly perMinute: Decimal; readonly perMessage: Decimal }
  | { readonly kind: 'percent'; readonly percent: Decimal };

export type RateUnit = 'min' | 'msg';

/** Config form of the fee (money and percentage as decimal strings). */
export type PlatformFeeConfig =
  | { readonly kind: 'absolute'; readonly perMinute: string; readonly perMessage: string }
  | { readonly kind: 'percent'; readonly percent: string };

const DECIMAL_RE = /^\d{1,14}(\.\d{1,6})?$/;

/** Validates a fee configuration; throws a RangeError naming the bad field. */
export function createPlatformFee(cfg: PlatformFeeConfig): PlatformFee {
  const dec = (field: string, v: string): Decimal => {
    if (!DECIMAL_RE.test(v))
      throw new RangeError(`platform fee ${field} must be a non-negative decimal with at most 6 places`);
    return new Decimal(v);
  };
  if (cfg.kind === 'absolute') {
    return Object.freeze({
      kind: 'absolute',
      perMinute: dec('perMinute', cfg.perMinute),
      perMessage: dec('perMessage', cfg.perMessage),
    });
  }
  if (cfg.kind === 'percent') {
    const percent = dec('percent', cfg.percent);
    if (percent.gt(1000)) throw new RangeError('platform fee percent must be at most 1000');
    return Object.freeze({ kind: 'percent', percent });
  }
  throw new RangeError('platform fee kind must be absolute or percent');
}

export const NO_FEE: PlatformFee = Object.freeze({
  kind: 'absolute',
  perMinute: new Decimal(0),
  perMessage: new Decimal(0),
});

/** Buyer's price per unit: seller rate plus the platform fee, rounded to 6 places half-up. */
export function buyerRate(sellerRate: Decimal, fee: PlatformFee, unit: RateUnit): Decimal {
  if (fee.kind === 'absolute') return round6(sellerRate.plus(unit === 'min' ? fee.perMinute : fee.perMessage));
  return round6(sellerRate.plus(sellerRate.times(fee.percent).div(100)));
}

/**
 * Cost of `billable` seconds at `perMinute`: billable × perMinute / 60, rounded once at the end to
 * 6 places half-up (a tie at the 7th place goes up, e.g. 1 s at 0.000030/min = 0.0000005 → 0.000001).
 * The product is exact; the division by 60 is the only inexact step and is rounded only here.
 */
export function callCost(billable: number, perMinute: Decimal): Decimal {
  if (!Number.isInteger(billable) || billable < 0)
    throw new RangeError('billable seconds must be a non-negative integer');
  return round6(perMinute.times(billable).div(60));
}

/** What a finished call costs the buyer and earns the seller. */
export interface CallCharge {
  readonly billableSeconds: number;
  readonly increment: BillingIncrement;
  /** Buyer price per minute (seller rate plus fee). */
  readonly ratePerMinute: Decimal;
  readonly buyerCost: Decimal;
  readonly sellerCredit: Decimal;
}

/** Prices a call of `durationSeconds` at a matched deck row. */
export function priceCall(match: RateMatch, durationSeconds: number, fee: PlatformFee): CallCharge {
  const billable = billableSeconds(durationSeconds, match.increment);
  const ratePerMinute = buyerRate(match.rateDecimal, fee, 'min');
  return {
    billableSeconds: billable,
    increment: match.increment,
    ratePerMinute,
    buyerCost: callCost(billable, ratePerMinute),
    sellerCredit: callCost(billable, match.rateDecimal),
  };
}

/** Which row priced an SMS: the network's own row, or the country row. */
export type SmsRateBasis = 'network' | 'country';

export interface SmsPrice {
  readonly basis: SmsRateBasis;
  /** The country row (the ceiling). */
  readonly country: RateMatch;
  /** The network row when the sheet has one for this number's MCC-MNC. */
  readonly network: RateMatch | null;
  /** Seller price per segment: min(network, country), or the country price. */
  readonly sellerRate: Decimal;
  /** Buyer price per segment (seller price plus fee). */
  readonly buyerRate: Decimal;
}

/**
 * Per-segment SMS price for `digits` in one deck. A number whose network is unknown (`mccMnc` null),
 * or whose network the sheet does not price, pays the country price; a network price is used where
 * the sheet has one and is never allowed above the country price (spec, Versioning point 4).
 * The country row follows the sender's origin where the sheet has origin rows (a numeric sender).
 * Returns undefined when the deck has no country price for the number.
 */
export function priceSms(
  index: PrefixIndex,
  digits: string,
  mccMnc: string | null,
  fee: PlatformFee,
  sender: CallerOrigin = NO_ORIGIN,
): SmsPrice | undefined {
  const country = index.lookupFrom(digits, sender);
  if (country === undefined) return undefined;
  const network = mccMnc === null ? undefined : index.lookupNetwork(digits, mccMnc);
  let sellerRate = country.rateDecimal;
  let basis: SmsRateBasis = 'country';
  if (network !== undefined) {
    basis = 'network';
    if (network.rateDecimal.lt(sellerRate)) sellerRate = network.rateDecimal;
  }
  return { basis, country, network: network ?? null, sellerRate, buyerRate: buyerRate(sellerRate, fee, 'msg') };
}

/** Cost of `segments` SMS segments at a per-segment price (already 6 places, so exact). */
export function smsCost(perSegment: Decimal, segments: number): Decimal {
  if (!Number.isInteger(segments) || segments < 0) throw new RangeError('segments must be a non-negative integer');
  return round6(perSegment.times(segments));
}
