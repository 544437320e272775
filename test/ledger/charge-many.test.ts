import t from 'tap';
import type { Db } from '../../src/db/connection.js';
import {
  CHARGE_BATCH_MAX,
  createLedger,
  isItemError,
  itemError,
  type ChargeInput,
  type ChargeResult,
} from '../../src/ledger/ledger.js';
import { createTestDatabase } from '../helpers/db.js';
import { checkInvariants, ledgerFor, makeAccounts, pgCode, silent } from './helpers.js';

t.test('chargeMany posts each item as charge would, and a failing item fails alone', async (t) => {
  const single = await createTestDatabase(t);
  const many = await createTestDatabase(t);
  const run = async (db: typeof single, batched: boolean) => {
    const ledger = ledgerFor(db.sql);
    const [buyer, poor, seller] = await makeAccounts(db.sql, 3);
    await ledger.topup({ accountId: buyer!, amount: '10.000000', source: 'card', postingKey: 'top' });
    await ledger.topup({ accountId: poor!, amount: '5.000000', source: 'card', postingKey: 'top-poor' });
    const inputs: ChargeInput[] = [
      { postingKey: 'c-0', accountId: buyer!, sellerId: seller!, amount: '1.000000', fee: '0.100000' },
      { postingKey: 'c-1', accountId: poor!, sellerId: seller!, amount: '50.000000' },
      { postingKey: 'c-2', accountId: buyer!, amount: '0.000000', fee: '0' },
      { postingKey: 'c-0', accountId: buyer!, sellerId: seller!, amount: '1.000000', fee: '0.100000' },
      { postingKey: 'c-3', accountId: poor!, sellerId: null, amount: '2.500000', reference: 'SMS' },
    ];
    const out: (ChargeResult | { code: string | undefined; message: string })[] = [];
    if (batched) {
      for (const r of await ledger.chargeMany(inputs)) {
        out.push(isItemError(r) ? { code: r.error.code, message: r.error.message } : r);
      }
    } else {
      for (const i of inputs) {
        out.push(await ledger.charge(i).catch((e: Error) => ({ code: pgCode(e), message: e.message })));
      }
    }
    await checkInvariants(t, db.sql, batched ? 'batched' : 'single');
    const balances = [await ledger.balanceOf(buyer!), await ledger.balanceOf(poor!), await ledger.balanceOf(seller!)];
    return {
      out: out.map((r) => {
        const { postingId: _p, accountId: _a, ...rest } = r as Record<string, unknown>;
        return rest;
      }),
      balances,
    };
  };
  const a = await run(single, false);
  const b = await run(many, true);
  t.same(b, a, 'same results, errors and balances as one charge at a time');
  t.match(a.out[1], { code: 'SVC01' }, 'the unpayable item is refused with SVC01');
  t.match(a.out[2], { code: 'SVC02' }, 'the zero charge is invalid (SVC02)');
  t.match(a.out[3], { replayed: true }, 'a repeated key in the batch replays');
  t.equal(b.balances[1]!.balance, '2.500000', 'the refused item posted nothing; the next item on the same account did');
});

t.test('chargeGrouped: concurrent charges share calls and each settles as its own charge', async (t) => {
  const { sql } = await createTestDatabase(t);
  const ledger = ledgerFor(sql);
  const [buyer, poor, seller] = await makeAccounts(sql, 3);
  await ledger.topup({ accountId: buyer!, amount: '100.000000', source: 'card', postingKey: 'top' });
  await ledger.topup({ accountId: poor!, amount: '5.000000', source: 'card', postingKey: 'top-poor' });
  const n = CHARGE_BATCH_MAX * 3 + 5;
  const settled = await Promise.allSettled(
    Array.from({ length: n }, (_, i) =>
      ledger.chargeGrouped({
        postingKey: `g-${i}`,
        accountId: i % 10 === 0 ? poor! : buyer!,
        sellerId: seller!,
        amount: '0.500000',
        fee: '0.010000',
      }),
    ),
  );
  const rejected = settled.filter((s) => s.status === 'rejected');
  // poor pays 0.51 each: 9 of its 11 charges fit in 5.00.
  t.equal(rejected.length, 2, 'only the charges the poor account cannot pay are refused');
  for (const r of rejected) t.equal(pgCode(r.reason), 'SVC01', 'refused as a single charge is (SVC01)');
  t.equal((await ledger.balanceOf(poor!)).balance, '0.410000', 'the poor account paid for what it could');
  t.equal((await ledger.balanceOf(buyer!)).balance, (100 - (n - 11) * 0.51).toFixed(6), 'every other charge posted');
  const [calls] = await sql<
    { n: string }[]
  >`select count(distinct posting_id)::text as n from entries where type = 'charge'`;
  t.equal(Number(calls!.n), n - 2, 'one posting per charge');
  await checkInvariants(t, sql, 'grouped');
});

t.test('chargeGrouped with balance events: a charge crossing the low line posts with its event', async (t) => {
  const { sql } = await createTestDatabase(t);
  const emitted: { accountId: string; event: string; db: Db }[] = [];
  const ledger = createLedger({
    sql,
    clock: { now: () => new Date() },
    log: silent,
    lowBalanceThreshold: '5.000000',
    events: {
      emit: async (db, accountId, event) => {
        await db`select 1`;
        emitted.push({ accountId, event, db });
      },
    },
  });
  const [buyer, seller] = await makeAccounts(sql, 2);
  await ledger.topup({ accountId: buyer!, amount: '6.000000', source: 'card', postingKey: 'top' });
  const results = await Promise.all(
    Array.from({ length: 4 }, (_, i) =>
      ledger.chargeGrouped({ postingKey: `e-${i}`, accountId: buyer!, sellerId: seller!, amount: '0.400000' }),
    ),
  );
  t.equal(results.length, 4, 'every charge posted');
  t.equal((await ledger.balanceOf(buyer!)).balance, '4.400000', 'the balance paid all four');
  const low = emitted.filter((e) => e.event === 'balance.low');
  t.equal(low.length, 1, 'balance.low emitted once, by the charge that crossed the line');
  t.not(low[0]!.db, sql, 'emitted inside a transaction with its posting');
  await checkInvariants(t, sql, 'events');
});

t.test('chargeMany refuses more than CHARGE_BATCH_MAX items and itemError keeps the SQLSTATE', async (t) => {
  const { sql } = await createTestDatabase(t);
  const ledger = ledgerFor(sql);
  const inputs = Array.from({ length: CHARGE_BATCH_MAX + 1 }, (_, i) => ({
    postingKey: `x-${i}`,
    accountId: '01900000-0000-7000-8000-000000000001',
    amount: '1.000000',
  }));
  await t.rejects(ledger.chargeMany(inputs), RangeError);
  const [r] = await ledger.chargeMany(inputs.slice(0, 1));
  t.ok(isItemError(r), 'an unknown account fails its item');
  if (isItemError(r)) t.equal(itemError(r).code, 'SVC03', 'with the single call’s SQLSTATE');
});
