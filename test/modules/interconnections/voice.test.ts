import t from 'tap';
import { createWorld, eventually, expectExit, uac, uacScenario, uasAnswer } from '../sip-trunks/world.js';

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

  const sub = await w.sub({ markupPct: '0', fund: '5.000000' });
  const run = await uac(
    t,
    w.sipPort,
    uacScenario('uac-tail-answer.xml', { HOLD_MS: '1000' }),
    number,
    sub.sipUsername,
    sub.sipPassword,
  );
  await expectExit(t, run, 'caller completed the call');
  await expectExit(t, uas, 'supplier answered');
  const [cdr] = await eventually(async () => {
    const rows = await w.d.sql<{ buyerCost: string; sellerCredit: string; sellerId: string }[]>`
      select buyer_cost::text, seller_credit::text, seller_id from cdrs where account_id = ${sub.id}`;
    return rows.length > 0 ? rows : null;
  });
  t.same(
    cdr,
    { buyerCost: '0.001000', sellerCredit: '0.000800', sellerId: w.seller.accountId },
    '6 s at the agreed rate',
  );
  t.equal((await w.d.modules.services.ledger.balanceOf(sub.id)).balance, '4.999000');
});
