import t from 'tap';
import { createWorld, subAccountCall, uasAnswer } from '../sip-trunks/world.js';

// Money (platform fee 0.002000/min absolute; increment 6/6): the seller's deck has 4421 at 0.010000.
// Under a 20% interconnection discount the operator's traffic pays seller 0.008000 + fee = 0.010000/min;
// a 1–6 s call bills 6 s: 0.001000 = seller 0.000800 + fee 0.000200.

t.test('an interconnection in force prices a real SIP trunk call between its two parties', async (t) => {
  const w = await createWorld(t);
  const number = '442100000007';
  const uas = await uasAnswer(t, number);
  const r = await w.api('POST', '/interconnections', w.operator.token, {
    peerAccountId: w.seller.accountId,
    services: ['voice'],
    requesterDiscountPct: '20',
    peerDiscountPct: '0',
  });
  t.equal(r.status, 201, r.text);
  const accepted = await w.api('POST', `/interconnections/${r.body.data.id}/accept`, w.seller.token);
  t.equal(accepted.body.data.status, 'active', accepted.text);
  const route = await w.route({ port: uas.port, prefix: '4421', rate: '0.010000' });

  const resolved = await w.api('GET', `/interconnections/${r.body.data.id}/prices?number=${number}`, w.operator.token);
  t.match(resolved.body.data.routes, [{ routeId: route.routeId, sellerRate: '0.008000', price: '0.010000' }]);

  const { subId, cdr } = await subAccountCall(t, w, number, uas);
  t.same(
    cdr,
    { buyerCost: '0.001000', sellerCredit: '0.000800', sellerId: w.seller.accountId },
    '6 s at the agreed rate',
  );
  t.equal((await w.d.modules.services.ledger.balanceOf(subId)).balance, '4.999000');
});
