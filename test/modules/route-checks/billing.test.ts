import { Decimal } from 'decimal.js';
import t from 'tap';
import type { Sql } from '../../../src/db/connection.js';
import { chargeTestCreditFirst } from '../../../src/modules/route-checks/billing.js';
import { newId } from '../../../src/platform/ids.js';
import { createTestDatabase } from '../../helpers/db.js';
import { checkInvariants, ledgerFor, makeAccounts, silent } from '../../ledger/helpers.js';

/**
 * A check leg's money on a real ledger (spec "Route checks", billing): test credit first, then the
 * balance; the test-credit part returns the grant to the pool and the platform pays the seller's
 * part of it; a sub-account's markup goes to its operator from what the balance pays.
 */

/** The sum of a posting set's entries per account kind (platform accounts by kind, others by owner). */
async function moved(sql: Sql, postingIds: string[]) {
  const rows = await sql<{ who: string; s: string }[]>`
    select coalesce(owner_id::text, account_kind) || ':' || account_kind as who, sum(amount)::text as s
    from entries where posting_id = any(${sql.array(postingIds)}::uuid[]) group by 1`;
  return Object.fromEntries(rows.map((r) => [r.who, new Decimal(r.s).toFixed(6)]));
}

t.test('test credit pays fee, then seller, then markup; the balance pays the rest', async (t) => {
  const db = await createTestDatabase(t);
  const { sql } = db;
  const ledger = ledgerFor(sql);
  const [operator, seller] = await makeAccounts(sql, 2);
  const [sub] = await makeAccounts(sql, 1, operator!);
  await ledger.topup({ postingKey: newId(), accountId: sub!, amount: '10.000000', source: 'card' });
  await ledger.grantTestCredit({ postingKey: newId(), accountId: sub!, amount: '0.300000' });

  // Price 1.000000: seller 0.800000, fee 0.200000; markup 10% = 0.100000; 1.100000 in all.
  const checkId = newId();
  const charge = await sql.begin((tx) =>
    chargeTestCreditFirst({ ledger, log: silent }, tx, {
      payer: { accountId: sub!, operatorId: operator!, markupPct: new Decimal(10) },
      key: `routecheck:${checkId}:0`,
      total: new Decimal('1.000000'),
      seller: new Decimal('0.800000'),
      sellerId: seller!,
      reference: 'Route check call',
      checkId,
    }),
  );
  t.same(
    { cost: charge.cost, paidFrom: charge.paidFrom, postings: charge.postingIds.length },
    { cost: '1.100000', paidFrom: 'mixed', postings: 3 },
  );
  t.same(
    await moved(sql, charge.postingIds),
    {
      // 0.3 of test credit: the whole fee (0.2) and 0.1 of the seller's part, paid by the platform.
      [`${sub}:test_credit`]: '-0.300000',
      'test_credit_pool:test_credit_pool': '0.300000',
      'platform_revenue:platform_revenue': '-0.100000',
      // The balance: the seller's other 0.7 and the markup 0.1; no fee left to pay.
      [`${sub}:customer`]: '-0.800000',
      [`${seller}:seller_payable`]: '0.800000',
      [`${operator}:seller_payable`]: '0.100000',
    },
    'each part booked where it belongs, to the sixth decimal',
  );
  const b = await ledger.balanceOf(sub!);
  t.equal(b.balance, '9.200000');
  t.equal(b.testCredit, '0.000000');
  await checkInvariants(t, sql, 'after the charge:');

  // A failed test message refunds every posting: everything returns to where it was.
  for (const [i, id] of charge.postingIds.entries()) {
    await ledger.refund({ postingKey: `refund:${checkId}:${i}`, chargePostingId: id });
  }
  const back = await ledger.balanceOf(sub!);
  t.equal(back.balance, '10.000000');
  t.equal(back.testCredit, '0.300000');
  t.equal((await ledger.balanceOf(seller!)).payable, '0.000000');
  await checkInvariants(t, sql, 'after the refunds:');
});

t.test('all from test credit, no markup without an operator, replays post once', async (t) => {
  const db = await createTestDatabase(t);
  const { sql } = db;
  const ledger = ledgerFor(sql);
  const [buyer, seller] = await makeAccounts(sql, 2);
  await ledger.grantTestCredit({ postingKey: newId(), accountId: buyer!, amount: '5.000000' });
  const checkId = newId();
  const once = () =>
    sql.begin((tx) =>
      chargeTestCreditFirst({ ledger, log: silent }, tx, {
        payer: { accountId: buyer!, operatorId: null, markupPct: new Decimal(0) },
        key: `routecheck:${checkId}:1`,
        total: new Decimal('0.012345'),
        seller: new Decimal('0.010000'),
        sellerId: seller!,
        reference: 'Route check call',
        checkId,
      }),
    );
  const a = await once();
  const b = await once();
  t.same({ cost: a.cost, paidFrom: a.paidFrom }, { cost: '0.012345', paidFrom: 'test_credit' });
  t.same(b.postingIds, a.postingIds, 'the same posting key posts once');
  t.same(await moved(sql, a.postingIds), {
    [`${buyer}:test_credit`]: '-0.012345',
    'test_credit_pool:test_credit_pool': '0.012345',
    'platform_revenue:platform_revenue': '-0.010000',
    [`${seller}:seller_payable`]: '0.010000',
  });
  t.equal((await ledger.balanceOf(buyer!)).testCredit, '4.987655');
  await checkInvariants(t, sql);
});
