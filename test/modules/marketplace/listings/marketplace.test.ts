import t from 'tap';
import pino from 'pino';
import { bearer, buildTestApp } from '../../../helpers/app.js';
import { createManualClock } from '../../../../src/platform/clock.js';
import { createDeckCache } from '../../../../src/modules/marketplace/routing/deck-cache.js';

const START = new Date('2026-11-22T00:00:00Z');
const DAY = 86_400_000;

const voiceRoute = (name: string, extra: Record<string, unknown> = {}) => ({
  type: 'voice',
  name,
  country: 'GB',
  expectedAsr: 50,
  expectedAcd: 120,
  expectedPdd: 2000,
  cliType: 'CLI',
  billingIncrement: '60/60',
  endpoints: [
    { host: '192.0.2.10', port: 5060, transport: 'udp', username: 'trunk1', password: 's3cret-pass', priority: 1 },
  ],
  ...extra,
});

t.test('marketplace end to end: list, sheets, visibility, purchases, Smart Routing, price look-ups', async (t) => {
  const clock = createManualClock(START);
  // fee: absolute 0.002/min, 0.0005/msg (config defaults)
  const h = await buildTestApp(t, { clock });
  const seller = await h.signUp();
  const seller2 = await h.signUp();
  const buyer = await h.signUp();
  const other = await h.signUp();
  const call = async (method: string, url: string, token: string | null, payload?: unknown) => {
    const r = await h.app.inject({
      method: method as 'GET',
      url: `/api/v1${url}`,
      headers: token === null ? {} : bearer(token),
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    return { status: r.statusCode, body: r.json() as { success: boolean; data: any; error: any } }; // eslint-disable-line @typescript-eslint/no-explicit-any
  };

  // A peer daemon's deck cache on the same database: it must follow uploads through LISTEN/NOTIFY.
  const reloaded: string[] = [];
  const waiters: { id: string; resolve: () => void; ready: () => boolean }[] = [];
  const peer = createDeckCache({
    sql: h.sql,
    clock,
    log: pino({ level: 'silent' }),
    onReload: (id) => {
      reloaded.push(id);
      // A route's creation notifies too: a waiter resolves only on the rebuild it waits for.
      for (const w of waiters.filter((x) => x.id === id && x.ready())) w.resolve();
    },
  });
  await peer.start();
  t.teardown(() => peer.stop());
  const peerReload = (id: string, ready: () => boolean = () => true) =>
    new Promise<void>((resolve) =>
      ready() && reloaded.includes(id) ? resolve() : waiters.push({ id, resolve, ready }),
    );

  // --- listing
  const bad = await call('POST', '/routes', seller.session, { type: 'voice', name: 'no endpoints' });
  t.equal(bad.status, 400);
  t.match(bad.body.error.details, [{ path: '/endpoints' }]);
  const smsBad = await call('POST', '/routes', seller.session, {
    type: 'sms',
    name: 'x',
    smsDelivery: { kind: 'http', url: 'http://insecure.example' },
  });
  t.equal(smsBad.status, 400);

  const created = await call('POST', '/routes', seller.session, voiceRoute('UK premium'));
  t.equal(created.status, 201, JSON.stringify(created.body));
  const a = created.body.data;
  t.equal(a.own, true);
  t.equal(a.endpoints[0].hasPassword, true);
  t.notOk(JSON.stringify(created.body).includes('s3cret-pass'), 'credentials are write-only');

  // --- sheets
  const badSheet = await call('POST', `/routes/${a.id}/rates`, seller.session, {
    format: 'csv',
    csv: 'prefix,destination,rate,increment\n44,UK,0.010,60/60\n44x,Bad,0.1,60/60\n447,UK Mobile,-1,1/1\n',
  });
  t.equal(badSheet.status, 400);
  t.equal(badSheet.body.error.code, 'VALIDATION_ERROR');
  t.same(
    badSheet.body.error.details.map((d: { path: string }) => d.path),
    ['line 3', 'line 4'],
  );

  const up = await call('POST', `/routes/${a.id}/rates`, seller.session, {
    format: 'csv',
    csv: 'prefix,destination,rate,increment\n44,UK,0.010000,60/60\n447,UK Mobile,0.020000,1/1\n',
  });
  t.equal(up.status, 200, JSON.stringify(up.body));
  t.match(up.body.data, { rows: 2, newDestinations: 2, increases: 0 });

  const b = (
    await call('POST', '/routes', seller2.session, voiceRoute('UK cheap', { expectedAsr: 20, expectedAcd: 30 }))
  ).body.data;
  const peerSawB = peerReload(b.id, () => peer.registry.lookup(b.id, '447700900000')?.rate === '0.015000');
  t.equal(
    (
      await call('POST', `/routes/${b.id}/rates`, seller2.session, {
        format: 'json',
        rows: [
          { prefix: '44', destination: 'UK', rate: '0.008', increment: '6/6' },
          { prefix: '4477', destination: 'UK Mobile 77', rate: '0.015' },
        ],
      })
    ).status,
    200,
  );
  await peerSawB;
  t.equal(
    peer.registry.lookup(b.id, '447700900000')?.rate,
    '0.015000',
    'the peer rebuilt the deck from the notification',
  );

  const priv = (await call('POST', '/routes', seller.session, voiceRoute('UK private', { visibility: 'private' }))).body
    .data;
  t.equal(
    (
      await call('POST', `/routes/${priv.id}/rates`, seller.session, {
        format: 'csv',
        csv: 'prefix,destination,rate\n44,UK,0.001\n',
      })
    ).status,
    200,
  );

  // --- catalogue as seen by a buyer
  const list = await call('GET', '/routes?type=voice&country=GB&sort=price_asc', buyer.session);
  t.equal(list.status, 200);
  t.same(
    list.body.data.rows.map((r: { id: string }) => r.id),
    [b.id, a.id],
    'private route invisible; cheapest first',
  );
  t.equal(list.body.data.rows[0].lowestRate, '0.008000');
  t.equal(list.body.data.rows[0].endpoints, null, 'buyers never see delivery details');
  t.notOk(JSON.stringify(list.body).includes(seller.accountId), 'seller identity never shown');
  t.equal((await call('GET', `/routes/${priv.id}`, buyer.session)).status, 404);
  t.equal(
    (await call('POST', '/purchases', buyer.session, { routeId: priv.id })).status,
    404,
    'private routes cannot be bought',
  );
  const rates = await call('GET', `/routes/${a.id}/rates`, buyer.session);
  t.same(
    rates.body.data.rows.map((r: { prefix: string; rate: string }) => [r.prefix, r.rate]),
    [
      ['44', '0.010000'],
      ['447', '0.020000'],
    ],
  );
  const mine = await call('GET', '/routes/my/list', seller.session);
  t.same(mine.body.data.rows.map((r: { id: string }) => r.id).sort(), [a.id, priv.id].sort());

  t.equal(
    (await call('POST', `/routes/${priv.id}/access`, seller.session, { accountId: buyer.accountId })).status,
    200,
  );
  t.equal((await call('GET', `/routes/${priv.id}`, buyer.session)).status, 200, 'visible once granted');
  t.equal((await call('GET', `/routes/${priv.id}`, other.session)).status, 404, 'still invisible to others');

  // --- purchases
  const p1 = await call('POST', '/purchases', buyer.session, { routeId: a.id });
  t.equal(p1.status, 201);
  const again = await call('POST', '/purchases', buyer.session, { routeId: a.id });
  t.equal(again.status, 200, 'buying again is idempotent');
  t.equal(again.body.data.id, p1.body.data.id);
  const pb = await call('POST', '/purchases', buyer.session, { routeId: b.id });
  t.equal(pb.status, 201);
  t.equal(
    (await call('POST', '/purchases', seller.session, { routeId: a.id })).status,
    409,
    'own routes need no purchase',
  );
  const plist = await call('GET', '/purchases', buyer.session);
  t.equal(plist.body.data.length, 2);

  // --- Smart Routing (fee 0.002/min): a/447 = 0.022, b/4477 = 0.017, b/44 = 0.010, a/44 = 0.012
  const resolve = (number: string, strategy: string) =>
    call('GET', `/routes/resolve?number=${encodeURIComponent(number)}&strategy=${strategy}`, buyer.session);
  const cheap = await resolve('+447700900123', 'cheapest');
  t.equal(cheap.status, 200, JSON.stringify(cheap.body));
  t.same(
    cheap.body.data.routes.map((r: { routeId: string; price: string; matchedPrefix: string }) => [
      r.routeId,
      r.price,
      r.matchedPrefix,
    ]),
    [
      [b.id, '0.017000', '4477'],
      [a.id, '0.022000', '447'],
    ],
  );
  const best = await resolve('447700900123', 'best_quality');
  t.same(
    best.body.data.routes.map((r: { routeId: string }) => r.routeId),
    [a.id, b.id],
    'a states the better quality',
  );
  t.match(best.body.data.explanation, /balanced/);

  const cands = await h.services.routing.candidatesFor({
    accountId: buyer.accountId,
    number: '+441234567890',
    type: 'voice',
  });
  t.same(
    cands.map((c) => [c.routeId, c.price.toFixed(6), c.increment.text]),
    [
      [b.id, '0.010000', '6/6'],
      [a.id, '0.012000', '60/60'],
    ],
  );
  t.equal(cands[1]!.endpoints[0]!.password, 's3cret-pass', 'the call path gets the credentials');
  t.same(
    await h.services.routing.candidatesFor({ accountId: buyer.accountId, number: '+33123456789', type: 'voice' }),
    [],
    'uncovered number',
  );
  const only = await h.services.routing.candidatesFor({
    accountId: buyer.accountId,
    number: '+441234567890',
    type: 'voice',
    routeId: a.id,
  });
  t.same(
    only.map((c) => c.routeId),
    [a.id],
  );
  await t.rejects(
    h.services.routing.candidatesFor({
      accountId: other.accountId,
      number: '+441234567890',
      type: 'voice',
      routeId: a.id,
    }),
    /not purchased/,
  );
  const sellerOwn = await h.services.routing.candidatesFor({
    accountId: seller.accountId,
    number: '+441234567890',
    type: 'voice',
  });
  t.same(
    sellerOwn.map((c) => [c.routeId, c.own]).sort(),
    [
      [a.id, true],
      [priv.id, true],
    ].sort(),
    'own routes count like purchases',
  );

  // --- routing order
  const order = await call('PUT', '/purchases/routing-order', buyer.session, { routeIds: [a.id, b.id] });
  t.equal(order.status, 200);
  const rf = await call('GET', '/purchases/route-for?number=441234567890', buyer.session);
  t.equal(rf.body.data.route.routeId, a.id, 'routing order beats price');
  t.equal(rf.body.data.backups[0].routeId, b.id);
  t.equal(
    (await call('PUT', '/purchases/routing-order', buyer.session, { routeIds: [priv.id] })).status,
    400,
    'only purchased or own routes',
  );
  t.equal((await call('DELETE', `/purchases/${p1.body.data.id}/routing-priority`, buyer.session)).status, 200);
  t.equal((await call('GET', '/purchases/route-for?number=441234567890', buyer.session)).body.data.route.routeId, b.id);
  t.equal((await call('GET', '/purchases/route-for?number=33123', buyer.session)).status, 404);

  // --- public price look-up: no credential, no seller identity
  const pn = await call('GET', '/routes/price-number?number=447700900123&type=voice', null);
  t.equal(pn.status, 200);
  t.match(pn.body.data, { number: '447700900123', unit: 'min', total: 2 });
  t.same(
    pn.body.data.routes.map((r: { rate: string; matchedPrefix: string }) => [r.rate, r.matchedPrefix]),
    [
      ['0.017000', '4477'],
      ['0.022000', '447'],
    ],
  );
  t.notOk(JSON.stringify(pn.body).includes(b.id), 'no route or seller identity');
  let limited = 0;
  for (let i = 0; i < 30; i++)
    if ((await call('GET', '/routes/price-number?number=4477', null)).status === 429) limited++;
  t.equal(limited, 1, 'public look-ups are limited to 30 a minute');

  // --- cancel
  const cancelled = await call('POST', `/purchases/${pb.body.data.id}/cancel`, buyer.session);
  t.equal(cancelled.body.data?.status, 'cancelled', JSON.stringify(cancelled.body));
  t.equal((await call('POST', `/purchases/${pb.body.data.id}/cancel`, buyer.session)).status, 400);
  const after = await h.services.routing.candidatesFor({
    accountId: buyer.accountId,
    number: '+441234567890',
    type: 'voice',
  });
  t.same(
    after.map((c) => c.routeId),
    [a.id],
    'a cancelled purchase is no longer routed',
  );

  // --- scheduled increase with the injected clock (last: sessions expire as it moves); a decrease applies at once
  const change = await call('POST', `/routes/${a.id}/rates`, seller.session, {
    format: 'csv',
    csv: 'prefix,destination,rate,increment\n44,UK,0.030000,60/60\n447,UK Mobile,0.005000,1/1\n',
    increaseEffectiveAt: new Date(START.getTime() + 2 * DAY).toISOString(),
  });
  t.match(change.body.data, { increases: 1, decreases: 1, scheduledChanges: 1 }, JSON.stringify(change.body));
  const changes = await call('GET', `/routes/${a.id}/rate-changes`, seller.session);
  t.match(changes.body.data, [{ prefix: '44', kind: 'increase', oldRate: '0.010000', newRate: '0.030000' }]);
  const upcoming = await call('GET', `/purchases/${p1.body.data.id}/upcoming-rate-changes`, buyer.session);
  t.match(
    upcoming.body.data,
    [{ prefix: '44', kind: 'increase', newRate: '0.030000' }],
    'the buyer sees the scheduled increase',
  );
  t.equal((await call('GET', `/purchases/${p1.body.data.id}/upcoming-rate-changes`, other.session)).status, 404);

  // A second scheduled change, withdrawn by the seller before its time: the current rate stays.
  const withdrawn = await call('POST', `/routes/${b.id}/rates`, seller2.session, {
    format: 'json',
    rows: [
      { prefix: '44', destination: 'UK', rate: '0.009', increment: '6/6' },
      { prefix: '4477', destination: 'UK Mobile 77', rate: '0.015' },
    ],
  });
  t.match(withdrawn.body.data, { increases: 1, scheduledChanges: 1 });
  const bChanges = await call('GET', `/routes/${b.id}/rate-changes`, seller2.session);
  t.equal(bChanges.body.data.length, 1);
  t.equal(
    (await call('POST', `/routes/${b.id}/rate-changes/${bChanges.body.data[0].id}/cancel`, seller.session)).status,
    404,
    'only the seller',
  );
  t.equal(
    (await call('POST', `/routes/${b.id}/rate-changes/${bChanges.body.data[0].id}/cancel`, seller2.session)).status,
    200,
  );
  t.same((await call('GET', `/routes/${b.id}/rate-changes`, seller2.session)).body.data, []);

  const priceOf = async (number: string) =>
    (
      await h.services.routing.candidatesFor({ accountId: buyer.accountId, number, type: 'voice', routeId: a.id })
    )[0]!.price.toFixed(6);
  t.equal(await priceOf('447911111111'), '0.007000', 'decrease in force at once');
  t.equal(await priceOf('441111111111'), '0.012000', 'increase not yet in force');
  clock.advance(2 * DAY - 1000);
  t.equal(await h.services.routes.decks.refreshDue(), 0, 'nothing due before the time');
  clock.advance(1000);
  t.equal(await h.services.routes.decks.refreshDue(), 1);
  t.equal(await priceOf('441111111111'), '0.032000', 'increase in force at its time');
  t.equal(
    h.services.routes.decks.registry.lookup(b.id, '441111111111')?.rate,
    '0.008000',
    'the withdrawn increase never applies',
  );
  t.equal(await h.services.routes.decks.refreshDue(), 0);

  t.ok(reloaded.includes(a.id), 'the peer followed every upload');
});

t.test('SMS routes: per-network price capped by the country price', async (t) => {
  const h = await buildTestApp(t);
  const seller = await h.signUp();
  const buyer = await h.signUp();
  const inject = (method: string, url: string, token: string, payload?: object) =>
    h.app.inject({
      method: method as 'GET',
      url: `/api/v1${url}`,
      headers: bearer(token),
      ...(payload ? { payload } : {}),
    });
  const r = await inject('POST', '/routes', seller.session, {
    type: 'sms',
    name: 'UK SMS',
    smsDelivery: { kind: 'smpp', host: '192.0.2.20', port: 2775, systemId: 'sys', password: 'smpp-secret' },
  });
  t.equal(r.statusCode, 201, r.body);
  const id = r.json().data.id as string;
  t.notOk(r.body.includes('smpp-secret'));
  const over = await inject('POST', `/routes/${id}/rates`, seller.session, {
    format: 'csv',
    csv: 'prefix,destination,rate,mcc_mnc\n44,UK,0.030\n44,UK Voda,0.040,234-15\n',
  });
  t.equal(over.statusCode, 400);
  t.match(over.json().error.details, [{ path: 'line 3', message: /above country price/ }]);
  const ok = await inject('POST', `/routes/${id}/rates`, seller.session, {
    format: 'csv',
    csv: 'prefix,destination,rate,mcc_mnc\n44,UK,0.030\n44,UK Voda,0.020,234-15\n',
  });
  t.equal(ok.statusCode, 200, ok.body);
  t.equal((await inject('POST', '/purchases', buyer.session, { routeId: id })).statusCode, 201);
  const price = async (mccMnc: string | null) =>
    (
      await h.services.routing.candidatesFor({
        accountId: buyer.accountId,
        number: '447700900123',
        type: 'sms',
        mccMnc,
      })
    )[0]!;
  const voda = await price('234-15');
  t.equal(voda.price.toFixed(6), '0.020500', 'network price plus 0.0005 fee');
  t.equal(voda.rateBasis, 'network');
  t.equal(voda.smsDelivery?.['password'], 'smpp-secret', 'the SMS path gets the bind credentials');
  t.equal((await price(null)).price.toFixed(6), '0.030500', 'unknown network pays the country price');
  t.equal((await price('234-10')).rateBasis, 'country');
  const rates = await inject('GET', `/routes/${id}/rates`, buyer.session);
  t.same(
    rates.json().data.rows.map((x: { mccMnc: string | null; rate: string }) => [x.mccMnc, x.rate]),
    [
      [null, '0.030000'],
      ['234-15', '0.020000'],
    ],
  );
});
