import t from 'tap';
import type { Sql } from '../../src/db/connection.js';
import {
  createLedger,
  isRefusal,
  refusalError,
  type HoldInput,
  type HoldResult,
  type Ledger,
  type Refusal,
  type SettleInput,
  type SettleResult,
} from '../../src/ledger/ledger.js';
import { createTestDatabase } from '../helpers/db.js';
import { newId } from '../../src/platform/ids.js';
import { checkInvariants, ledgerFor, makeAccounts, pgCode, silent } from './helpers.js';

const holdOf = (r: unknown): HoldResult => {
  if (isRefusal(r)) throw refusalError(r);
  return r as HoldResult;
};
const settled = (r: unknown): SettleResult => {
  if (isRefusal(r)) throw refusalError(r);
  return r as SettleResult;
};

/** Everything of a result that does not depend on generated ids. */
function comparable(r: Record<string, unknown>) {
  const { postingId: _p, holdId: _h, accountId: _a, ...rest } = r;
  return rest;
}

async function entriesOf(sql: Sql) {
  return sql<
    {
      kind: string;
      type: string;
      amount: string;
      after: string | null;
      reference: string | null;
      relatedEntityId: string | null;
    }[]
  >`
    select account_kind as kind, type, amount::text, balance_after::text as after, reference, related_entity_id
    from entries where type <> 'topup' order by seq`;
}

t.test('a batch posts what the single-item functions post, item by item', async (t) => {
  // The same script in two databases: holds and settles one by one in the first, in batches in
  // the second. Entries (order, amounts, balanceAfter) and results must be the same.
  const single = await createTestDatabase(t);
  const batch = await createTestDatabase(t);
  const run = async (sql: Sql, many: boolean) => {
    const ledger = ledgerFor(sql);
    const [buyer, seller, other] = await makeAccounts(sql, 3);
    await ledger.topup({ accountId: buyer!, amount: '10.000000', source: 'card', postingKey: 'top' });
    await ledger.setLimits(buyer!, { creditLimit: '0', dailySpendCap: '2.500000' });
    const holds: HoldInput[] = Array.from({ length: 8 }, (_, i) => ({
      postingKey: `h-${i}`,
      accountId: buyer!,
      amount: i === 5 ? '50.000000' : '1.000000',
      ttlSeconds: 60,
      reference: 'SMS',
      relatedEntityType: 'api_sms',
      relatedEntityId: `m-${i}`,
    }));
    const hr: (HoldResult | Refusal | Error)[] = many ? await ledger.holdMany(holds) : [];
    if (!many) for (const h of holds) hr.push(await ledger.hold(h).catch((e: Error) => e));
    const holdIds = hr.map((r) => (r instanceof Error || isRefusal(r) ? null : r.holdId));
    const settles: SettleInput[] = holdIds.flatMap((holdId, i) =>
      holdId === null
        ? []
        : [
            {
              postingKey: `s-${i}`,
              holdId,
              sellerId: i % 2 ? seller! : other!,
              amount: i === 7 ? '0' : '0.600000',
              fee: i === 7 ? '0' : '0.150000',
              relatedEntityId: `m-${i}`,
            },
          ],
    );
    const sr = many ? await ledger.settleMany(settles) : [];
    if (!many) for (const s of settles) sr.push(await ledger.settle(s));
    return {
      holds: hr.map((r) =>
        r instanceof Error
          ? { code: pgCode(r), message: r.message }
          : isRefusal(r)
            ? { code: r.code, message: r.message }
            : comparable(r),
      ),
      settles: sr.map((r) => (isRefusal(r) ? r : comparable(r))),
      entries: await entriesOf(sql),
      balance: await ledger.balanceOf(buyer!),
      capSuspended: await ledger.capSuspended(buyer!),
    };
  };
  const a = await run(single.sql, false);
  const b = await run(batch.sql, true);
  t.same(b.holds, a.holds, 'hold results, refusal of the unaffordable one included');
  t.equal(b.holds.filter((h) => 'code' in h).length, 1, 'one hold refused');
  t.same(b.settles, a.settles, 'settle results, capReached included');
  t.same(b.entries, a.entries, 'the same entries in the same order with the same balanceAfter');
  t.same(b.balance, a.balance);
  t.equal(b.capSuspended, true, 'the daily cap reached by a settle of the batch suspends the account');
  t.equal(a.capSuspended, true);
  await checkInvariants(t, single.sql, 'single');
  await checkInvariants(t, batch.sql, 'batch');
});

