import t from 'tap';
import type { Db } from '../../src/db/connection.js';
import {
  CHARGE_BATCH_MAX,
  createLedger,
  isItemError,
  itemError,
  type ChargeInput,
  type ChargeResult,
  type Ledger,
} from '../../src/ledger/ledger.js';
import { createTestDatabase } from '../helpers/db.js';
import { checkInvariants, ledgerFor, makeAccounts, pgCode, silent } from './helpers.js';

/**
 * Posts `inputs` with one chargeMany call, or one charge at a time: each result without its
 * posting and account ids (new on each database), each error as its SQLSTATE and message.
 */
async function postAll(ledger: Ledger, inputs: ChargeInput[], batched: boolean) {
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
  return out.map((r) => {
    const { postingId: _p, accountId: _a, ...rest } = r as Record<string, unknown>;
    return rest;
  });
}

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
    const out = await postAll(ledger, inputs, batched);
    await checkInvariants(t, db.sql, batched ? 'batched' : 'single');
    const balances = [await ledger.balanceOf(buyer!), await ledger.balanceOf(poor!), await ledger.balanceOf(seller!)];
    return {
      out,
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

t.test('chargeMany on accounts that already have their rows: each item as charge would post it', async (t) => {
  // Items the call can decide before posting go without a subtransaction (migration 306): valid
  // amounts, rows present, no daily cap, the balance enough after the batch's earlier charges.
  // The others (a cap, a refusal, bad input, a first row to create) take 223's path. Both must
  // give what one charge at a time gives, item for item.
  const run = async (db: Awaited<ReturnType<typeof createTestDatabase>>, batched: boolean) => {
    const ledger = ledgerFor(db.sql);
    const [buyer, poor, capped, other, fresh, seller, seller2] = await makeAccounts(db.sql, 7);
    await ledger.topup({ accountId: buyer!, amount: '10.000000', source: 'card', postingKey: 'top-b' });
    await ledger.topup({ accountId: poor!, amount: '5.000000', source: 'card', postingKey: 'top-p' });
    await ledger.topup({ accountId: capped!, amount: '10.000000', source: 'card', postingKey: 'top-c' });
    await ledger.topup({ accountId: other!, amount: '5.000000', source: 'card', postingKey: 'top-o' });
    await ledger.setLimits(capped!, { creditLimit: '0', dailySpendCap: '1.000000' });
    await ledger.grantTestCredit({ accountId: buyer!, amount: '2.000000', postingKey: 'grant-b' });
    // Seller rows made, and poor left with 0.99.
    for (const [key, accountId, amount] of [
      ['w-b', buyer, '0.010000'],
      ['w-p', poor, '4.010000'],
      ['w-c', capped, '0.010000'],
    ] as const) {
      await ledger.charge({ postingKey: key, accountId: accountId!, sellerId: seller!, amount });
    }
    const c = (postingKey: string, accountId: string, amount: string, more: Partial<ChargeInput> = {}) => ({
      postingKey,
      accountId,
      sellerId: seller!,
      amount,
      ...more,
    });
    const inputs: ChargeInput[] = [
      c('k-b1', buyer!, '1.000000', { fee: '0.100000', callId: 'call-1', reference: 'r' }),
      c('k-p1', poor!, '0.400000', { fee: '0.010000' }),
      c('k-b2', buyer!, '0.500000', { sellerId: null, relatedEntityType: 'message', relatedEntityId: 'm-1' }),
      c('k-p2', poor!, '0.400000', { fee: '0.010000' }),
      c('k-b1', buyer!, '1.000000', { fee: '0.100000', callId: 'call-1', reference: 'r' }),
      c('k-p3', poor!, '0.400000'),
      c('k-b3', buyer!, '0.300000', { mode: 'test' }),
      c('k-p4', poor!, '0.100000', { sellerId: null }),
      c('w-b', buyer!, '0.010000'),
      c('k-c1', capped!, '0.600000'),
      c('k-c2', capped!, '0.600000'),
      c('k-c3', capped!, '0.100000'),
      c('k-o1', other!, '1.0000001'),
      c('k-o2', other!, 'abc'),
      c('k-o3', other!, '0.200000'),
      c('k-f1', fresh!, '0.500000'),
      c('k-s2', buyer!, '0.200000', { sellerId: seller2! }),
      c('k-b4', buyer!, '8.000000'),
      c('k-b5', buyer!, '0.200000', { fee: '0.000001' }),
    ];
    const out = await postAll(ledger, inputs, batched);
    await checkInvariants(t, db.sql, batched ? 'batched' : 'single');
    const balances = [];
    for (const id of [buyer, poor, capped, other, fresh, seller, seller2]) balances.push(await ledger.balanceOf(id!));
    return {
      out,
      balances,
    };
  };
  const a = await run(await createTestDatabase(t), false);
  const b = await run(await createTestDatabase(t), true);
  t.same(b, a, 'same results, errors and balances as one charge at a time');
  t.same(
    a.out.map((r) => (r as { code?: string }).code ?? (r as { replayed?: boolean }).replayed),
    [false, false, false, false, true, 'SVC01', false, false, true, false, false, 'SVC04'].concat([
      'SVC02',
      '22P02',
      false,
      'SVC01',
      false,
      false,
      'SVC01',
    ]),
    'the cases meant: posted, replayed, refused (balance, cap), invalid',
  );
});
