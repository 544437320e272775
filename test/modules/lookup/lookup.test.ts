import t from 'tap';
import { bearer, buildTestApp } from '../../helpers/app.js';

/**
 * GET /lookup/{number} against real rate decks: three sellers' public voice routes that agree on the
 * operator, a per-network SMS route, and a buyer's own private route that only the buyer sees.
 * The platform fee is the default 0.002000 a minute and 0.000500 a message.
 */
const NUMBER = '+447900123456'; // a Vodafone UK mobile range (234-15)

const voiceRoute = (name: string, extra: Record<string, unknown> = {}) => ({
  type: 'voice',
  name,
  country: 'GB',
  billingIncrement: '60/60',
  endpoints: [{ host: '192.0.2.10', port: 5060, transport: 'udp', priority: 1 }],
  ...extra,
});

t.test('number lookup from offline data and the caller’s visible routes', async (t) => {
  const h = await buildTestApp(t);
  const call = async (url: string, token: string | null = null) => {
    const r = await h.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: token === null ? {} : bearer(token) });
    return { status: r.statusCode, body: r.json(), headers: r.headers };
  };
  const post = async (url: string, token: string, payload: unknown) => {
    const r = await h.app.inject({
      method: 'POST',
      url: `/api/v1${url}`,
      headers: bearer(token),
      payload: payload as object,
    });
    if (r.statusCode >= 300) throw new Error(`${url}: ${r.body}`);
    return r.json().data;
  };
  const list = async (token: string, body: Record<string, unknown>, csv: string) => {
    const route = await post('/routes', token, body);
    await post(`/routes/${route.id}/rates`, token, { format: 'csv', csv });
    return route.id as string;
  };

  const rates = ['0.050', '0.040', '0.045'];
  const voiceIds: string[] = [];
  for (const [i, rate] of rates.entries()) {
    const seller = await h.signUp();
    voiceIds.push(
      await list(
        seller.session,
        voiceRoute(`UK ${i}`),
        `prefix,destination,rate\n44,United Kingdom,0.100\n447,United Kingdom - Vodafone,${rate}\n`,
      ),
    );
  }
  const smsSeller = await h.signUp();
  const smsId = await list(
    smsSeller.session,
    {
      type: 'sms',
      name: 'UK SMS',
      smsDelivery: { kind: 'smpp', host: '192.0.2.20', port: 2775, systemId: 'a', password: 'b' },
    },
    'prefix,destination,rate,mcc_mnc\n44,UK,0.030\n44,UK Voda,0.020,234-15\n',
  );
  const buyer = await h.signUp();
  const ownId = await list(
    buyer.session,
    voiceRoute('my own', { visibility: 'private' }),
    'prefix,destination,rate\n44,UK own,0.010\n',
  );

  t.test('a valid mobile number, anonymously: public routes only', async (t) => {
    const r = await call(`/lookup/${encodeURIComponent('+44 7900-123456')}`);
    t.equal(r.status, 200, JSON.stringify(r.body));
    const d = r.body.data;
    t.match(d, {
      input: '+44 7900-123456',
      valid: true,
      reason: null,
      e164: NUMBER,
      internationalFormat: '+44 7900 123456',
      country: { iso: 'GB', name: 'United Kingdom', dialCode: '+44', basis: 'dial_code' },
      numberType: 'mobile',
      numberTypeConfidence: 1,
      operator: 'Vodafone',
      network: { mccMnc: '234-15', operator: 'Vodafone', source: 'range' },
      matchedPrefix: '447',
      risk: { blocked: false, sanctioned: false, highRisk: false, reasons: [] },
      method: 'prefix',
    });
    t.same(d.pricing.voice, {
      rate: '0.042000',
      currency: 'USD',
      unit: 'min',
      billingIncrement: '60/60',
      destination: 'United Kingdom - Vodafone',
      routeId: voiceIds[1],
      routesServing: 3,
    });
    t.same(d.pricing.sms, {
      rate: '0.020500',
      currency: 'USD',
      unit: 'msg',
      billingIncrement: null,
      destination: 'UK Voda',
      routeId: smsId,
      routesServing: 1,
      network: { mccMnc: '234-15', operator: 'Vodafone', source: 'range', rateBasis: 'network' },
      countryRate: '0.030500',
    });
    t.ok(Date.parse(d.cachedAt) > 0);
    t.notOk(JSON.stringify(d).includes(smsSeller.accountId), 'no seller identity');
  });

  t.test('00 prefix is the same number; malformed input answers 200 with valid false', async (t) => {
    t.equal((await call('/lookup/00447900123456')).body.data.e164, NUMBER);
    for (const [input, reason] of [
      ['447900123456', /^not_international/],
      ['+44abc', /^invalid_characters/],
      ['+1234567890123456', /^too_long/],
      ['+999123456', /^unknown_country_code/],
    ] as const) {
      const r = await call(`/lookup/${encodeURIComponent(input)}`);
      t.equal(r.status, 200, input);
      t.match(r.body.data, { input, valid: false, reason, e164: null, pricing: { voice: null, sms: null } }, input);
    }
  });

  t.test('a signed-in caller also sees its own private route; scoped keys need routes:read', async (t) => {
    const d = (await call(`/lookup/${NUMBER}`, buyer.session)).body.data;
    t.match(d.pricing.voice, { routeId: ownId, rate: '0.012000', routesServing: 4 });
    t.equal((await call(`/lookup/${NUMBER}`)).body.data.pricing.voice.routeId, voiceIds[1], 'not shown to others');
    const narrow = (await h.services.keys.create(buyer.accountId, { mode: 'live', scopes: ['sms:send'] })).secret;
    const denied = await call(`/lookup/${NUMBER}`, narrow);
    t.equal(denied.status, 403);
    t.match(denied.body.error.message, /routes:read/);
    const reader = (await h.services.keys.create(buyer.accountId, { mode: 'live', scopes: ['routes:read'] })).secret;
    t.equal((await call(`/lookup/${NUMBER}`, reader)).status, 200);
  });

  t.test('risk: embargoed, premium-rate, satellite, short code', async (t) => {
    const cuba = (await call('/lookup/+5355551234')).body.data;
    t.match(cuba, { valid: true, risk: { blocked: true, sanctioned: true, highRisk: false, reasons: ['embargoed'] } });
    const premium = (await call('/lookup/+19005550123')).body.data;
    t.match(premium, { numberType: 'premium', risk: { highRisk: true, reasons: ['premium_rate'] } });
    const iridium = (await call('/lookup/+8816312345678')).body.data;
    t.match(iridium, {
      country: { iso: null, name: 'Iridium', dialCode: '+881' },
      risk: { blocked: false, highRisk: true, reasons: ['satellite'] },
    });
    const short = (await call('/lookup/+4412345')).body.data;
    t.match(short, { valid: false, reason: /^short_code/, risk: { highRisk: true, reasons: ['short_code'] } });
    const nanp = (await call('/lookup/+12025550123')).body.data;
    t.match(nanp, { valid: true, country: { iso: 'US' }, numberType: 'fixed', numberTypeConfidence: 0.5 });
  });

  t.test('answers are cached: a new rate shows only after the cache', async (t) => {
    const first = (await call('/lookup/+447900999999')).body.data;
    const seller = await h.signUp();
    await list(seller.session, voiceRoute('cheaper'), 'prefix,destination,rate\n44,UK,0.001\n');
    const second = (await call('/lookup/+447900999999')).body.data;
    t.equal(second.cachedAt, first.cachedAt);
    t.same(second.pricing, first.pricing, 'the cached answer');
    const fresh = (await call('/lookup/+447900999998')).body.data;
    t.equal(fresh.pricing.voice.rate, '0.003000', 'an uncached number sees the new route');
  });

  t.test('60 look-ups a minute per caller', async (t) => {
    const key = (await h.services.keys.create(buyer.accountId, { mode: 'live' })).secret;
    for (let i = 0; i < 60; i++)
      t.equal((await call(`/lookup/+4479001234${String(i).padStart(2, '0')}`, key)).status, 200);
    const over = await call('/lookup/+447900123499', key);
    t.equal(over.status, 429);
    t.equal(over.body.error.code, 'RATE_LIMITED');
    t.ok(Number(over.headers['retry-after']) >= 1);
  });
});