t.test('a batch of plain settles posts what the single-item settles post', async (t) => {
  // The usual batch (no markup, test credit or daily cap; sellers with a payable row) in every
  // shape of its entries (migration 339 builds them differently): two payers interleaved, a seller
  // credited twice, no seller (platform revenue), no fee, a zero settle, a fee alone, a hold larger
  // than its settle, a settle larger than its hold that takes the payer into its credit limit.
  const single = await createTestDatabase(t);
  const batch = await createTestDatabase(t);
  // The same account ids in both databases, so rows compare by owner.
  const ids = Array.from({ length: 4 }, () => newId());
  const run = async (sql: Sql, many: boolean) => {
    const ledger = ledgerFor(sql);
    const [buyer, other, seller, seller2] = ids;
    await sql`insert into accounts ${sql(ids.map((id) => ({ id, email: `${id}@test.local` })))}`;
    for (const [i, payer] of [buyer!, other!].entries())
      await ledger.topup({ accountId: payer, amount: '10.000000', source: 'card', postingKey: `top-${i}` });
    await ledger.setLimits(other!, { creditLimit: '2.000000', dailySpendCap: null });
    // A first sale of each seller, one by one: their payable rows exist before the batch.
    for (const [i, s] of [seller!, seller2!].entries()) {
      const h = await ledger.hold({ postingKey: `first-h-${i}`, accountId: buyer!, amount: '1', ttlSeconds: 60 });
      await ledger.settle({ postingKey: `first-s-${i}`, holdId: h.holdId, sellerId: s, amount: '0.100000' });
    }
    const items: { payer: string; hold: string; settle: Omit<SettleInput, 'postingKey' | 'holdId'> }[] = [
      { payer: buyer!, hold: '1.000000', settle: { sellerId: seller!, amount: '0.600000', fee: '0.150000' } },
      { payer: other!, hold: '2.000000', settle: { sellerId: seller2!, amount: '1.250000', fee: '0.010000' } },
      {
        payer: buyer!,
        hold: '0.500000',
        settle: { sellerId: null, amount: '0.300000', fee: '0.020000', reference: 'own' },
      },
      { payer: other!, hold: '1.000000', settle: { sellerId: seller!, amount: '0.400000', callId: 'call-9' } },
      { payer: buyer!, hold: '0.200000', settle: { sellerId: seller!, amount: '0', fee: '0' } },
      { payer: buyer!, hold: '0.300000', settle: { sellerId: seller2!, amount: '0', fee: '0.050000' } },
      // More than its hold, into the credit limit.
      { payer: other!, hold: '8.000000', settle: { sellerId: seller!, amount: '8.500000', fee: '0.000001' } },
    ];
    const holds: HoldResult[] = [];
    for (const [i, it] of items.entries())
      holds.push(
        await ledger.hold({
          postingKey: `h-${i}`,
          accountId: it.payer,
          amount: it.hold,
          ttlSeconds: 60,
          reference: 'SMS',
          relatedEntityType: 'api_sms',
          relatedEntityId: `m-${i}`,
          callId: i === 2 ? 'call-2' : null,
        }),
      );
    const settles: SettleInput[] = items.map((it, i) => ({
      postingKey: `s-${i}`,
      holdId: holds[i]!.holdId,
      ...it.settle,
    }));
    const sr: (SettleResult | Refusal)[] = many ? await ledger.settleMany(settles) : [];
    if (!many) for (const s of settles) sr.push(await ledger.settle(s));
    return {
      settles: sr.map((r) => (isRefusal(r) ? r : comparable(r))),
      entries: await sql`
        select a.owner_id, e.account_kind, e.type, e.amount::text, e.balance_after::text, e.reference,
               e.related_entity_type, e.related_entity_id, e.call_id, p.posting_key
        from entries e join postings p on p.id = e.posting_id left join ledger_accounts a on a.id = e.account_id
        where e.type <> 'topup' order by e.seq`,
      holds: await sql`select posting_key, status, settled_amount::text from holds order by posting_key`,
      // Stored results without `replayed`: ledger_settle stores it, ledger_settle_many never did.
      postings: (
        await sql<{ key: string; type: string; result: Record<string, unknown> | null }[]>`
        select posting_key as key, type, result - 'replayed' as result from postings order by posting_key`
      ).map((p) => ({
        ...p,
        result: p.result && comparable(p.result),
      })),
      accounts: await sql`
        select owner_id, kind, balance::text, held::text, spend_today::text, spend_day::text
        from ledger_accounts where not sharded order by owner_id, kind`,
      platform: await sql`select account_id, sum(balance)::text as s from ledger_account_shards group by 1 order by 1`,
    };
  };
  const a = await run(single.sql, false);
  const b = await run(batch.sql, true);
  t.same(b.settles, a.settles, 'the same results');
  t.same(b.entries, a.entries, 'the same entries in the same order with the same balanceAfter');
  t.same(b.holds, a.holds, 'the same holds settled at the same amounts');
  t.same(b.postings, a.postings, 'the same postings and stored results');
  t.same(b.accounts, a.accounts, 'the same balances, held and spend');
  t.same(b.platform, a.platform, 'the same platform revenue and fees');
  await checkInvariants(t, single.sql, 'single');
  await checkInvariants(t, batch.sql, 'batch');
});

