import t from 'tap';
import { bearer, buildTestApp } from '../../../helpers/app.js';
import { createManualClock } from '../../../../src/platform/clock.js';

t.test('marketplace summary (personalised when signed in) and one destination by slug', async (t) => {
  const clock = createManualClock(new Date('2026-11-22T00:00:00Z'));
  const h = await buildTestApp(t, { clock });
  const seller = await h.signUp();
  const get = async (url: string, token?: string) => {
    const r = await h.app.inject({
      method: 'GET',
      url: `/api/v1${url}`,
      headers: token === undefined ? {} : bearer(token),
    });
    return { status: r.statusCode, body: r.json() as { data: any; error: any } }; // eslint-disable-line @typescript-eslint/no-explicit-any
  };

  const empty = await get('/markets/summary');
  t.equal(empty.status, 200, JSON.stringify(empty.body));
  t.match(empty.body.data, {
    routes: 0,
    hasRoutes: false,
    marketStatus: 'empty',
    measuredAsr: null,
    hasActivityData: false,
  });

  const list = async (name: string, country: string, csv: string, extra: Record<string, unknown> = {}) => {
    const r = await h.app.inject({
      method: 'POST',
      url: '/api/v1/routes',
      headers: bearer(seller.session),
      payload: { type: 'voice', name, country, endpoints: [{ host: '192.0.2.1' }], ...extra },
    });
    t.equal(r.statusCode, 201, r.body);
    const up = await h.app.inject({
      method: 'POST',
      url: `/api/v1/routes/${r.json().data.id}/rates`,
      headers: bearer(seller.session),
      payload: { format: 'csv', csv },
    });
    t.equal(up.statusCode, 200, up.body);
  };
  const uk = (mobile: string, voda: string, extra: Record<string, unknown>) =>
    list(
      'UK',
      'GB',
      `prefix,destination,rate,increment\n44,United Kingdom,0.010,60/60\n447,United Kingdom Mobile,${mobile},1/1\n4477,United Kingdom Mobile Vodafone,${voda},1/1\n`,
      extra,
    );
  await uk('0.020', '0.025', { expectedAsr: 40, expectedAcd: 100, capacity: 100, cliType: 'CLI' });
  await uk('0.018', '0.030', { expectedAsr: 60, capacity: 50, cliType: 'NCLI', billingIncrement: '6/6' });
  await list('UK 3', 'GB', 'prefix,destination,rate\n44,United Kingdom,0.009\n44800,United Kingdom Toll Free,0.050\n');
  for (let i = 0; i < 4; i++) await list(`UK ${i + 4}`, 'GB', 'prefix,destination,rate\n44,United Kingdom,0.040\n');
  await list('IE', 'IE', 'prefix,destination,rate\n353,Ireland,0.011\n');
  await list('DE', 'DE', 'prefix,destination,rate\n49,Germany,0.004\n');
  await list('FR private', 'FR', 'prefix,destination,rate\n33,France,0.001\n', { visibility: 'private' });

  const anon = (await get('/markets/summary')).body.data;
  t.match(anon, {
    routes: 9,
    voiceRoutes: 9,
    smsRoutes: 0,
    destinations: 3,
    hasRoutes: true,
    marketStatus: 'open',
    measuredAsrSample: 0,
  });
  t.same(
    [anon.capacity, anon.avgAsr, anon.avgAcd, anon.avgPrice],
    [null, null, null, null],
    'personalised fields hidden from anonymous callers',
  );
  t.same(anon.topMovers[0], { slug: 'united-kingdom', country: 'United Kingdom', countryCode: '44', newRoutes: 7 });
  const mine = (await get('/markets/summary', seller.session)).body.data;
  t.equal(mine.capacity, 150);
  t.equal(mine.avgAsr, 50);
  t.equal(mine.avgAcd, 100);
  // lowest per route: 0.010, 0.010, 0.009, 0.040 × 4, 0.011, 0.004 → 0.204 / 9
  t.equal(mine.avgPrice, '0.022667');

  const d = await get('/markets/destinations/united-kingdom');
  t.equal(d.status, 200, JSON.stringify(d.body));
  const uk1 = d.body.data;
  t.match(uk1, {
    slug: 'united-kingdom',
    type: 'voice',
    routes: 7,
    lowest: '0.009000',
    highest: '0.050000',
    routesWithStatedAsr: 2,
  });
  t.same(uk1.bands, [
    { key: 'countryWide', from: '0.009000', routes: 7 },
    { key: 'mobile', from: '0.018000', routes: 2 },
    { key: 'fixed', from: '0.050000', routes: 1 },
  ]);
  t.same(uk1.operators, [{ name: 'Vodafone', from: '0.025000', routes: 2 }], 'operators priced by two routes');
  t.same(uk1.cliTypes, ['CLI', 'NCLI']);
  t.same(uk1.increments, ['1/1', '60/60']);
  t.equal(uk1.topRoutes.length, 5, 'five cheapest');
  t.same(
    uk1.topRoutes.slice(0, 3).map((r: { from: string; mobileFrom: string | null }) => [r.from, r.mobileFrom]),
    [
      ['0.009000', null],
      ['0.010000', '0.020000'],
      ['0.010000', '0.018000'],
    ],
  );
  t.notOk(JSON.stringify(uk1.topRoutes).match(/[0-9a-f]{8}-[0-9a-f]{4}/), 'top routes are anonymous');
  t.same(
    uk1.related.map((r: { slug: string }) => r.slug),
    ['germany'],
    'same dial-code zone (4x)',
  );
  t.equal((await get('/markets/destinations/united-kingdom?type=sms')).status, 404, 'no live SMS route');
  t.equal((await get('/markets/destinations/france')).status, 404, 'private routes do not make a destination');
  t.equal((await get('/markets/destinations/atlantis')).status, 404);
});
