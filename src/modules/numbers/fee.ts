import { Decimal } from 'decimal.js';
import type { Money } from '../../ledger/money.js';

/**
 * The platform's part of a number price and the seller's rest, at `[numbers] platform_fee_percent`;
 * the fee is rounded half-up to 6 places, so fee plus seller is always the price.
 */
export function createFeeSplit(platformFeePercent: string) {
  const rate = new Decimal(platformFeePercent).div(100);
  return (price: Money) => {
    const fee = price.times(rate);
    return { fee, seller: price.minus(fee) };
  };
}