t.test('a batch of holds posts what the single-item holds post', async (t) => {
  // The usual SMS batch in every path of its items (migration 338 finds payers and builds rows
  // differently): two payers interleaved, live and test credit of one owner whichever of its two
  // rows is older, a key repeated in the batch, context given or not, a hold into the credit
  // limit, and refusals of a balance too small and of a reached daily cap.
  const single = await createTestDatabase(t);
  const batch = await createTestDatabase(t);
  // The same account ids and clock in both databases, so rows compare whole.
  const ids = Array.from({ length: 4 }, () => newId());
  const clock = { now: () => new Date('2026-03-04T05:06:07.000Z') };
  const run = async (sql: Sql, many: boolean) => {
    const ledger = ledgerFor(sql, clock);
    const [buyer, other, capped, seller] = ids;
    await sql`insert into accounts ${sql(ids.map((id) => ({ id, email: `${id}@test.local` })))}`;
    // The buyer's test-credit row is made after its live one, the other's before.
    await ledger.topup({ accountId: buyer!, amount: '10.000000', source: 'card', postingKey: 'top-b' });
    await ledger.grantTestCredit({ postingKey: 'test-b', accountId: buyer!, amount: '3.000000' });
    await ledger.grantTestCredit({ postingKey: 'test-o', accountId: other!, amount: '1.000000' });
    await ledger.topup({ accountId: other!, amount: '5.000000', source: 'card', postingKey: 'top-o' });
    await ledger.setLimits(other!, { creditLimit: '2.000000', dailySpendCap: null });
    await ledger.topup({ accountId: capped!, amount: '5.000000', source: 'card', postingKey: 'top-c' });
    await ledger.setLimits(capped!, { creditLimit: '0', dailySpendCap: '1.000000' });
    await ledger.charge({ postingKey: 'cap-c', accountId: capped!, sellerId: seller!, amount: '1.000000' });
    const sms = (i: number) => ({ reference: 'SMS', relatedEntityType: 'api_sms', relatedEntityId: `m-${i}` });
    const holds: HoldInput[] = (
      [
        { postingKey: 'h-0', accountId: buyer!, amount: '0.005000', ...sms(0) },
        { postingKey: 'h-1', accountId: other!, amount: '0.500000', mode: 'test', ...sms(1) },
        { postingKey: 'h-2', accountId: other!, amount: '1.000000', callId: 'call-2', ...sms(2) },
        { postingKey: 'h-3', accountId: buyer!, amount: '0.200000', mode: 'test', ...sms(3) },
        { postingKey: 'h-0', accountId: buyer!, amount: '0.005000', ...sms(0) },
        { postingKey: 'h-5', accountId: capped!, amount: '0.010000', ...sms(5) },
        { postingKey: 'h-6', accountId: buyer!, amount: '10.000000', ...sms(6) },
        // Into the credit limit: 6 available (5 + 2 - 1 held).
        { postingKey: 'h-7', accountId: other!, amount: '5.500000', ...sms(7) },
        { postingKey: 'h-8', accountId: buyer!, amount: '0.012345' },
        { postingKey: 'h-9', accountId: buyer!, amount: '3.000000', mode: 'test', ...sms(9) },
      ] as Omit<HoldInput, 'ttlSeconds'>[]
    ).map((h) => ({ ttlSeconds: 60, ...h }));
    const hr: (HoldResult | Refusal | Error)[] = many ? await ledger.holdMany(holds) : [];
    if (!many) for (const h of holds) hr.push(await ledger.hold(h).catch((e: Error) => e));
    return {
      results: hr.map((r) =>
        r instanceof Error
          ? { code: pgCode(r), message: r.message }
          : isRefusal(r)
            ? { code: r.code, message: r.message }
            : comparable(r),
      ),
      ids: hr.flatMap((r) => (r instanceof Error || isRefusal(r) ? [] : [{ hold: r.holdId, posting: r.postingId }])),
      holds: await sql`
        select h.posting_key, h.owner_id, a.kind, h.amount::text, h.status, h.expires_at, h.reference,
               h.related_entity_type, h.related_entity_id, h.call_id, h.created_at, h.closed_at, h.settled_amount
        from holds h join ledger_accounts a on a.id = h.account_id order by h.posting_key`,
      stored: await sql<{ hold: string; posting: string }[]>`
        select h.id as hold, p.id as posting from holds h join postings p using (posting_key) order by h.posting_key`,
      // Stored results without `replayed`: ledger_hold stores it, ledger_hold_many never did.
      postings: (
        await sql<{ key: string; type: string; result: Record<string, unknown> | null }[]>`
        select posting_key as key, type, result - 'replayed' as result from postings where type = 'hold' order by posting_key`
      ).map((p) => ({ ...p, result: p.result && comparable(p.result) })),
      // Rows the ledger wrote carry the test clock; the others, made with the accounts, the server's.
      accounts: await sql`
        select owner_id, kind, balance::text, held::text, credit_limit::text, cap_suspended_day::text,
               updated_at = ${clock.now()} as written
        from ledger_accounts where not sharded order by owner_id, kind`,
    };
  };
  const a = await run(single.sql, false);
  const b = await run(batch.sql, true);
  t.same(b.results, a.results, 'the same results, refusals and the in-batch replay included');
  t.same(
    b.results.map((r) => ('code' in r ? r.code : r['replayed'])),
    [false, false, false, false, true, 'SVC04', 'SVC01', false, false, 'SVC01'],
    'each path taken',
  );
  t.same(b.holds, a.holds, 'the same hold rows');
  t.same(b.postings, a.postings, 'the same postings and stored results');
  t.same(b.accounts, a.accounts, 'the same balances and held');
  for (const [label, r] of [
    ['single', a],
    ['batch', b],
  ] as const) {
    // The in-batch replay names the first item's hold and posting.
    const distinct = [...new Map(r.ids.map((x) => [x.hold, x])).values()];
    t.same(
      [...distinct].sort((x, y) => x.hold.localeCompare(y.hold)),
      [...r.stored].sort((x, y) => x.hold.localeCompare(y.hold)),
      `${label}: results name the stored holds and postings`,
    );
    for (const x of r.stored) {
      t.match(x.hold, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, `${label}: hold id v7`);
      t.match(
        x.posting,
        /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
        `${label}: posting id v7`,
      );
      t.ok(x.posting > x.hold, `${label}: the posting's id after its hold's`);
    }
  }
  await checkInvariants(t, single.sql, 'single');
  await checkInvariants(t, batch.sql, 'batch');
});

