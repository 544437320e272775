import { parse } from 'csv-parse/sync';
import t from 'tap';
import { createManualClock } from '../../../src/platform/clock.js';
import { startTestDaemon, type TestDaemon } from '../../helpers/daemon.js';

async function customer(d: TestDaemon, email: string) {
  const { accounts, keys } = d.modules.services;
  const acct = await accounts.createAccount({ email, password: 'correct horse battery' });
  const live = await keys.create(acct.id, { mode: 'live' });
  return { id: acct.id, key: live.secret };
}

const get = async (d: TestDaemon, url: string, key: string) => {
  const res = await d.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: { authorization: `Bearer ${key}` } });
  let json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  try {
    json = res.json();
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, json, body: res.body, headers: res.headers };
};

t.test('balance, transactions (filters, cursor, CSV), summary, history and daily spend', async (t) => {
  const clock = createManualClock(new Date('2026-05-10T12:00:00Z'));
  // No payout hold: availableBalance is then all unpaid earnings (the hold is tested with payouts).
  const d = await startTestDaemon(t, { billing: { payout_hold_days: 0 } }, { clock });
  const { ledger, topups } = d.modules.services;
  const buyer = await customer(d, 'buyer@example.com');
  const seller = await customer(d, 'seller@example.com');

  await topups.topup({
    accountId: buyer.id,
    amount: '150',
    source: 'wire',
    reference: 'wire "ACME", ref\nline 2',
    postingKey: 'wire-1',
  });
  const replay = await topups.topup({
    accountId: buyer.id,
    amount: '150',
    source: 'wire',
    reference: 'x',
    postingKey: 'wire-1',
  });
  t.equal(replay.replayed, true, 'svcctl top-up is idempotent by posting key');
  await ledger.charge({
    postingKey: 'c1',
    accountId: buyer.id,
    sellerId: seller.id,
    amount: '1.200000',
    fee: '0.100000',
    relatedEntityType: 'call',
    callId: 'call-1',
  });
  clock.advance(86400_000);
  await ledger.charge({
    postingKey: 'c2',
    accountId: buyer.id,
    sellerId: seller.id,
    amount: '0.500000',
    fee: '0.000500',
    relatedEntityType: 'sms',
  });
  await ledger.topup({ accountId: buyer.id, amount: '20', source: 'card', postingKey: 'card-1' });
  await ledger.hold({ postingKey: 'h1', accountId: buyer.id, amount: '3.000000', ttlSeconds: 600 });

  const bal = await get(d, '/account/balance', buyer.key);
  t.equal(bal.status, 200);
  t.match(bal.json.data, {
    balance: '168.199500',
    held: '3.000000',
    available: '165.199500',
    creditLimit: '0.000000',
    testCredit: '0.000000',
  });

  const all = await get(d, '/billing/transactions?limit=2', buyer.key);
  t.equal(all.json.data.length, 2);
  t.equal(all.json.hasMore, true);
  t.equal(all.json.data[0].type, 'topup', 'newest first');
  t.equal(all.json.data[0].amount, '20.000000');
  t.equal(all.json.data[0].balanceAfter, '168.199500');
  const next = await get(d, `/billing/transactions?limit=10&cursor=${all.json.nextCursor}`, buyer.key);
  t.equal(next.json.data.length, 4, 'the rest on the next page');
  t.equal(next.json.hasMore, false);
  const charge = next.json.data.find(
    (x: { type: string; callId: string | null }) => x.type === 'charge' && x.callId === 'call-1',
  );
  t.match(charge, { amount: '-1.200000', relatedEntityType: 'call', userId: buyer.id, ledger: 'balance' });

  const fees = await get(d, '/billing/transactions?type=platform_fee', buyer.key);
  t.same(
    fees.json.data.map((x: { amount: string }) => x.amount),
    ['-0.000500', '-0.100000'],
  );
  const day1 = await get(d, '/billing/transactions?from=2026-05-10T00:00:00Z&to=2026-05-11T00:00:00Z', buyer.key);
  t.equal(day1.json.data.length, 3, 'from inclusive, to exclusive: the first day only');
  const bad = await get(d, '/billing/transactions?from=2026-05-11T00:00:00Z&to=2026-05-10T00:00:00Z', buyer.key);
  t.equal(bad.status, 400);

  const csv = await get(d, '/billing/transactions?format=csv', buyer.key);
  t.equal(csv.status, 200);
  t.match(csv.headers['content-type'], /^text\/csv/);
  const rows = parse(csv.body, { columns: true }) as Record<string, string>[];
  t.equal(rows.length, 6);
  const wire = rows.find((r) => r['type'] === 'topup' && r['amount'] === '150.000000');
  t.equal(wire?.['reference'], 'wire "ACME", ref\nline 2', 'quotes, commas and newlines survive a real CSV parser');
  t.ok(
    rows.every((r) => /^-?\d+\.\d{6}$/.test(r['amount']!) && /^-?\d+\.\d{6}$/.test(r['balanceAfter']!)),
    'money always 6 places',
  );

  const sellerTx = await get(d, '/billing/transactions', seller.key);
  t.same(
    sellerTx.json.data.map((x: { type: string; ledger: string }) => `${x.type}/${x.ledger}`),
    ['credit/earnings', 'credit/earnings'],
  );

  const sum = await get(d, '/billing/summary', buyer.key);
  t.same(sum.json.data, {
    totalSpending: '1.800500',
    totalTransactions: 2,
    spendingToday: '0.500500',
    transactionsToday: 1,
    activePurchases: 0,
    runningCampaigns: 0,
    totalCampaigns: 0,
    totalEarnings: '0.000000',
    earnings30d: '0.000000',
    earningsToday: '0.000000',
    availableBalance: '0.000000',
    heldBalance: '20.000000',
  });
  const sellerSum = await get(d, '/billing/summary', seller.key);
  t.match(sellerSum.json.data, {
    totalEarnings: '1.700000',
    earningsToday: '0.500000',
    availableBalance: '1.700000',
    totalSpending: '0.000000',
  });

  const hist = await get(d, '/billing/balance-history?days=3', buyer.key);
  t.same(hist.json.data.points, [
    { date: '2026-05-09', balance: 0 },
    { date: '2026-05-10', balance: 148.7 },
    { date: '2026-05-11', balance: 168.1995 },
  ]);
  t.equal(hist.json.data.hasData, true);
  t.equal(hist.json.data.currentBalance, 168.1995);
  const spend = await get(d, '/billing/daily-spend?days=2', buyer.key);
  t.same(spend.json.data.points, [
    { date: '2026-05-10', voice: 1.3, sms: 0, total: 1.3 },
    { date: '2026-05-11', voice: 0, sms: 0.5005, total: 0.5005 },
  ]);
  // balance.low fires once when a debit crosses billing.low_balance_threshold (5); top-ups emit topup.confirmed.
  const low = await customer(d, 'low@example.com');
  await ledger.topup({ accountId: low.id, amount: '6', source: 'card', postingKey: 'low-top' });
  await ledger.charge({ postingKey: 'low-1', accountId: low.id, amount: '0.500000' });
  await ledger.charge({ postingKey: 'low-2', accountId: low.id, amount: '0.600000' });
  await ledger.charge({ postingKey: 'low-3', accountId: low.id, amount: '0.600000' });
  const evs = await d.sql<{ event: string; data: { balance: string } }[]>`
    select event, data from events where account_id = ${low.id} order by event`;
  t.same(
    evs.map((e) => [e.event, e.data.balance]),
    [
      ['balance.low', '4.900000'],
      ['topup.confirmed', '6.000000'],
    ],
    'once, not again below the threshold',
  );

  const empty = await get(d, '/billing/daily-spend', seller.key);
  t.equal(empty.json.data.hasData, false);
  t.equal(empty.json.data.points.length, 30);
});

