import t from 'tap';
import { createWorld, type World } from '../../sip-trunks/world.js';

// Money (platform fee 0.002000/min absolute, the config default): blend margin 0.001000;
//   member B 0.010000 → buyer 0.013000; member A 0.013700 → 0.016700; plain route P 0.012000 → 0.014000.

async function listing(w: World, token: string, o: { prefix: string; rate: string; name: string }) {
  const created = await w.api('POST', '/routes', token, {
    type: 'voice',
    name: o.name,
    country: 'GB',
    billingIncrement: '6/6',
    endpoints: [{ host: '127.0.0.1', port: 9, transport: 'udp', priority: 1 }],
  });
  if (created.status !== 201) throw new Error(created.text);
  const id = created.body.data.id as string;
  const sheet = await w.api('POST', `/routes/${id}/rates`, token, {
    format: 'csv',
    csv: `prefix,destination,rate,increment\n${o.prefix},UK test,${o.rate},6/6\n`,
  });
  if (sheet.status !== 200) throw new Error(sheet.text);
  return id;
}

t.test('purchases: route.purchased to seller and buyer; failover expands a bought blend', async (t) => {
  const w = await createWorld(t);
  const a = await listing(w, w.seller.token, { prefix: '4421', rate: '0.013700', name: 'A' });
  const b = await listing(w, w.seller.token, { prefix: '4421', rate: '0.010000', name: 'B' });
  const other = await w.signUp();
  const p = await listing(w, other.token, { prefix: '442', rate: '0.012000', name: 'P' });
  const blend = await w.api('POST', '/routes/blends', w.seller.token, {
    type: 'voice',
    name: 'GB blend',
    visibility: 'public',
    strategy: 'least_cost',
    margin: '0.001000',
    members: [{ routeId: a }, { routeId: b }],
  });
  t.equal(blend.status, 201, blend.text);
  const blendId = blend.body.data.id as string;

  const bought = await w.api('POST', '/purchases', w.operator.token, { routeId: blendId });
  t.equal(bought.status, 201, bought.text);
  const purchaseId = bought.body.data.id as string;
  const events = await w.d.sql<{ accountId: string; data: Record<string, unknown> }[]>`
    select account_id, data from events where event = 'route.purchased' order by account_id`;
  t.equal(events.length, 2, 'one event to the seller, one to the buyer');
  const seller = events.find((e) => e.accountId === w.seller.accountId)!;
  const buyer = events.find((e) => e.accountId === w.operator.accountId)!;
  t.match(seller.data, { purchaseId, routeId: blendId, routeName: 'GB blend', type: 'voice', role: 'seller' });
  t.match(buyer.data, { purchaseId, routeId: blendId, role: 'buyer' });
  t.notOk(JSON.stringify(seller.data).includes(w.operator.accountId), 'the buyer is not named to the seller');
  const again = await w.api('POST', '/purchases', w.operator.token, { routeId: blendId });
  t.equal(again.status, 200, 'buying again returns the purchase');
  t.equal(
    (await w.d.sql`select 1 from events where event = 'route.purchased'`).length,
    2,
    'a repeated purchase emits nothing',
  );
  t.equal((await w.api('POST', '/purchases', w.operator.token, { routeId: p })).status, 201);

  const res = await w.api('GET', '/purchases/failover?prefix=44', w.operator.token);
  t.equal(res.status, 200, res.text);
  const row = res.body.data.rows.find((r: { prefix: string }) => r.prefix === '4421');
  t.ok(row, 'the blend members’ prefixes are listed');
  t.match(row.first, { rank: 1, routeId: b, blendId, routeName: 'GB blend', price: '0.013000' });
  t.match(
    row.backups.map((x: { routeId: string; price: string; blendId: string | null }) => [x.routeId, x.price, x.blendId]),
    [
      [a, '0.016700', blendId],
      [p, '0.014000', null],
    ],
    'the blend’s members follow one another in its rule’s order, then the next route',
  );
  const wide = res.body.data.rows.find((r: { prefix: string }) => r.prefix === '442');
  t.match(wide.first, { routeId: p, price: '0.014000', blendId: null });
  t.equal(wide.backups.length, 0, 'the blend’s members do not cover 442');
});