t.test('posting keys make batch items idempotent', async (t) => {
  const { sql } = await createTestDatabase(t);
  const ledger = ledgerFor(sql);
  const [buyer, seller] = await makeAccounts(sql, 2);
  await ledger.topup({ accountId: buyer!, amount: '20.000000', source: 'card', postingKey: 'top' });
  const first = await ledger.hold({ postingKey: 'h-0', accountId: buyer!, amount: '1.000000', ttlSeconds: 60 });
  const hr = await ledger.holdMany([
    { postingKey: 'h-0', accountId: buyer!, amount: '1.000000', ttlSeconds: 60 },
    { postingKey: 'h-1', accountId: buyer!, amount: '2.000000', ttlSeconds: 60 },
    { postingKey: 'h-1', accountId: buyer!, amount: '2.000000', ttlSeconds: 60 },
  ]);
  const [h0, h1, h1again] = hr.map(holdOf);
  t.equal(h0!.replayed, true, 'a key used by a single-item call replays');
  t.equal(h0!.holdId, first.holdId);
  t.equal(h1!.replayed, false);
  t.equal(h1again!.replayed, true, 'a key repeated inside the batch replays the earlier item');
  t.equal(h1again!.holdId, h1!.holdId);
  const again = (
    await ledger.holdMany([{ postingKey: 'h-1', accountId: buyer!, amount: '2.000000', ttlSeconds: 60 }])
  ).map(holdOf);
  t.same(comparable(again[0]!), comparable({ ...h1!, replayed: true }), 'a later batch replays the first result');
  t.equal((await ledger.balanceOf(buyer!)).held, '3.000000', 'held once per key');

  const settles: SettleInput[] = [
    { postingKey: 's-0', holdId: h0!.holdId, sellerId: seller!, amount: '0.500000', fee: '0.100000' },
    { postingKey: 's-1', holdId: h1!.holdId, sellerId: seller!, amount: '1.500000', fee: '0.200000' },
  ];
  const s1 = (await ledger.settleMany(settles)).map(settled);
  const s2 = (await ledger.settleMany(settles)).map(settled);
  t.same(
    s2.map((r) => r.replayed),
    [true, true],
    'a replayed batch posts nothing',
  );
  t.same(
    s2.map((r) => r.postingId),
    s1.map((r) => r.postingId),
  );
  const single = await ledger.settle(settles[0]!);
  t.equal(single.replayed, true, 'a single-item call replays a batch item');
  t.equal(single.postingId, s1[0]!.postingId);
  const b = await ledger.balanceOf(buyer!);
  t.equal(b.balance, '17.700000');
  t.equal(b.held, '0.000000');
  t.equal((await ledger.balanceOf(seller!)).payable, '2.000000');
  const [{ n }] = (await sql`select count(*)::int as n from entries where type <> 'topup'`) as unknown as [
    { n: number },
  ];
  t.equal(n, 8, 'two settles of four entries each');
  await checkInvariants(t, sql);
});

