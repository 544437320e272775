import t from 'tap';
import { NotificationKinds } from '../../../src/modules/notifications/kinds.js';
import { createWorld, eventually, subAccountCall, uasAnswer } from '../sip-trunks/world.js';

// Money (platform fee 0.002000/min absolute; increment 6/6; 1–6 s calls bill 6 s): the seller's decks
// have 4421 and 4422 at 0.010000. Agreed for the operator: 442100 at 0.007777 (else 20% off), and an
// amount cap of 0.000500 a month, past which its calls go at list price.
// Call 1 (442100…, agreed): seller 0.007777/10 = 0.000778, buyer 0.009777/10 = 0.000978; that crosses
// the cap. Call 2 (442200…, 20% off were it under the cap): list price, seller 0.001000, buyer 0.001200.

t.test('an agreed rate per destination and an amount cap on real SIP trunk calls', async (t) => {
  const w = await createWorld(t);
  const uas1 = await uasAnswer(t, '442100000001');
  const uas2 = await uasAnswer(t, '442200000002');
  const route1 = await w.route({ port: uas1.port, prefix: '4421', rate: '0.010000' });
  await w.route({ port: uas2.port, prefix: '4422', rate: '0.010000' });
  const r = await w.api('POST', '/interconnections', w.operator.token, {
    peerAccountId: w.seller.accountId,
    services: ['voice'],
    requesterDiscountPct: '20',
    peerDiscountPct: '0',
    caps: { amount: '0.0005', overCap: 'list_price' },
    rates: [{ payer: 'requester', service: 'voice', prefix: '442100', rate: '0.007777' }],
  });
  t.equal(r.status, 201, r.text);
  const id = r.body.data.id as string;
  t.equal((await w.api('POST', `/interconnections/${id}/accept`, w.seller.token)).status, 200);
  const quoted = await w.api('GET', `/interconnections/${id}/prices?number=442100000001`, w.operator.token);
  t.match(quoted.body.data.routes, [{ routeId: route1.routeId, sellerRate: '0.007777', price: '0.009777' }]);

  const first = await subAccountCall(t, w, '442100000001', uas1);
  t.same(first.cdr, { buyerCost: '0.000978', sellerCredit: '0.000778', sellerId: w.seller.accountId });
  const usage = await w.api('GET', `/interconnections/${id}/usage`, w.seller.token);
  t.match(usage.body.data.sides[0], {
    payer: 'requester',
    minutes: '0.10',
    amount: '0.000778',
    capReached: { amount: true, minutes: false },
  });

  // The crossing is told to both sides once, whichever job (the daemon's or this one) runs first.
  const events = (accountId: string) =>
    w.d.sql<{ data: Record<string, unknown> }[]>`
      select data from events where account_id = ${accountId} and event = 'interconnection.cap_reached'`;
  const told = await eventually(async () => {
    await w.d.modules.services.interconnections.tellCapsReached();
    const rows = await events(w.operator.accountId);
    return rows.length > 0 ? rows : null;
  });
  t.equal(told.length, 1, 'the payer is told once');
  t.match(told[0]!.data, {
    interconnectionId: id,
    counterpartyId: w.seller.accountId,
    payer: 'requester',
    payerAccountId: w.operator.accountId,
    cap: 'amount',
    limit: '0.000500',
    period: 'month',
    overCap: 'list_price',
    usage: { minutes: '0.10', messages: 0, amount: '0.000778' },
  });
  const sellerTold = await events(w.seller.accountId);
  t.equal(sellerTold.length, 1, 'the other side is told too');
  t.match(sellerTold[0]!.data, { counterpartyId: w.operator.accountId, payerAccountId: w.operator.accountId });
  t.equal(await w.d.modules.services.interconnections.tellCapsReached(), 0, 'nothing left to tell');
  t.match(NotificationKinds['interconnection.cap_reached']!.render(told[0]!.data), {
    title: 'Interconnection cap reached',
    body: new RegExp(
      `^You reached the amount cap \\(0\\.000500\\) of your interconnection with account ${w.seller.accountId}: your traffic over its routes goes at list prices until `,
    ),
  });
  t.match(
    NotificationKinds['interconnection.cap_reached']!.render(sellerTold[0]!.data).body,
    /^Account .* reached the amount cap \(0\.000500\) of your interconnection: its traffic over your routes goes at list prices/,
  );

  const second = await subAccountCall(t, w, '442200000002', uas2);
  t.same(
    second.cdr,
    { buyerCost: '0.001200', sellerCredit: '0.001000', sellerId: w.seller.accountId },
    'past the cap: the list price',
  );

  const s = await w.api('POST', `/interconnections/${id}/statements`, w.operator.token);
  t.equal(s.status, 201, s.text);
  t.match(s.body.data, {
    final: false,
    lines: [
      {
        payer: 'requester',
        service: 'voice',
        routeId: route1.routeId,
        agreedRate: '0.007777',
        count: 1,
        billedSeconds: 6,
        minutes: '0.10',
        amount: '0.000778',
        buyerCost: '0.000978',
      },
    ],
    requester: { sent: '0.000778', calls: 1, minutes: '0.10' },
    net: { payer: 'requester', payee: 'peer', amount: '0.000778' },
  });
  t.equal(s.body.data.lines.length, 1, 'the call past the cap is not under the terms');
  t.equal((await events(w.operator.accountId)).length, 1, 'a call past the cap tells nothing again');
});
