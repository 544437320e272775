import { Decimal } from 'decimal.js';
import type { Db } from '../../db/connection.js';
import type { ChargeInput, ChargeResult, EntryContext, Ledger } from '../../ledger/index.js';
import { round6 } from '../../rating/index.js';
import type { MarkupTerms } from './call-charge.js';

const hundred = new Decimal(100);

/** A sub-account's markup on `base` at `pct` percent, rounded once to 6 places (spec "Conventions"). */
export const markupOn = (base: Decimal, pct: Decimal): Decimal => round6(base.times(pct).div(hundred));

/** A payer's markups and the operator they are paid to (null, and no markup, for an account that is not a sub-account). */
export interface PayerMarkups extends MarkupTerms {
  operatorId: string | null;
}

/** The percentage a payer pays on `routeId`: its markup on that route (migration 256), else its own. */
export const markupPctOn = (p: MarkupTerms, routeId: string | null): Decimal =>
  (routeId === null ? undefined : p.byRoute.get(routeId)) ?? p.pct;

/** What a reseller's markup posting needs: who pays, whom it pays, how much, and the entries' context. */
export interface MarkupCharge {
  /** Posted under `<key>:markup`. */
  key: string;
  payer: string;
  /** The sub-account's operator; null when the payer is not a sub-account (nothing is posted). */
  operatorId: string | null;
  markup: string;
  context: EntryContext;
}

/**
 * The reseller's markup on a sub-account's traffic, charged to the sub-account and credited to its
 * operator (Application Manager), right behind the charge it marks up; null when there is none.
 * Calls, messages, route checks and caller-ID tests all post it here.
 */
export function chargeMarkup(
  ledger: Ledger,
  tx: Db,
  m: MarkupCharge,
  opts?: { events?: boolean },
): Promise<ChargeResult | null> {
  const input = markupInput(m);
  return input ? ledger.charge(input, tx, opts) : Promise.resolve(null);
}

/** The ledger charge of a reseller's markup; null when there is none to post. */
export function markupInput(m: MarkupCharge): ChargeInput | null {
  if (!m.operatorId || !new Decimal(m.markup).gt(0)) return null;
  return { postingKey: `${m.key}:markup`, accountId: m.payer, sellerId: m.operatorId, amount: m.markup, ...m.context };
}
