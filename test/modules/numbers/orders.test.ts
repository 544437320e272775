import t from 'tap';
import { createManualClock } from '../../../src/platform/clock.js';
import { startTestDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { account, api, numbers } from './world.js';

const DAY = 86_400_000;

async function world(d: TestDaemon) {
  const seller = await account(d, 'seller@example.com');
  const buyer = await account(d, 'buyer@example.com');
  const { numbers: svc } = d.modules.services;
  // London: setup 1.500000 + month 2.250000; Manchester: setup 0.500000 + month 3.000000.
  const london = await svc.inventory.importItems(seller.id, true, numbers(4), (i) => `items[${i}]`);
  const manchester = await svc.inventory.importItems(
    seller.id,
    true,
    numbers(1, { areaPrefix: '161', city: 'Manchester', setupPrice: '0.500000', monthlyPrice: '3.000000' }),
    (i) => `items[${i}]`,
  );
  const cat = await api(d, 'GET', '/dids/catalog', buyer.key);
  const group = (id: string) => cat.json.data.groups.find((g: { groupId: string }) => g.groupId === id);
  const lg = group(london.groups[0]!.groupId);
  const mg = group(manchester.groups[0]!.groupId);
  return {
    seller,
    buyer,
    svc,
    london: { groupId: lg.groupId, skuId: lg.skus[0].skuId },
    manchester: { groupId: mg.groupId, skuId: mg.skus[0].skuId },
  };
}

const balance = async (d: TestDaemon, id: string) => (await d.modules.services.ledger.balanceOf(id)).balance;
const payable = async (d: TestDaemon, id: string) => (await d.modules.services.ledger.balanceOf(id)).payable;

t.test('buy: setup and first month through the ledger, idempotent, provisioned, KYC, sub-accounts', async (t) => {
  const d = await startTestDaemon(t, { billing: { require_route_for_sub_accounts: false } });
  const w = await world(d);
  const { ledger } = d.modules.services;
  await ledger.topup({ accountId: w.buyer.id, amount: '10', source: 'card', postingKey: 'buyer-wire' });

  const key = { 'x-idempotency-key': 'order-1' };
  const bought = await api(d, 'POST', '/dids/buy', w.buyer.key, w.london, key);
  t.equal(bought.status, 201, JSON.stringify(bought.json));
  const did = bought.json.data;
  t.match(did, {
    status: 'pending',
    number: null,
    country: 'United Kingdom',
    countryCode: 'GB',
    city: 'London',
    areaPrefix: '20',
    didType: 'Local',
    channelsIncluded: 2,
    pointMode: 'unrouted',
    autoRenew: true,
    setupPrice: '1.500000',
    monthlyPrice: '2.250000',
    graceDays: 7,
    endpointReachable: null,
    accountId: w.buyer.id,
  });
  t.equal(await balance(d, w.buyer.id), '6.250000', 'setup 1.5 + month 2.25 charged');
  t.equal(await payable(d, w.seller.id), '3.375000', 'seller credited 3.75 minus the 10% platform fee');

  const replay = await api(d, 'POST', '/dids/buy', w.buyer.key, w.london, key);
  t.equal(replay.status, 201);
  t.equal(replay.json.data.id, did.id, 'the replay answers the first order');
  t.equal(await balance(d, w.buyer.id), '6.250000', 'and charges nothing');
  const reused = await api(d, 'POST', '/dids/buy', w.buyer.key, w.manchester, key);
  t.equal(reused.status, 422, 'same key, another body');

  await w.svc.orders.settled();
  const active = await api(d, 'GET', `/dids/${did.id}`, w.buyer.key);
  t.equal(active.json.data.status, 'active');
  t.match(active.json.data.number, /^4420\d{7}$/);
  const activatedAt = new Date(active.json.data.activatedAt);
  const next = new Date(active.json.data.nextRenewalAt);
  t.equal(next.getUTCMonth(), (activatedAt.getUTCMonth() + 1) % 12, 'renews a month after activation');
  const [taken] = await d.sql<
    { state: string }[]
  >`select state from did_numbers where number = ${active.json.data.number}`;
  t.equal(taken?.state, 'assigned');

  const mine = await api(d, 'GET', '/dids/mine', w.buyer.key);
  t.equal(mine.json.data.length, 1);
  t.equal(mine.json.hasMore, false);
  t.equal((await api(d, 'GET', `/dids/${did.id}`, w.seller.key)).status, 404, "another account's number");
  const tx = await api(d, 'GET', '/billing/transactions', w.buyer.key);
  const order = tx.json.data.filter((x: { relatedEntityId: string }) => x.relatedEntityId === did.id);
  t.same(order.map((x: { type: string; amount: string }) => [x.type, x.amount]).sort(), [
    ['charge', '-3.375000'],
    ['platform_fee', '-0.375000'],
  ]);
  const events = await d.sql<{ event: string }[]>`
    select event from events where account_id = ${w.buyer.id} and event like 'number.%' order by id`;
  t.same(
    events.map((e) => e.event),
    ['number.purchased', 'number.activated'],
  );

  // Identity required by the group.
  t.equal(
    (await api(d, 'PATCH', `/dids/inventory/groups/${w.london.groupId}`, w.seller.key, { requiresKyc: true })).status,
    200,
  );
  const kyc = await api(d, 'POST', '/dids/buy', w.buyer.key, w.london);
  t.equal(kyc.status, 403);
  t.equal(kyc.json.error.code, 'KYC_REQUIRED');
  await api(d, 'PATCH', `/dids/inventory/groups/${w.london.groupId}`, w.seller.key, { requiresKyc: false });

  // Unknown or mismatched catalogue entries.
  t.equal((await api(d, 'POST', '/dids/buy', w.buyer.key, { ...w.london, skuId: w.manchester.skuId })).status, 404);
  t.equal((await api(d, 'POST', '/dids/buy', w.buyer.key, { ...w.london, groupId: 'nope' })).status, 404);
  t.equal((await api(d, 'POST', '/dids/buy', w.seller.key, w.london)).status, 400, 'own listing');

  // A sub-account pays and owns.
  const sub = await d.modules.services.application.create(w.buyer.id, { label: 'Customer A' });
  await d.modules.services.application.credit(w.buyer.id, sub.id, { amount: '5' }, 'fund-a');
  const forSub = await api(d, 'POST', '/dids/buy', w.buyer.key, { ...w.manchester, subAccountId: sub.id });
  t.equal(forSub.status, 201, JSON.stringify(forSub.json));
  t.equal(forSub.json.data.accountId, sub.id);
  t.equal(await balance(d, sub.id), '1.500000', 'the sub-account paid 0.5 + 3');
  t.equal(await balance(d, w.buyer.id), '1.250000', 'the operator paid only the transfer');
  const other = await account(d, 'other@example.com');
  const notTheirs = await api(d, 'POST', '/dids/buy', other.key, { ...w.london, subAccountId: sub.id });
  t.equal(notTheirs.status, 404);
  const soldOut = await api(d, 'POST', '/dids/buy', w.buyer.key, w.manchester);
  t.equal(soldOut.status, 409, 'nothing left in the group');
  // Test keys' orders are simulated: test-key-orders.test.ts.
});

t.test('bulk-buy: in order, the rest skipped once the balance runs out', async (t) => {
  const d = await startTestDaemon(t);
  const w = await world(d);
  await d.modules.services.ledger.topup({ accountId: w.buyer.id, amount: '8', source: 'card', postingKey: 'w' });
  const items = [
    w.london,
    { ...w.london, groupId: '01a21326-0000-7000-8000-000000000000' },
    w.london,
    w.london,
    w.london,
  ];
  const r = await api(d, 'POST', '/dids/bulk-buy', w.buyer.key, { items }, { 'x-idempotency-key': 'bulk-1' });
  t.equal(r.status, 201, JSON.stringify(r.json));
  t.match(r.json.data, { requested: 5, succeeded: 2, failed: 2, skipped: 1 });
  t.same(
    r.json.data.items.map((i: { status: string }) => i.status),
    ['ok', 'failed', 'ok', 'failed', 'skipped'],
  );
  t.equal(r.json.data.items[1].error.code, 'NOT_FOUND', 'an unknown group fails alone');
  t.match(r.json.data.items[3].error.message, /^Insufficient balance/);
  t.equal(await balance(d, w.buyer.id), '0.500000', '8 - 2 x 3.75');
  t.equal(await payable(d, w.seller.id), '6.750000');
  const replay = await api(d, 'POST', '/dids/bulk-buy', w.buyer.key, { items }, { 'x-idempotency-key': 'bulk-1' });
  t.same(replay.json, r.json);
  t.equal(await balance(d, w.buyer.id), '0.500000');
});

t.test('renewal job under a controlled clock: renew, suspend, reactivate, release', async (t) => {
  const clock = createManualClock(new Date('2026-01-31T10:00:00Z'));
  const d = await startTestDaemon(t, { numbers: { renewal_interval_seconds: 86400 } }, { clock });
  const w = await world(d);
  const { ledger } = d.modules.services;
  const { renewals, orders } = w.svc;
  await ledger.topup({ accountId: w.buyer.id, amount: '10', source: 'card', postingKey: 'w1' });
  const a = (await api(d, 'POST', '/dids/buy', w.buyer.key, w.london)).json.data;
  const b = (await api(d, 'POST', '/dids/buy', w.buyer.key, w.london)).json.data;
  await orders.settled();
  t.equal(await balance(d, w.buyer.id), '2.500000');
  const first = (await api(d, 'GET', `/dids/${a.id}`, w.buyer.key)).json.data;
  t.equal(first.nextRenewalAt, '2026-02-28T10:00:00.000Z', '31 January + 1 month is 28 February');
  t.same(await renewals.run(), { renewed: 0, suspended: 0, reactivated: 0, released: 0 }, 'nothing due yet');

  // b is not renewed: released at the end of its month.
  await api(d, 'PUT', `/dids/${b.id}/auto-renew`, w.buyer.key, { autoRenew: false });
  clock.set(new Date('2026-02-28T10:00:00Z'));
  t.same(await renewals.run(), { renewed: 1, suspended: 0, reactivated: 0, released: 1 });
  t.equal(await balance(d, w.buyer.id), '0.250000', 'month 2 of a: 2.25');
  t.equal(await payable(d, w.seller.id), '8.775000', '2 x 3.375 + 2.025');
  const renewed = (await api(d, 'GET', `/dids/${a.id}`, w.buyer.key)).json.data;
  t.equal(renewed.nextRenewalAt, '2026-03-28T10:00:00.000Z');
  const gone = (await api(d, 'GET', `/dids/${b.id}`, w.buyer.key)).json.data;
  t.match(gone, { status: 'released', releasedAt: '2026-02-28T10:00:00.000Z', nextRenewalAt: null });
  const [back] = await d.sql<{ state: string }[]>`select state from did_numbers where number = ${gone.number}`;
  t.equal(back?.state, 'available', 'the number is back on sale');
  t.same(await renewals.run(), { renewed: 0, suspended: 0, reactivated: 0, released: 0 }, 'charged once');

  // Month 3 cannot be paid: suspended, then a top-up within the grace days brings it back.
  clock.set(new Date('2026-03-28T10:00:00Z'));
  t.same(await renewals.run(), { renewed: 0, suspended: 1, reactivated: 0, released: 0 });
  const suspended = (await api(d, 'GET', `/dids/${a.id}`, w.buyer.key)).json.data;
  t.match(suspended, { status: 'suspended', suspendedAt: '2026-03-28T10:00:00.000Z' });
  t.equal(await balance(d, w.buyer.id), '0.250000', 'nothing charged');
  clock.advance(DAY);
  t.same(await renewals.run(), { renewed: 0, suspended: 0, reactivated: 0, released: 0 }, 'still unpaid');
  await ledger.topup({ accountId: w.buyer.id, amount: '5', source: 'card', postingKey: 'w2' });
  t.same(await renewals.run(), { renewed: 0, suspended: 0, reactivated: 1, released: 0 });
  const back2 = (await api(d, 'GET', `/dids/${a.id}`, w.buyer.key)).json.data;
  t.match(back2, { status: 'active', suspendedAt: null, nextRenewalAt: '2026-04-28T10:00:00.000Z' });
  t.equal(await balance(d, w.buyer.id), '3.000000', '5.25 - 2.25');

  // Month 4 unpaid and the grace days run out: released.
  await ledger.chargeback({ accountId: w.buyer.id, amount: '3', postingKey: 'cb', reference: 'test' });
  clock.set(new Date('2026-04-28T10:00:00Z'));
  t.same(await renewals.run(), { renewed: 0, suspended: 1, reactivated: 0, released: 0 });
  clock.advance(7 * DAY);
  t.same(await renewals.run(), { renewed: 0, suspended: 0, reactivated: 0, released: 1 });
  const released = (await api(d, 'GET', `/dids/${a.id}`, w.buyer.key)).json.data;
  t.match(released, { status: 'released', releasedAt: '2026-05-05T10:00:00.000Z' });

  const history = await api(d, 'GET', `/dids/${a.id}/history?limit=100`, w.buyer.key);
  t.same(history.json.data.map((h: { kind: string; amount: string | null }) => [h.kind, h.amount]).reverse(), [
    ['ordered', '3.750000'],
    ['activated', null],
    ['renewed', '2.250000'],
    ['suspended', null],
    ['reactivated', '2.250000'],
    ['suspended', null],
    ['released', null],
  ]);
  const evs = await d.sql<{ event: string; n: number }[]>`
    select event, count(*)::int as n from events where account_id = ${w.buyer.id} and event like 'number.%'
    group by event order by event`;
  t.same(Object.fromEntries(evs.map((e) => [e.event, e.n])), {
    'number.activated': 2,
    'number.purchased': 2,
    'number.released': 2,
    'number.renewed': 2,
    'number.suspended': 2,
  });
  const analytics = await api(d, 'GET', `/dids/${a.id}/analytics?months=5`, w.buyer.key);
  t.match(analytics.json.data, {
    status: 'released',
    price: { setup: '1.500000', monthly: '2.250000' },
    spend: { gross: 8.25, refunded: 0, net: 8.25, setup: 1.5, recurring: 6.75 },
    window: { months: 5, from: '2026-01-01T00:00:00.000Z' },
  });
  t.same(
    analytics.json.data.series.map((s: { period: string; spend: number }) => [s.period, s.spend]),
    [
      ['2026-01', 3.75],
      ['2026-02', 2.25],
      ['2026-03', 2.25],
      ['2026-04', 0],
      ['2026-05', 0],
    ],
  );
  const overview = await api(d, 'GET', '/dids/analytics/overview', w.buyer.key);
  t.match(overview.json.data, {
    counts: { total: 2, active: 0, released: 2 },
    monthlyRecurring: 0,
    lifetimeSpend: 12,
  });
});

t.test('concurrent renewal runs charge each period once', async (t) => {
  const clock = createManualClock(new Date('2026-01-10T00:00:00Z'));
  const d = await startTestDaemon(t, { numbers: { renewal_interval_seconds: 86400 } }, { clock });
  const w = await world(d);
  await d.modules.services.ledger.topup({ accountId: w.buyer.id, amount: '100', source: 'card', postingKey: 'w' });
  for (let i = 0; i < 4; i++) await api(d, 'POST', '/dids/buy', w.buyer.key, w.london);
  await w.svc.orders.settled();
  clock.set(new Date('2026-02-10T00:00:00Z'));
  const runs = await Promise.all([w.svc.renewals.run(), w.svc.renewals.run(), w.svc.renewals.run()]);
  t.equal(
    runs.reduce((n, r) => n + r.renewed, 0),
    4,
    'four renewals between the three runs',
  );
  t.equal(await balance(d, w.buyer.id), '76.000000', '100 - 4 x 3.75 - 4 x 2.25');
});
