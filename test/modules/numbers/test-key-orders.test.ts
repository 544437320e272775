import t from 'tap';
import { startTestDaemon } from '../../helpers/daemon.js';
import { account, api, numbers } from './world.js';

t.test('a test key buying numbers is simulated: priced against test credit, nothing taken or charged', async (t) => {
  const d = await startTestDaemon(t);
  const { ledger, keys, numbers: svc } = d.modules.services;
  const seller = await account(d, 'seller@example.com');
  const buyer = await account(d, 'buyer@example.com');
  // London: setup 1.500000 + month 2.250000 = 3.750000 an order.
  const stock = await svc.inventory.importItems(seller.id, true, numbers(3), (i) => `items[${i}]`);
  const groupId = stock.groups[0]!.groupId;
  const [sku] = await d.sql<{ id: string }[]>`select id from did_skus where group_id = ${groupId}`;
  const order = { groupId, skuId: sku!.id };
  const testKey = (await keys.create(buyer.id, { mode: 'test' })).secret;
  await ledger.grantTestCredit({ postingKey: 'tc', accountId: buyer.id, amount: '5.000000' });
  const entries = async () => {
    const [r] = await d.sql<{ n: number }[]>`select count(*)::int as n from entries`;
    return r!.n;
  };
  const before = await entries();
  const [first] = await d.sql<{ number: string }[]>`
    select number from did_numbers where group_id = ${groupId} order by id limit 1`;

  const one = await api(d, 'POST', '/dids/buy', testKey, order, { 'x-idempotency-key': 'sim-1' });
  t.equal(one.status, 201, JSON.stringify(one.json));
  t.match(one.json.data, {
    simulated: true,
    status: 'active',
    number: first!.number,
    city: 'London',
    setupPrice: '1.500000',
    monthlyPrice: '2.250000',
    accountId: buyer.id,
  });
  const again = await api(d, 'POST', '/dids/buy', testKey, order, { 'x-idempotency-key': 'sim-1' });
  t.equal(again.json.data.id, one.json.data.id, 'idempotent as a live order');
  t.equal(await entries(), before, 'no ledger entry');
  const b = await ledger.balanceOf(buyer.id);
  t.same([b.balance, b.testCredit, (await ledger.balanceOf(seller.id)).payable], ['0.000000', '5.000000', '0.000000']);
  const [kept] = await d.sql<{ dids: number; available: number }[]>`
    select (select count(*) from dids)::int as dids,
           (select count(*) from did_numbers where group_id = ${groupId} and state = 'available')::int as available`;
  t.same(kept, { dids: 0, available: 3 }, 'no DID kept, no number taken');

  // Bulk: 5.000000 of test credit covers one 3.750000 order; the second is refused and the third skipped.
  const bulk = await api(d, 'POST', '/dids/bulk-buy', testKey, { items: [order, order, order] });
  t.equal(bulk.status, 201, JSON.stringify(bulk.json));
  t.match(bulk.json.data, { simulated: true, requested: 3, succeeded: 1, failed: 1, skipped: 1 });
  t.same(
    bulk.json.data.items.map((i: { status: string }) => i.status),
    ['ok', 'failed', 'skipped'],
  );
  t.match(bulk.json.data.items[1].error.message, /Insufficient balance/);

  // The same checks as a live order: too little test credit, an unknown SKU.
  const poor = await account(d, 'poor@example.com');
  const poorKey = (await keys.create(poor.id, { mode: 'test' })).secret;
  const refused = await api(d, 'POST', '/dids/buy', poorKey, order);
  t.equal(refused.status, 400);
  t.match(refused.json.error.message, /Insufficient balance/);
  const unknown = await api(d, 'POST', '/dids/buy', testKey, { ...order, skuId: groupId });
  t.equal(unknown.status, 404);
  t.equal(await entries(), before, 'still no ledger entry');
});
