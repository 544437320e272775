import { Decimal } from 'decimal.js';

/**
 * A Switch customer's sell rate per message over `segments`: what it pays and the margin its
 * operator earns over `base` (never below the route's cost, so the operator never pays for it).
 * The SMS path bills by it and the dialer budgets SMS campaigns by it.
 */
export function sellPriced(base: Decimal, rate: Decimal, segments: number): { markup: Decimal; total: Decimal } {
  const total = Decimal.max(rate.times(segments).toDecimalPlaces(6, Decimal.ROUND_HALF_UP), base);
  return { markup: total.minus(base), total };
}
