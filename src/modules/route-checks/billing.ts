import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import type { TransactionSql } from '../../db/connection.js';
import { AppError, SqlState } from '../../http/errors.js';
import type { Ledger } from '../../ledger/index.js';
import { toMoney } from '../../rating/index.js';
import { chargeMarkup, markupOn } from '../cdrs/index.js';

export type PaidFrom = 'test_credit' | 'balance' | 'mixed';

export interface CheckCharge {
  cost: string;
  paidFrom: PaidFrom | null;
  /** The postings made, so a failed test message can be refunded. */
  postingIds: string[];
}

/** Who pays a check and the reseller markup on it (Application Manager). */
export interface CheckPayer {
  accountId: string;
  /** The sub-account's operator, paid the markup; null for an account that is not a sub-account. */
  operatorId: string | null;
  markupPct: Decimal;
}

/** The three parts of a price, in the order test credit pays them: platform fee, seller, markup. */
interface Parts {
  fee: Decimal;
  seller: Decimal;
  markup: Decimal;
}

const ZERO = new Decimal(0);

/** Splits `paid` over the parts in order (fee, then seller, then markup); returns what each part got. */
function allot(paid: Decimal, of: Parts): Parts {
  const fee = Decimal.min(paid, of.fee);
  const seller = Decimal.min(paid.minus(fee), of.seller);
  return { fee, seller, markup: Decimal.min(paid.minus(fee).minus(seller), of.markup) };
}

const minus = (a: Parts, b: Parts): Parts => ({
  fee: a.fee.minus(b.fee),
  seller: a.seller.minus(b.seller),
  markup: a.markup.minus(b.markup),
});

/**
 * Charges one check leg (spec "Route checks", billing): the buyer price (`total`: the seller's
 * `seller` plus the platform fee) and the reseller markup of a sub-account, from test credit first,
 * then the balance (`paidFrom`).
 *
 * Test credit pays the fee first, then the seller's part, then the markup
 * (`ledger_charge_test_credit`): the grant returns to the pool and the platform pays the seller's
 * part from its revenue; it earns nothing from its own grant and a reseller earns no markup from it.
 * The balance pays the rest as any call: the seller its part, the platform its fee, the operator
 * its markup (`chargeMarkup`, as calls and messages). A balance that cannot pay its part leaves that
 * part unpaid (the leg was already carried): logged, and `cost` says what was charged.
 */
export async function chargeTestCreditFirst(
  deps: { ledger: Ledger; log: Logger },
  tx: TransactionSql,
  o: {
    payer: CheckPayer;
    key: string;
    total: Decimal;
    seller: Decimal;
    sellerId: string;
    reference: string;
    checkId: string;
    /** The operator's margin when the payer is billed a sell rate (docs/switch.md), instead of its markup. */
    markup?: Decimal | undefined;
  },
): Promise<CheckCharge> {
  const { ledger } = deps;
  const seller = Decimal.min(o.seller, o.total);
  const price: Parts = { fee: o.total.minus(seller), seller, markup: o.markup ?? markupOn(o.total, o.payer.markupPct) };
  const total = price.fee.plus(price.seller).plus(price.markup);
  if (total.lte(0)) return { cost: '0.000000', paidFrom: null, postingIds: [] };
  const accountId = o.payer.accountId;
  const b = await ledger.balanceOf(accountId, tx);
  const fromTest = Decimal.min(Decimal.max(new Decimal(b.testCredit).minus(b.testHeld), ZERO), total);
  const byTest = allot(fromTest, price);
  const byBalance = minus(price, byTest);
  const context = { reference: o.reference, relatedEntityType: 'route_check', relatedEntityId: o.checkId };
  const postingIds: string[] = [];
  if (fromTest.gt(0)) {
    const r = await ledger.chargeTestCredit(
      {
        ...context,
        postingKey: `${o.key}:test`,
        accountId,
        sellerId: o.sellerId,
        amount: toMoney(fromTest),
        sellerAmount: toMoney(byTest.seller),
      },
      tx,
    );
    postingIds.push(r.postingId);
  }
  let charged = fromTest;
  const base = byBalance.seller.plus(byBalance.fee);
  if (base.plus(byBalance.markup).gt(0)) {
    try {
      const ids = await tx.savepoint(async (sp) => {
        const out: string[] = [];
        if (base.gt(0)) {
          const r = await ledger.charge(
            {
              ...context,
              postingKey: `${o.key}:charge`,
              accountId,
              sellerId: o.sellerId,
              amount: toMoney(byBalance.seller),
              fee: toMoney(byBalance.fee),
            },
            sp,
          );
          out.push(r.postingId);
        }
        const m = await chargeMarkup(ledger, sp, {
          key: o.key,
          payer: accountId,
          operatorId: o.payer.operatorId,
          markup: toMoney(byBalance.markup),
          context,
        });
        if (m) out.push(m.postingId);
        return out;
      });
      postingIds.push(...ids);
      charged = total;
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code !== SqlState.INSUFFICIENT_BALANCE && code !== SqlState.DAILY_CAP) throw err;
      deps.log.warn({ checkId: o.checkId, key: o.key }, 'route check leg not charged: insufficient balance');
    }
  }
  const paidFrom: PaidFrom | null = charged.lte(0)
    ? null
    : fromTest.gt(0)
      ? charged.gt(fromTest)
        ? 'mixed'
        : 'test_credit'
      : 'balance';
  return { cost: toMoney(charged), paidFrom, postingIds };
}

/**
 * Spec "Route checks" rule 4, "a funded balance is required": a balance above zero that, with the
 * unused test credit (spent first), pays `cost`, the most a check may charge at the payer's price.
 */
export async function requireFunded(ledger: Ledger, accountId: string, cost: Decimal, what: string): Promise<void> {
  const b = await ledger.balanceOf(accountId);
  const available = new Decimal(b.available);
  const testCredit = Decimal.max(new Decimal(b.testCredit).minus(b.testHeld), ZERO);
  if (available.lte(0) || available.plus(testCredit).lt(cost)) {
    throw new AppError(
      'VALIDATION_ERROR',
      `Insufficient balance: ${what} may cost ${cost.toFixed(6)} and needs a funded balance`,
    );
  }
}