t.test('CSV export is capped at 10,000 rows', async (t) => {
  const d = await startTestDaemon(t);
  const buyer = await customer(d, 'many@example.com');
  await d.modules.services.ledger.topup({ accountId: buyer.id, amount: '100000', source: 'wire', postingKey: 'big' });
  // 10,050 balanced entries written straight in SQL: the export cap, not the ledger, is under test.
  await d.sql`
    with p as (insert into postings (id, posting_key, type) values (ledger_uuid_v7(), 'bulk', 'charge') returning id),
    a as (select id, owner_id, kind from ledger_accounts where owner_id = ${buyer.id} and kind = 'customer'),
    r as (select id from ledger_accounts where kind = 'platform_revenue')
    insert into entries (id, posting_id, account_id, owner_id, account_kind, type, amount, balance_after, reference, created_at)
    select ledger_uuid_v7(), p.id, x.acct, x.owner, x.kind, 'charge', x.amount, x.after, 'r,' || g, now()
    from p, generate_series(1, 10050) g,
         lateral (select a.id as acct, a.owner_id as owner, a.kind, -0.01 as amount, 100000 - g * 0.01 as after from a
                  union all select r.id, null, 'platform_revenue', 0.01, null from r) x
    order by g`;
  const res = await get(d, '/billing/transactions?format=csv', buyer.key);
  const rows = parse(res.body, { columns: true }) as Record<string, string>[];
  t.equal(rows.length, 10000);
  t.equal(rows[0]!['reference'], 'r,10050', 'newest first');
});
