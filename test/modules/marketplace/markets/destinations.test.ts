import t from 'tap';
import { bearer, buildTestApp } from '../../../helpers/app.js';
import { createManualClock } from '../../../../src/platform/clock.js';

t.test('destinations with live public routes, cached for 10 minutes', async (t) => {
  const clock = createManualClock(new Date('2026-11-22T00:00:00Z'));
  const h = await buildTestApp(t, { clock });
  const seller = await h.signUp();
  const list = async (type: string, name: string, country: string, csv: string, visibility = 'public') => {
    const body =
      type === 'voice'
        ? { type, name, country, visibility, endpoints: [{ host: '192.0.2.1' }] }
        : { type, name, country, visibility, smsDelivery: { kind: 'http', url: 'https://sms.example.test/send' } };
    const r = await h.app.inject({
      method: 'POST',
      url: '/api/v1/routes',
      headers: bearer(seller.session),
      payload: body,
    });
    t.equal(r.statusCode, 201, r.body);
    const id = r.json().data.id as string;
    const up = await h.app.inject({
      method: 'POST',
      url: `/api/v1/routes/${id}/rates`,
      headers: bearer(seller.session),
      payload: { format: 'csv', csv },
    });
    t.equal(up.statusCode, 200, up.body);
  };
  await list(
    'voice',
    'UK A',
    'GB',
    'prefix,destination,rate\n44,United Kingdom,0.010\n447,United Kingdom Mobile,0.009\n',
  );
  await list('voice', 'UK B', 'GB', 'prefix,destination,rate\n44,United Kingdom,0.012\n');
  await list('voice', 'DE', 'DE', 'prefix,destination,rate\n49,Germany,0.004\n4930,Germany Berlin,0.006\n');
  await list('voice', 'FR private', 'FR', 'prefix,destination,rate\n33,France,0.001\n', 'private');
  await list('sms', 'UK SMS', 'GB', 'prefix,destination,rate\n44,United Kingdom,0.030\n');

  const res = await h.app.inject({ method: 'GET', url: '/api/v1/markets/destinations' });
  t.equal(res.statusCode, 200, res.body);
  t.equal(res.headers['cache-control'], 'public, max-age=600');
  const d = res.json().data;
  t.same(
    d.voice,
    [
      {
        slug: 'germany',
        country: 'Germany',
        countryCode: '49',
        routes: 1,
        lowest: '0.004000',
        lowestBand: 'countryWide',
        unit: 'min',
      },
      {
        slug: 'united-kingdom',
        country: 'United Kingdom',
        countryCode: '44',
        routes: 2,
        lowest: '0.009000',
        lowestBand: 'mobile',
        unit: 'min',
      },
    ],
    'private routes left out; list prices before the fee',
  );
  t.same(
    d.sms.map((x: { slug: string; lowest: string }) => [x.slug, x.lowest]),
    [['united-kingdom', '0.030000']],
  );
  const onlySms = (await h.app.inject({ method: 'GET', url: '/api/v1/markets/destinations?type=sms' })).json().data;
  t.equal(onlySms.voice, undefined);

  await list('voice', 'ES', 'ES', 'prefix,destination,rate\n34,Spain,0.005\n');
  const cached = (await h.app.inject({ method: 'GET', url: '/api/v1/markets/destinations?type=voice' })).json().data;
  t.equal(cached.voice.length, 2, 'served from the 10-minute cache');
  clock.advance(600_000);
  const fresh = (await h.app.inject({ method: 'GET', url: '/api/v1/markets/destinations?type=voice' })).json().data;
  t.same(
    fresh.voice.map((x: { slug: string }) => x.slug),
    ['germany', 'spain', 'united-kingdom'],
    'rebuilt after 10 minutes',
  );
});