t.test('an item the balance cannot pay is refused alone; the others post', async (t) => {
  const { sql } = await createTestDatabase(t);
  const ledger = ledgerFor(sql);
  const [buyer, seller] = await makeAccounts(sql, 2);
  await ledger.topup({ accountId: buyer!, amount: '5.000000', source: 'card', postingKey: 'top' });
  const hr = await ledger.holdMany(
    ['2', '2', '2', '1'].map((amount, i) => ({ postingKey: `h-${i}`, accountId: buyer!, amount, ttlSeconds: 60 })),
  );
  t.same(hr.map(isRefusal), [false, false, true, false], 'the third does not fit, the fourth still does');
  const refusal = hr[2]!;
  t.ok(
    isRefusal(refusal) &&
      refusal.code === 'SVC01' &&
      refusal.message === 'Insufficient balance: 1.000000 available, 2.000000 needed',
  );
  const err = isRefusal(refusal) ? refusalError(refusal) : null;
  t.equal(pgCode(err), 'SVC01', 'refusalError carries SVC01');
  t.equal((await ledger.balanceOf(buyer!)).available, '0.000000');
  const [{ n }] = (await sql`select count(*)::int as n from postings where posting_key = 'h-2'`) as unknown as [
    { n: number },
  ];
  t.equal(n, 0, 'a refused item keeps no posting: its key can be used again');

  // A settle above its hold is paid only while the balance covers it.
  const ids = [hr[0], hr[1], hr[3]].map((r) => holdOf(r).holdId);
  const sr = await ledger.settleMany([
    { postingKey: 's-0', holdId: ids[0]!, sellerId: seller!, amount: '1.500000', fee: '0' },
    { postingKey: 's-1', holdId: ids[1]!, sellerId: seller!, amount: '2.600000', fee: '0' },
    { postingKey: 's-3', holdId: ids[2]!, sellerId: seller!, amount: '1.000000', fee: '0.500000' },
  ]);
  t.same(sr.map(isRefusal), [false, true, false], 'the second settle is refused');
  t.equal(isRefusal(sr[1]) && sr[1].message, 'Insufficient balance: 2.500000 available, 2.600000 needed');
  const [h1] = await sql<{ status: string }[]>`select status from holds where id = ${ids[1]!}`;
  t.equal(h1!.status, 'open', "the refused item's hold stays open");
  t.equal(settled(sr[2]).balanceAfter, '2.000000');
  const b = await ledger.balanceOf(buyer!);
  t.same([b.balance, b.held, b.available], ['2.000000', '2.000000', '0.000000']);
  await ledger.release({ postingKey: 'r-1', holdId: ids[1]! });
  await checkInvariants(t, sql);
});

t.test('amounts, holds and accounts are checked in SQL', async (t) => {
  const { sql } = await createTestDatabase(t);
  const ledger = ledgerFor(sql);
  const [buyer] = await makeAccounts(sql, 1);
  await ledger.topup({ accountId: buyer!, amount: '5.000000', source: 'card', postingKey: 'top' });
  const hold = (amount: string, key = 'h') => ({ postingKey: key, accountId: buyer!, amount, ttlSeconds: 60 });
  await t.rejects(ledger.holdMany([hold('1'), hold('1.0000001', 'h2')]), { code: 'SVC02' }, '7 decimals');
  await t.rejects(ledger.holdMany([hold('-1')]), { code: 'SVC02' }, 'negative');
  await t.rejects(ledger.holdMany([hold('0')]), { code: 'SVC02' }, 'zero');
  await t.rejects(ledger.holdMany([{ ...hold('1'), ttlSeconds: 0 }]), { code: 'SVC02' }, 'expired hold');
  // The batch is checked in one statement; a bad item still gets the error of its first failed rule.
  await t.rejects(
    ledger.holdMany([hold('1'), hold('100000000000000', 'h2'), hold('-1', 'h3')]),
    { code: 'SVC02', message: 'Invalid amount: too large' },
    'too large, named before the later negative item',
  );
  await t.rejects(
    ledger.holdMany([{ ...hold('1'), accountId: '00000000-0000-7000-8000-00000000dead' }]),
    { code: 'SVC03' },
    'unknown account',
  );
  const [h] = (await ledger.holdMany([hold('1')])).map(holdOf);
  await t.rejects(ledger.settleMany([{ postingKey: 's', holdId: h!.holdId, amount: '0.1000001' }]), { code: 'SVC02' });
  await t.rejects(ledger.settleMany([{ postingKey: 's', holdId: h!.holdId, amount: '1', fee: '-0.1' }]), {
    code: 'SVC02',
    message: 'Invalid fee: must be greater than zero',
  });
  await t.rejects(
    ledger.settleMany([{ postingKey: 's', holdId: '00000000-0000-7000-8000-00000000beef', amount: '1' }]),
    { code: 'SVC03' },
    'unknown hold',
  );
  await t.rejects(
    ledger.settleMany([
      { postingKey: 's1', holdId: h!.holdId, amount: '1' },
      { postingKey: 's2', holdId: h!.holdId, amount: '1' },
    ]),
    { code: 'SVC02' },
    'one hold settled twice in a batch',
  );
  await ledger.release({ postingKey: 'r', holdId: h!.holdId });
  await t.rejects(
    ledger.settleMany([{ postingKey: 's3', holdId: h!.holdId, amount: '1' }]),
    { code: 'SVC02' },
    'a released hold',
  );
  t.same(await ledger.holdMany([]), []);
  await checkInvariants(t, sql);
});

