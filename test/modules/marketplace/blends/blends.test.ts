import t from 'tap';
import { Decimal } from 'decimal.js';
import { answeredSubCall, createWorld, eventually, uasAnswer, type World } from '../../sip-trunks/world.js';

// Money (platform fee 0.002000/min and 0.000500/msg absolute, the config defaults; increment 6/6):
//   member A seller rate 0.013700, member B 0.010000, blend margin 0.001000.
//   least_cost picks B: seller side 0.011000/min, buyer price 0.013000/min.
//   A 1–6 s call bills 6 s: buyer 0.001300 = seller 0.001100 (B's rate 0.001000 + margin 0.000100) + fee 0.000200.

/** A voice listing of the seller, rated for `prefix` (not bought by anyone). */
async function listing(w: World, o: { port: number; prefix: string; rate: string; name: string; asr?: number }) {
  const created = await w.api('POST', '/routes', w.seller.token, {
    type: 'voice',
    name: o.name,
    country: 'GB',
    billingIncrement: '6/6',
    ...(o.asr === undefined ? {} : { expectedAsr: o.asr, expectedAcd: 200, expectedPdd: 1000 }),
    endpoints: [{ host: '127.0.0.1', port: o.port, transport: 'udp', priority: 1 }],
  });
  if (created.status !== 201) throw new Error(created.text);
  const id = created.body.data.id as string;
  const sheet = await w.api('POST', `/routes/${id}/rates`, w.seller.token, {
    format: 'csv',
    csv: `prefix,destination,rate,increment\n${o.prefix},UK test,${o.rate},6/6\n`,
  });
  if (sheet.status !== 200) throw new Error(sheet.text);
  return id;
}

