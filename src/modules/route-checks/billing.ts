import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import type { TransactionSql } from '../../db/connection.js';
import { SqlState } from '../../http/errors.js';
import type { Ledger } from '../../ledger/index.js';
import { toMoney } from '../../rating/index.js';

export type PaidFrom = 'test_credit' | 'balance' | 'mixed';

export interface CheckCharge {
  cost: string;
  paidFrom: PaidFrom | null;
  /** The postings made, so a failed test message can be refunded. */
  postingIds: string[];
}

/**
 * Charges one check leg from test credit first, then the balance (spec "Route checks", billing).
 * The test-credit part is the platform's grant, booked as platform revenue in test mode; the seller
 * is paid its share of the part the balance pays. A balance that cannot pay its part leaves that
 * part unpaid (the leg was already carried): logged, and `cost` says what was charged.
 */
export async function chargeTestCreditFirst(
  deps: { ledger: Ledger; log: Logger },
  tx: TransactionSql,
  o: {
    accountId: string;
    key: string;
    total: Decimal;
    seller: Decimal;
    sellerId: string;
    reference: string;
    checkId: string;
  },
): Promise<CheckCharge> {
  const { ledger } = deps;
  if (o.total.lte(0)) return { cost: '0.000000', paidFrom: null, postingIds: [] };
  const b = await ledger.balanceOf(o.accountId, tx);
  const fromTest = Decimal.min(Decimal.max(new Decimal(b.testCredit).minus(b.testHeld), 0), o.total);
  const fromBalance = o.total.minus(fromTest);
  const context = { reference: o.reference, relatedEntityType: 'route_check', relatedEntityId: o.checkId };
  const postingIds: string[] = [];
  if (fromTest.gt(0)) {
    const r = await ledger.charge(
      {
        ...context,
        postingKey: `${o.key}:test`,
        accountId: o.accountId,
        amount: toMoney(fromTest),
        mode: 'test',
        sellerId: null,
      },
      tx,
    );
    postingIds.push(r.postingId);
  }
  let charged = fromTest;
  if (fromBalance.gt(0)) {
    const seller = Decimal.min(o.seller, fromBalance);
    try {
      const r = await tx.savepoint((sp) =>
        ledger.charge(
          {
            ...context,
            postingKey: `${o.key}:charge`,
            accountId: o.accountId,
            sellerId: o.sellerId,
            amount: toMoney(seller),
            fee: toMoney(fromBalance.minus(seller)),
          },
          sp,
        ),
      );
      postingIds.push(r.postingId);
      charged = o.total;
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code !== SqlState.INSUFFICIENT_BALANCE && code !== SqlState.DAILY_CAP) throw err;
      deps.log.warn({ checkId: o.checkId, key: o.key }, 'route check leg not charged: insufficient balance');
    }
  }
  const paidFrom: PaidFrom | null = charged.lte(0)
    ? null
    : fromTest.gt(0)
      ? fromBalance.gt(0) && charged.gt(fromTest)
        ? 'mixed'
        : 'test_credit'
      : 'balance';
  return { cost: toMoney(charged), paidFrom, postingIds };
}