t.test("a hold batch's malformed items fail with the error, and in the order, they always did", async (t) => {
  const { sql } = await createTestDatabase(t);
  const ledger = ledgerFor(sql);
  const [buyer] = await makeAccounts(sql, 1);
  await ledger.topup({ accountId: buyer!, amount: '5.000000', source: 'card', postingKey: 'top' });
  const at = new Date();
  const later = new Date(at.getTime() + 60_000).toISOString();
  const item = (o: Record<string, unknown>) => ({ key: 'k', accountId: buyer!, amount: '1', expiresAt: later, ...o });
  const run = async (items: unknown) => {
    try {
      await sql`select ledger_hold_many(${sql.json(items as never)}, ${at})`;
      return 'ok';
    } catch (err) {
      return `${pgCode(err)} ${(err as Error).message}`;
    }
  };
  // Read once since migration 341, failing as before: an amount or expiry that is not a number or
  // time first; then, when an amount or expiry is out of range, an owner or test flag that does not
  // cast, else that amount's or expiry's own error; else the key's claim, then the casts.
  t.equal(await run([item({ accountId: 'nope' })]), '22P02 invalid input syntax for type uuid: "nope"');
  t.equal(await run([item({ test: 'maybe' })]), '22P02 invalid input syntax for type boolean: "maybe"');
  t.equal(
    await run([item({ key: 'a', amount: '-1' }), item({ key: 'b', accountId: 'nope' })]),
    '22P02 invalid input syntax for type uuid: "nope"',
  );
  t.equal(
    await run([item({ key: 'a', accountId: 'nope' }), item({ key: 'b', expiresAt: at.toISOString() })]),
    '22P02 invalid input syntax for type uuid: "nope"',
  );
  t.equal(await run([item({ key: 'a', amount: '-1' })]), 'SVC02 Invalid amount: must be greater than zero');
  t.equal(await run([item({ key: '', accountId: 'nope' })]), 'SVC02 Invalid posting key: 1 to 255 characters');
  t.equal(await run([item({ amount: 'x' })]), '22P02 invalid input syntax for type numeric: "x"');
  t.equal(
    await run([item({ key: 'a', amount: 'x' }), item({ key: 'b', expiresAt: 'y' })]),
    '22P02 invalid input syntax for type numeric: "x"',
  );
  t.equal(
    await run([item({ key: 'a', test: 'maybe' }), item({ key: 'b', accountId: 'nope' })]),
    '22P02 invalid input syntax for type boolean: "maybe"',
  );
  t.equal(await run([1]), '22023 argument of jsonb_to_recordset must be an array of objects');
  t.equal(await run({ a: 1 }), 'SVC02 Invalid batch: an array of items');
  // A replayed item's owner is still read: a malformed one fails the batch.
  t.equal(await run([item({ key: 'r' })]), 'ok');
  t.equal(await run([item({ key: 'r', accountId: 'nope' })]), '22P02 invalid input syntax for type uuid: "nope"');
  t.same(await sql`select ledger_hold_many('[]'::jsonb, ${at}) as r`, [{ r: [] }]);
  await checkInvariants(t, sql);
});

t.test('a test-mode hold settles to the test-credit pool; a zero settle only releases', async (t) => {
  const { sql } = await createTestDatabase(t);
  const ledger = ledgerFor(sql);
  const [buyer, seller] = await makeAccounts(sql, 2);
  await ledger.grantTestCredit({ postingKey: 'g', accountId: buyer!, amount: '3.000000' });
  const hr = (
    await ledger.holdMany([
      { postingKey: 'h-0', accountId: buyer!, amount: '1.000000', ttlSeconds: 60, mode: 'test' },
      { postingKey: 'h-1', accountId: buyer!, amount: '1.000000', ttlSeconds: 60, mode: 'test' },
    ])
  ).map(holdOf);
  t.same(
    hr.map((h) => h.mode),
    ['test', 'test'],
  );
  const sr = (
    await ledger.settleMany([
      { postingKey: 's-0', holdId: hr[0]!.holdId, sellerId: seller!, amount: '0.400000', fee: '0.100000' },
      { postingKey: 's-1', holdId: hr[1]!.holdId, sellerId: seller!, amount: '0', fee: '0' },
    ])
  ).map(settled);
  t.same(
    sr.map((s) => [s.mode, s.total, s.released]),
    [
      ['test', '0.500000', '0.500000'],
      ['test', '0.000000', '1.000000'],
    ],
  );
  const b = await ledger.balanceOf(buyer!);
  t.same([b.testCredit, b.testHeld, b.balance], ['2.500000', '0.000000', '0.000000']);
  t.equal((await ledger.balanceOf(seller!)).payable, '0.000000', 'no seller paid in test mode');
  await checkInvariants(t, sql);
});