t.test('route blends: compose, read, change, preview, price, buy, call, delete', async (t) => {
  const w = await createWorld(t);
  const number = '442100000001';
  const uasB = await uasAnswer(t, number);
  // A's endpoint is never reached under least_cost; a closed port is enough.
  const a = await listing(w, { port: 9, prefix: '4421', rate: '0.013700', name: 'A', asr: 60 });
  const b = await listing(w, { port: uasB.port, prefix: '4421', rate: '0.010000', name: 'B', asr: 20 });
  const aWide = await listing(w, { port: 9, prefix: '44', rate: '0.020000', name: 'A wide' });

  await t.test('validation: members, shares, nesting, types, ownership', async (t) => {
    const one = await w.api('POST', '/routes/blends', w.seller.token, {
      type: 'voice',
      name: 'x',
      strategy: 'priority',
      members: [{ routeId: a }],
    });
    t.equal(one.status, 400);
    const shares = await w.api('POST', '/routes/blends', w.seller.token, {
      type: 'voice',
      name: 'x',
      strategy: 'percent',
      members: [
        { routeId: a, percent: 60 },
        { routeId: b, percent: 30 },
      ],
    });
    t.equal(shares.status, 400);
    t.match(shares.body.error.details, [{ path: '/members', message: /90/ }]);
    const notOwn = await w.api('POST', '/routes/blends', w.operator.token, {
      type: 'voice',
      name: 'x',
      strategy: 'priority',
      members: [{ routeId: a }, { routeId: b }],
    });
    t.equal(notOwn.status, 400, 'routes neither own nor bought');
    t.match(notOwn.body.error.details, [{ path: '/members/0/routeId' }, { path: '/members/1/routeId' }]);
    const sms = await w.api('POST', '/routes/blends', w.seller.token, {
      type: 'sms',
      name: 'x',
      strategy: 'priority',
      members: [{ routeId: a }, { routeId: b }],
    });
    t.equal(sms.status, 400, 'voice routes in an SMS blend');
    const margin = await w.api('POST', '/routes/blends', w.seller.token, {
      type: 'voice',
      name: 'x',
      strategy: 'priority',
      margin: '0.1234567',
      members: [{ routeId: a }, { routeId: b }],
    });
    t.equal(margin.status, 400, 'margin beyond 6 places');
  });

  let blendId = '';
  await t.test('create, get (owner and buyer), list', async (t) => {
    const created = await w.api('POST', '/routes/blends', w.seller.token, {
      type: 'voice',
      name: 'UK blend',
      visibility: 'public',
      strategy: 'least_cost',
      margin: '0.001',
      members: [{ routeId: a }, { routeId: b }, { routeId: aWide }],
    });
    t.equal(created.status, 201, created.text);
    blendId = created.body.data.id;
    t.match(created.body.data, {
      type: 'voice',
      name: 'UK blend',
      visibility: 'public',
      status: 'active',
      own: true,
      strategy: 'least_cost',
      margin: '0.001000',
      members: [
        { position: 1, routeId: a, percent: 0 },
        { position: 2, routeId: b, percent: 0 },
        { position: 3, routeId: aWide, percent: 0 },
      ],
    });
    const nested = await w.api('POST', '/routes/blends', w.seller.token, {
      type: 'voice',
      name: 'x',
      strategy: 'priority',
      members: [{ routeId: blendId }, { routeId: b }],
    });
    t.equal(nested.status, 400, 'a blend is not a member');
    t.match(nested.body.error.details, [{ path: '/members/0/routeId', message: /blend/ }]);

    const asBuyer = await w.api('GET', `/routes/blends/${blendId}`, w.operator.token);
    t.equal(asBuyer.status, 200);
    t.equal(asBuyer.body.data.own, false);
    t.same(
      asBuyer.body.data.members.map((m: { routeId: string | null }) => m.routeId),
      [null, null, null],
      'buyers do not see which listings stand behind a blend',
    );
    const listing = await w.api('GET', `/routes/${blendId}`, w.operator.token);
    t.equal(listing.status, 200);
    t.equal(listing.body.data.blend, true, 'the blend is a listing too');

    const second = await w.api('POST', '/routes/blends', w.seller.token, {
      type: 'voice',
      name: 'second',
      strategy: 'priority',
      members: [{ routeId: b }, { routeId: a }],
    });
    t.equal(second.status, 201);
    const page1 = await w.api('GET', '/routes/blends?limit=1', w.seller.token);
    t.equal(page1.body.data.length, 1);
    t.equal(page1.body.data[0].id, second.body.data.id, 'newest first');
    t.equal(page1.body.hasMore, true);
    const page2 = await w.api('GET', `/routes/blends?limit=1&cursor=${page1.body.nextCursor}`, w.seller.token);
    t.equal(page2.body.data[0].id, blendId);
    t.equal(page2.body.hasMore, false);
    t.equal((await w.api('GET', '/routes/blends', w.operator.token)).body.data.length, 0, 'only own blends');
    const gone = await w.api('DELETE', `/routes/blends/${second.body.data.id}`, w.seller.token);
    t.equal(gone.status, 200, 'an unsold blend is deleted');
    t.equal((await w.api('GET', `/routes/blends/${second.body.data.id}`, w.seller.token)).status, 404);
  });

  await t.test('preview and rates: member plus margin plus fee, to the sixth decimal', async (t) => {
    const p = await w.api('GET', `/routes/blends/${blendId}/preview?number=${number}`, w.seller.token);
    t.equal(p.status, 200, p.text);
    t.match(p.body.data, {
      strategy: 'least_cost',
      margin: '0.001000',
      resolved: { routeId: b, routeName: 'B', matchedPrefix: '4421', price: '0.013000', share: 100 },
      notCovering: 0,
    });
    t.same(
      p.body.data.members.map((m: { price: string }) => m.price),
      ['0.013000', '0.016700', '0.023000'],
      'B 0.010000, A 0.013700, A wide 0.020000: each + 0.001000 margin + 0.002000 fee',
    );
    const buyerView = await w.api('GET', `/routes/blends/${blendId}/preview?number=${number}`, w.operator.token);
    t.equal(buyerView.body.data.resolved.routeId, null);
    t.equal(buyerView.body.data.resolved.price, '0.013000');
    const rates = await w.api('GET', `/routes/blends/${blendId}/rates`, w.operator.token);
    t.equal(rates.status, 200, rates.text);
    t.same(rates.body.data.rows, [
      {
        prefix: '44',
        destination: 'UK test',
        price: '0.023000',
        billingIncrement: '6/6',
        lowest: '0.023000',
        highest: '0.023000',
        members: 1,
      },
      {
        prefix: '4421',
        destination: 'UK test',
        price: '0.013000',
        billingIncrement: '6/6',
        lowest: '0.013000',
        highest: '0.023000',
        members: 3,
      },
    ]);
    t.equal(rates.body.data.total, 2);

    const quality = await w.api('PATCH', `/routes/blends/${blendId}`, w.seller.token, { strategy: 'quality' });
    t.equal(quality.status, 200, quality.text);
    const q = await w.api('GET', `/routes/blends/${blendId}/preview?number=${number}`, w.seller.token);
    t.equal(q.body.data.resolved.routeId, a, 'quality: A states the better figures');
    const pct = await w.api('PATCH', `/routes/blends/${blendId}`, w.seller.token, {
      strategy: 'percent',
      members: [
        { routeId: b, percent: 100 },
        { routeId: a, percent: 0 },
      ],
    });
    t.equal(pct.status, 200, pct.text);
    const split = await w.api('GET', `/routes/blends/${blendId}/preview?number=${number}`, w.seller.token);
    t.match(split.body.data.resolved, { routeId: b, share: 100 });
    t.match(split.body.data.members[1], { routeId: a, share: 0 });
    const back = await w.api('PATCH', `/routes/blends/${blendId}`, w.seller.token, {
      strategy: 'least_cost',
      members: [{ routeId: a }, { routeId: b }],
    });
    t.equal(back.status, 200, back.text);
    t.equal((await w.api('PATCH', `/routes/blends/${blendId}`, w.operator.token, { name: 'mine' })).status, 404);
  });

  await t.test('a real sipp call through the bought blend bills member plus margin', async (t) => {
    const bought = await w.api('POST', '/purchases', w.operator.token, { routeId: blendId });
    t.equal(bought.status, 201, bought.text);
    const resolved = await w.api('GET', `/routes/resolve?number=${number}`, w.operator.token);
    t.match(resolved.body.data.routes[0], { routeId: b, blendId, price: '0.013000', routeName: 'UK blend' });
    const sub = await w.sub({ markupPct: '0', fund: '10.000000' });
    const sellerBefore = await w.d.modules.services.ledger.balanceOf(w.seller.accountId);
    await answeredSubCall(t, w, sub, number, uasB);
    const [cdr] = await eventually(async () => {
      const rows = await w.d.sql<{ routeId: string; buyerCost: string; sellerCredit: string; sellerId: string }[]>`
        select route_id, buyer_cost::text, seller_credit::text, seller_id from cdrs where account_id = ${sub.id}`;
      return rows.length > 0 ? rows : null;
    });
    t.equal(cdr!.routeId, b, 'carried by member B');
    t.equal(cdr!.buyerCost, '0.001300', '6 s at 0.013000/min');
    t.equal(cdr!.sellerCredit, '0.001100', "6 s at B's 0.010000 + margin 0.001000");
    t.equal(cdr!.sellerId, w.seller.accountId);
    const subBalance = await w.d.modules.services.ledger.balanceOf(sub.id);
    t.equal(subBalance.balance, '9.998700');
    t.equal(subBalance.held, '0.000000');
    const sellerAfter = await w.d.modules.services.ledger.balanceOf(w.seller.accountId);
    t.equal(
      new Decimal(sellerAfter.payable).minus(sellerBefore.payable).toFixed(6),
      '0.001100',
      'the blend owner earns the member rate and the margin',
    );
    const usage = await w.api('GET', `/purchases/${bought.body.data.id}/usage`, w.operator.token);
    t.match(usage.body.data, { calls: 1, spend: '0.001300' }, "the blend's usage counts its members' records");
  });

  await t.test('an SMS blend resolves to a member priced with the margin', async (t) => {
    const sms = async (rate: string) => {
      const c = await w.api('POST', '/routes', w.seller.token, {
        type: 'sms',
        name: `sms ${rate}`,
        smsDelivery: { kind: 'http', url: 'https://192.0.2.60/submit', signingSecret: 'a-long-shared-secret-1234' },
      });
      const id = c.body.data.id as string;
      const up = await w.api('POST', `/routes/${id}/rates`, w.seller.token, {
        format: 'csv',
        csv: `prefix,destination,rate\n4420,UK SMS,${rate}\n`,
      });
      if (up.status !== 200) throw new Error(up.text);
      return id;
    };
    const first = await sms('0.004000');
    const second = await sms('0.003000');
    const blend = await w.api('POST', '/routes/blends', w.seller.token, {
      type: 'sms',
      name: 'UK SMS blend',
      visibility: 'public',
      strategy: 'priority',
      margin: '0.0005',
      members: [{ routeId: first }, { routeId: second }],
    });
    t.equal(blend.status, 201, blend.text);
    t.equal((await w.api('POST', '/purchases', w.operator.token, { routeId: blend.body.data.id })).status, 201);
    const resolved = await w.api('GET', '/routes/resolve?number=442000000001&type=sms', w.operator.token);
    t.match(
      resolved.body.data.routes,
      [
        { routeId: first, blendId: blend.body.data.id, price: '0.005000' },
        { routeId: second, blendId: blend.body.data.id, price: '0.004000' },
      ],
      'priority: the first member, then the second as failover; 0.004000 + 0.000500 margin + 0.000500 fee',
    );
  });

  await t.test('a sold blend is not deleted; grants and own-traffic blends', async (t) => {
    const refused = await w.api('DELETE', `/routes/blends/${blendId}`, w.seller.token);
    t.equal(refused.status, 409);
    // The operator composes its own blend from the blend's member it can use: only routes it owns or bought.
    const own = await w.api('POST', '/routes/blends', w.operator.token, {
      type: 'voice',
      name: 'mine',
      strategy: 'priority',
      members: [{ routeId: blendId }, { routeId: a }],
    });
    t.equal(own.status, 400);
    const direct = await w.api('POST', '/purchases', w.operator.token, { routeId: a });
    t.equal(direct.status, 201);
    const direct2 = await w.api('POST', '/purchases', w.operator.token, { routeId: b });
    t.equal(direct2.status, 201);
    const mine = await w.api('POST', '/routes/blends', w.operator.token, {
      type: 'voice',
      name: 'mine',
      strategy: 'priority',
      members: [{ routeId: a }, { routeId: b }],
    });
    t.equal(mine.status, 201, mine.text);
    const sellable = await w.api('PATCH', `/routes/blends/${mine.body.data.id}`, w.operator.token, {
      margin: '0.000500',
    });
    t.equal(sellable.status, 400, 'a margin on routes bought from others is refused');
    const grant = await w.api('POST', `/routes/${mine.body.data.id}/access`, w.operator.token, {
      accountId: w.seller.accountId,
    });
    t.equal(grant.status, 400, 'an own-traffic blend is never granted');
    const rates = await w.api('GET', `/routes/blends/${mine.body.data.id}/rates?prefix=4421`, w.operator.token);
    t.same(
      rates.body.data.rows.map((r: { price: string }) => r.price),
      ['0.015700'],
      'priority: A first at 0.013700 + fee, no margin',
    );
  });
});
