import t from 'tap';
import { createWorld, subAccountCall, uasAnswer } from '../../sip-trunks/world.js';

// Money (platform fee 0.002000/min absolute; increment 6/6): the deck has 4421 at 0.013700 and 44 at 0.020000.
// The accepted offer gives the buyer 4421 at 0.011000: buyer price 0.013000/min; a 1–6 s call bills 6 s:
// 0.001300 = seller 0.001100 + fee 0.000200. Numbers under 44 but not 4421 keep the deck's 0.022000.

t.test('offers: ask, counter, accept into private rates, decline, expire', async (t) => {
  const w = await createWorld(t);
  const number = '442100000002';
  const uas = await uasAnswer(t, number);
  const r = await w.route({ port: uas.port, prefix: '4421', rate: '0.013700' });
  const wide = await w.api('POST', `/routes/${r.routeId}/rates`, w.seller.token, {
    format: 'csv',
    csv: 'prefix,destination,rate,increment\n4421,UK test,0.013700,6/6\n44,UK,0.020000,6/6\n',
  });
  t.equal(wide.status, 200, wide.text);
  const events = async (accountId: string, event: string) =>
    w.d.sql<{ data: Record<string, unknown> }[]>`
      select data from events where account_id = ${accountId} and event = ${event} order by id`;

  let offerId = '';
  await t.test('ask: validation, one open offer per route, the seller is told', async (t) => {
    const uncovered = await w.api('POST', '/offers', w.operator.token, {
      routeId: r.routeId,
      rates: [{ prefix: '33', rate: '0.005' }],
    });
    t.equal(uncovered.status, 400);
    t.match(uncovered.body.error.details, [{ path: '/rates/0/prefix' }]);
    const own = await w.api('POST', '/offers', w.seller.token, {
      routeId: r.routeId,
      rates: [{ prefix: '4421', rate: '0.005' }],
    });
    t.equal(own.status, 409, 'no offer on an own route');
    const asked = await w.api('POST', '/offers', w.operator.token, {
      routeId: r.routeId,
      rates: [{ prefix: '4421', rate: '0.009' }],
      volume: 250000,
      note: 'steady CLI traffic',
      validDays: 14,
    });
    t.equal(asked.status, 201, asked.text);
    offerId = asked.body.data.id;
    t.match(asked.body.data, {
      role: 'buyer',
      status: 'pending',
      proposedBy: 'buyer',
      awaiting: 'seller',
      rates: [{ prefix: '4421', rate: '0.009000', buyerPrice: '0.011000' }],
      volume: 250000,
      validDays: 14,
      rounds: 1,
    });
    t.notOk(JSON.stringify(asked.body).includes(w.seller.accountId), 'the seller is not named');
    const again = await w.api('POST', '/offers', w.operator.token, {
      routeId: r.routeId,
      rates: [{ prefix: '4421', rate: '0.008' }],
    });
    t.equal(again.status, 409);
    const told = await events(w.seller.accountId, 'offer.received');
    t.equal(told.length, 1);
    t.match(told[0]!.data, { offerId, routeId: r.routeId, kind: 'request', destinations: 1, volume: 250000 });
    t.notOk(JSON.stringify(told[0]!.data).includes(w.operator.accountId), 'the buyer is not named');
  });

  await t.test('counter, turn taking, accept: private rates price calls', async (t) => {
    const early = await w.api('POST', `/offers/${offerId}/accept`, w.operator.token);
    t.equal(early.status, 409, 'the buyer cannot accept its own proposal');
    const countered = await w.api('POST', `/offers/${offerId}/counter`, w.seller.token, {
      rates: [{ prefix: '4421', rate: '0.011' }],
      note: 'best for this volume',
    });
    t.equal(countered.status, 200, countered.text);
    t.match(countered.body.data, {
      role: 'seller',
      status: 'countered',
      proposedBy: 'seller',
      awaiting: 'buyer',
      rounds: 2,
      rates: [{ rate: '0.011000', buyerPrice: '0.013000' }],
    });
    t.match((await events(w.operator.accountId, 'offer.received'))[0]!.data, { kind: 'counter', from: 'seller' });
    t.equal((await w.api('POST', `/offers/${offerId}/accept`, w.seller.token)).status, 409);

    const listed = await w.api('GET', '/offers?role=seller&status=countered', w.seller.token);
    t.same(
      listed.body.data.map((o: { id: string }) => o.id),
      [offerId],
    );
    t.equal((await w.api('GET', '/offers?role=buyer', w.seller.token)).body.data.length, 0);

    const before = await w.api('GET', `/routes/resolve?number=${number}`, w.operator.token);
    t.equal(before.body.data.routes[0].price, '0.015700', 'deck price before acceptance');
    const accepted = await w.api('POST', `/offers/${offerId}/accept`, w.operator.token);
    t.equal(accepted.status, 200, accepted.text);
    t.equal(accepted.body.data.status, 'accepted');
    t.match((await events(w.seller.accountId, 'offer.accepted'))[0]!.data, { offerId, by: 'buyer', validDays: 14 });
    t.equal((await w.api('POST', `/offers/${offerId}/decline`, w.seller.token)).status, 409, 'decided');

    const after = await w.api('GET', `/routes/resolve?number=${number}`, w.operator.token);
    t.match(after.body.data.routes[0], { routeId: r.routeId, price: '0.013000', offerId });
    const outside = await w.api('GET', '/routes/resolve?number=443000000001', w.operator.token);
    t.match(outside.body.data.routes[0], { price: '0.022000', offerId: null }, 'other prefixes keep the deck rate');

    const mine = await w.api('GET', '/offers/private-rates', w.operator.token);
    t.match(mine.body.data, {
      total: 1,
      rows: [{ routeId: r.routeId, prefix: '4421', rate: '0.011000', buyerPrice: '0.013000', offerId }],
    });
    const granted = await w.api('GET', '/offers/private-rates?role=seller', w.seller.token);
    t.equal(granted.body.data.total, 1);
    t.notOk(JSON.stringify(granted.body).includes(w.operator.accountId), 'buyers are not named to the seller');

    const { subId, cdr } = await subAccountCall(t, w, number, uas);
    t.equal(cdr!.buyerCost, '0.001300', '6 s at the private 0.011000 + fee');
    t.equal(cdr!.sellerCredit, '0.001100');
    t.equal((await w.d.modules.services.ledger.balanceOf(subId)).balance, '4.998700');
  });

  await t.test('decline and expiry', async (t) => {
    const asked = await w.api('POST', '/offers', w.operator.token, {
      routeId: r.routeId,
      rates: [{ prefix: '44', rate: '0.015' }],
    });
    t.equal(asked.status, 201, asked.text);
    const declined = await w.api('POST', `/offers/${asked.body.data.id}/decline`, w.seller.token);
    t.equal(declined.status, 200);
    t.match(declined.body.data, { status: 'declined', declinedBy: 'seller', awaiting: null });
    t.match((await events(w.operator.accountId, 'offer.declined'))[0]!.data, { by: 'seller' });

    const late = await w.api('POST', '/offers', w.operator.token, {
      routeId: r.routeId,
      rates: [{ prefix: '44', rate: '0.015' }],
      expiresInHours: 1,
    });
    t.equal(late.status, 201);
    await w.d.sql`update offers set expires_at = now() - interval '1 minute' where id = ${late.body.data.id}`;
    t.equal((await w.api('GET', `/offers/${late.body.data.id}`, w.operator.token)).body.data.status, 'expired');
    t.equal(
      (
        await w.api('POST', `/offers/${late.body.data.id}/counter`, w.seller.token, {
          rates: [{ prefix: '44', rate: '0.018' }],
        })
      ).status,
      409,
    );
    t.equal(await w.d.modules.services.offers.expireDue(), 1);
    t.equal((await events(w.seller.accountId, 'offer.expired')).length, 1);
    t.equal((await events(w.operator.accountId, 'offer.expired')).length, 1);
    t.equal((await w.api('GET', `/offers/${late.body.data.id}`, w.seller.token)).body.data.status, 'expired');
  });
});