t.test('batches and single-item calls on one payer at the same time', async (t) => {
  const { sql } = await createTestDatabase(t);
  const ledger: Ledger = ledgerFor(sql);
  const [buyer, seller] = await makeAccounts(sql, 2);
  await ledger.topup({ accountId: buyer!, amount: '100.000000', source: 'wire', postingKey: 'top' });
  // 400 holds of 0.5 against 100: exactly 200 fit, whichever path takes them.
  const singles = Array.from({ length: 100 }, (_, i) =>
    ledger.hold({ postingKey: `one-${i}`, accountId: buyer!, amount: '0.500000', ttlSeconds: 60 }).then(
      (r) => [r as HoldResult | null],
      (e: unknown) => {
        if (pgCode(e) !== 'SVC01') throw e;
        return [null];
      },
    ),
  );
  const batches = Array.from({ length: 10 }, (_, b) =>
    ledger
      .holdMany(
        Array.from({ length: 30 }, (_, i) => ({
          postingKey: `many-${b}-${i}`,
          accountId: buyer!,
          amount: '0.500000',
          ttlSeconds: 60,
        })),
      )
      .then((rs) => rs.map((r) => (isRefusal(r) ? null : r))),
  );
  const holds = (await Promise.all([...singles, ...batches])).flat().filter((h): h is HoldResult => h !== null);
  t.equal(holds.length, 200, 'exactly as many holds as the balance covers');
  t.equal((await ledger.balanceOf(buyer!)).available, '0.000000');
  await checkInvariants(t, sql, 'after holds');

  // Settle them: half in batches, half one by one, all at once.
  const inputs = holds.map((h, i): SettleInput => ({
    postingKey: `s-${i}`,
    holdId: h.holdId,
    sellerId: seller!,
    amount: '0.300000',
    fee: '0.100000',
  }));
  const work: Promise<unknown>[] = [];
  for (let i = 0; i < 100; i += 20) work.push(ledger.settleMany(inputs.slice(i, i + 20)));
  for (let i = 100; i < 200; i++) work.push(ledger.settle(inputs[i]!));
  await Promise.all(work);
  const b = await ledger.balanceOf(buyer!);
  t.same([b.balance, b.held], ['20.000000', '0.000000']);
  t.equal((await ledger.balanceOf(seller!)).payable, '60.000000');
  await checkInvariants(t, sql, 'after settles');
});

t.test('a batch emits balance events as its items would one by one', async (t) => {
  const { sql } = await createTestDatabase(t);
  const events: { accountId: string; event: string; data: Record<string, unknown> }[] = [];
  const ledger = createLedger({
    sql,
    clock: { now: () => new Date() },
    log: silent,
    lowBalanceThreshold: '5',
    events: { emit: async (_db, accountId, event, data) => void events.push({ accountId, event, data }) },
  });
  const [buyer] = await makeAccounts(sql, 1);
  await ledger.topup({ accountId: buyer!, amount: '6.000000', source: 'card', postingKey: 'top' });
  events.length = 0;
  const holds = (
    await ledger.holdMany(
      [0, 1, 2].map((i) => ({ postingKey: `h-${i}`, accountId: buyer!, amount: '1.000000', ttlSeconds: 60 })),
    )
  ).map(holdOf);
  await ledger.settleMany(
    holds.map((h, i) => ({ postingKey: `s-${i}`, holdId: h.holdId, amount: '0.600000', fee: '0.150000' })),
  );
  t.same(
    events,
    [{ accountId: buyer!, event: 'balance.low', data: { accountId: buyer!, balance: '4.500000' } }],
    'balance.low once, from the item that crossed the threshold',
  );
  await checkInvariants(t, sql);
});

