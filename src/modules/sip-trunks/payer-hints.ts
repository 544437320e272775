import { Decimal } from 'decimal.js';
import type { Clock } from '../../platform/clock.js';
import { createGrowingLru } from '../../platform/growing-lru.js';

/**
 * Payers seen capped on a UTC day (a hold refused or a settlement reached the cap), and the
 * available balance each payer's last hold left: hints only, the ledger functions decide.
 * Bounded against a flood of distinct payers: the least recently used hint goes first.
 */
export function createPayerHints(clock: Clock) {
  const capSuspects = createGrowingLru<string, string>(50_000);
  const availableHints = createGrowingLru<string, Decimal>(50_000);
  const utcDay = () => clock.now().toISOString().slice(0, 10);
  return {
    /** Seen capped today: its cap is worth reading before routing. */
    capSuspect(payer: string): boolean {
      return capSuspects.get(payer) === utcDay();
    },
    capLifted(payer: string) {
      capSuspects.delete(payer);
    },
    capReached(payer: string) {
      capSuspects.set(payer, utcDay());
    },
    available(payer: string): Decimal | undefined {
      return availableHints.get(payer);
    },
    setAvailable(payer: string, available: string) {
      availableHints.set(payer, new Decimal(available));
    },
    forgetAvailable(payer: string) {
      availableHints.delete(payer);
    },
  };
}

export type PayerHints = ReturnType<typeof createPayerHints>;