t.test('a settle with its markup in the batch posts what settle then charge post', async (t) => {
  // Migration 317: the markup rides on its settle's item. A daily cap reached mid-batch: the
  // markups of calls whose holds are settled are still owed (012).
  const single = await createTestDatabase(t);
  const batch = await createTestDatabase(t);
  const run = async (sql: Sql, many: boolean) => {
    const ledger = ledgerFor(sql);
    const [buyer, seller, operator] = await makeAccounts(sql, 3);
    await ledger.topup({ accountId: buyer!, amount: '10.000000', source: 'card', postingKey: 'top' });
    await ledger.setLimits(buyer!, { creditLimit: '0', dailySpendCap: '2.500000' });
    const context = (i: number) => ({
      reference: 'Voice call',
      relatedEntityType: 'sip_call',
      relatedEntityId: `c-${i}`,
      callId: `c-${i}`,
    });
    const holds = (
      await ledger.holdMany(
        Array.from({ length: 6 }, (_, i) => ({
          postingKey: `h-${i}`,
          accountId: buyer!,
          amount: '1.000000',
          ttlSeconds: 60,
          ...context(i),
        })),
      )
    ).map(holdOf);
    const settles: SettleInput[] = holds.map((h, i) => ({
      postingKey: `s-${i}`,
      holdId: h.holdId,
      sellerId: seller!,
      amount: '0.600000',
      fee: '0.150000',
      ...context(i),
      markup: { postingKey: `s-${i}:markup`, sellerId: operator!, amount: '0.200000' },
    }));
    const results: Record<string, unknown>[] = [];
    if (many) {
      for (const r of (await ledger.settleMany(settles)).map(settled)) {
        const { markup, ...rest } = r;
        results.push(comparable(rest), comparable(markup!));
      }
    } else {
      for (const { markup, ...s } of settles) {
        results.push(comparable(await ledger.settle(s)));
        const m = { postingKey: markup!.postingKey, accountId: buyer!, sellerId: operator!, amount: markup!.amount };
        results.push(comparable(await ledger.charge({ ...m, ...context(Number(s.postingKey.slice(2))) })));
      }
    }
    return {
      results,
      entries: await entriesOf(sql),
      postings: await sql`select type, count(*)::int as n from postings group by type order by type`,
      balance: await ledger.balanceOf(buyer!),
      owed: (await ledger.balanceOf(operator!)).payable,
      capSuspended: await ledger.capSuspended(buyer!),
      replay: many ? (await ledger.settleMany(settles)).map(settled) : [],
    };
  };
  const a = await run(single.sql, false);
  const b = await run(batch.sql, true);
  t.same(b.results, a.results, 'settle and markup results, capReached included');
  t.ok(
    a.results.some((r) => r['capReached'] === true),
    'the cap is reached inside the batch',
  );
  t.same(b.entries, a.entries, 'the same entries in the same order with the same balanceAfter');
  t.same(b.postings, a.postings, 'a settle posting and a charge posting per call');
  t.same(b.balance, a.balance);
  t.equal(b.owed, '1.200000', 'the operator is owed every markup');
  t.equal(b.capSuspended, true);
  t.same(
    b.replay.map((r) => [r.replayed, r.markup?.replayed]),
    Array.from({ length: 6 }, () => [true, true]),
    'a replayed batch replays each settle and its markup',
  );
  await checkInvariants(t, single.sql, 'single');
  await checkInvariants(t, batch.sql, 'batch');
});

t.test('a settle whose markup the balance cannot pay is refused with it', async (t) => {
  const { sql } = await createTestDatabase(t);
  const ledger = ledgerFor(sql);
  const [buyer, seller, operator] = await makeAccounts(sql, 3);
  await ledger.topup({ accountId: buyer!, amount: '5.000000', source: 'card', postingKey: 'top' });
  const [h0, h1] = (
    await ledger.holdMany([
      { postingKey: 'h-0', accountId: buyer!, amount: '1.000000', ttlSeconds: 60 },
      { postingKey: 'h-1', accountId: buyer!, amount: '4.000000', ttlSeconds: 60 },
    ])
  ).map(holdOf);
  const r = await ledger.settleMany([
    {
      postingKey: 's-0',
      holdId: h0!.holdId,
      sellerId: seller!,
      amount: '0.500000',
      markup: { postingKey: 's-0:markup', sellerId: operator!, amount: '0.100000' },
    },
    // The settle alone fits what this hold gives back; with its markup it does not.
    {
      postingKey: 's-1',
      holdId: h1!.holdId,
      sellerId: seller!,
      amount: '4.300000',
      markup: { postingKey: 's-1:markup', sellerId: operator!, amount: '0.200000' },
    },
  ]);
  t.equal(settled(r[0]).markup?.amount, '0.100000', 'the first call and its markup post');
  t.ok(isRefusal(r[1]), 'the second is refused whole');
  t.equal((r[1] as Refusal).code, 'SVC01');
  const b = await ledger.balanceOf(buyer!);
  t.equal(b.balance, '4.400000');
  t.equal(b.held, '4.000000', "the refused call's hold stays open");
  t.equal((await ledger.balanceOf(operator!)).payable, '0.100000');
  await checkInvariants(t, sql);
});
