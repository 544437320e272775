import t from 'tap';
import { bearer, buildTestApp } from '../../../helpers/app.js';

t.test('seller tools: listing health, saved endpoints, bulk SIP endpoint and SMS delivery', async (t) => {
  const h = await buildTestApp(t);
  const seller = await h.signUp();
  const other = await h.signUp();
  const call = async (method: string, url: string, token: string, payload?: unknown) => {
    const r = await h.app.inject({
      method: method as 'GET',
      url: `/api/v1${url}`,
      headers: bearer(token),
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    return { status: r.statusCode, body: r.json() as { data: any; error: any } }; // eslint-disable-line @typescript-eslint/no-explicit-any
  };
  const voice = async (name: string, extra: Record<string, unknown> = {}) =>
    (
      await call('POST', '/routes', seller.session, {
        type: 'voice',
        name,
        country: 'GB',
        endpoints: [{ host: '192.0.2.1' }],
        ...extra,
      })
    ).body.data.id as string;
  const v1 = await voice('V1', { expectedAsr: 50 });
  const v2 = await voice('V2');
  const s1 = (
    await call('POST', '/routes', seller.session, {
      type: 'sms',
      name: 'S1',
      smsDelivery: { kind: 'http', url: 'https://a.example.test/send' },
    })
  ).body.data.id as string;
  t.equal(
    (
      await call('POST', `/routes/${v1}/rates`, seller.session, {
        format: 'csv',
        csv: 'prefix,destination,rate\n44,UK,0.01\n',
      })
    ).status,
    200,
  );
  const otherRoute = (
    await call('POST', '/routes', other.session, { type: 'voice', name: 'O', endpoints: [{ host: '192.0.2.9' }] })
  ).body.data.id as string;

  // --- listing health
  const health = await call('GET', '/routes/my/listing-health', seller.session);
  t.equal(health.status, 200, JSON.stringify(health.body));
  t.match(health.body.data, { routes: 3, healthy: 1, withIssues: 2 });
  const byId = Object.fromEntries(
    health.body.data.listings.map((l: { routeId: string; issues: string[] }) => [l.routeId, l.issues]),
  );
  t.same(byId[v1], []);
  t.same(byId[v2], ['no_rates', 'no_stated_asr']);
  t.same(byId[s1], ['no_rates', 'no_stated_asr']);

  // --- saved endpoints
  const added = await call('POST', '/routes/my-endpoints', seller.session, {
    routeId: v2,
    host: 'sip.carrier.example',
    port: 5080,
    password: 'pw-secret',
    label: 'backup',
  });
  t.equal(added.status, 201, JSON.stringify(added.body));
  t.match(added.body.data, {
    routeId: v2,
    host: 'sip.carrier.example',
    port: 5080,
    hasPassword: true,
    label: 'backup',
  });
  t.notOk(JSON.stringify(added.body).includes('pw-secret'), 'passwords are write-only');
  t.equal((await call('POST', '/routes/my-endpoints', seller.session, { routeId: v2, host: 'bad host!' })).status, 400);
  t.equal(
    (await call('POST', '/routes/my-endpoints', seller.session, { routeId: v2, host: '999.1.1.1' })).status,
    400,
    'not an address',
  );
  t.equal(
    (await call('POST', '/routes/my-endpoints', seller.session, { routeId: otherRoute, host: '192.0.2.3' })).status,
    404,
    'own routes only',
  );
  t.equal(
    (await call('POST', '/routes/my-endpoints', seller.session, { routeId: s1, host: '192.0.2.3' })).status,
    400,
    'voice routes only',
  );
  const id = added.body.data.id as string;
  t.equal(
    (await call('PATCH', `/routes/my-endpoints/${id}`, seller.session, { label: 'x'.repeat(61) })).status,
    400,
    'label at most 60',
  );
  const relabel = await call('PATCH', `/routes/my-endpoints/${id}`, seller.session, {
    label: 'y'.repeat(60),
    weight: 5,
  });
  t.match(relabel.body.data, { label: 'y'.repeat(60), weight: 5, hasPassword: true, host: 'sip.carrier.example' });
  const cleared = await call('PATCH', `/routes/my-endpoints/${id}`, seller.session, { label: '', password: '' });
  t.match(cleared.body.data, { label: null, hasPassword: false });
  t.equal((await call('PATCH', `/routes/my-endpoints/${id}`, other.session, { label: 'mine' })).status, 404);

  // --- bulk SIP endpoint
  const endpointsOf = async (routeId: string) =>
    (await call('GET', `/routes/${routeId}`, seller.session)).body.data.endpoints.map((e: { host: string }) => e.host);
  const badCheck = await call('POST', '/routes/my/bulk-sip-endpoint', seller.session, {
    endpoint: { host: '300.0.0.1' },
  });
  t.match(badCheck.body.data, { check: { ok: false, method: 'form' }, updated: 0 });
  t.same(await endpointsOf(v1), ['192.0.2.1'], 'a failed check writes nothing');
  const dry = await call('POST', '/routes/my/bulk-sip-endpoint', seller.session, {
    endpoint: { host: '198.51.100.7', port: 5060 },
    dryRun: true,
  });
  t.match(dry.body.data, { dryRun: true, check: { ok: true }, matched: 2, updated: 0 });
  t.same(await endpointsOf(v1), ['192.0.2.1'], 'dry run writes nothing');
  const bulk = await call('POST', '/routes/my/bulk-sip-endpoint', seller.session, {
    routeIds: [v1, v2, otherRoute, s1],
    endpoint: { host: '198.51.100.7', label: 'new' },
  });
  t.equal(bulk.status, 200, JSON.stringify(bulk.body));
  t.match(bulk.body.data, { mode: 'replace', matched: 2, updated: 2 });
  t.same(bulk.body.data.notFound.sort(), [otherRoute, s1].sort(), 'not own voice routes');
  t.same(await endpointsOf(v1), ['198.51.100.7']);
  t.same(await endpointsOf(v2), ['198.51.100.7'], 'replaced');
  await call('POST', '/routes/my/bulk-sip-endpoint', seller.session, {
    routeIds: [v1],
    endpoint: { host: 'sbc.example.net', priority: 2 },
    mode: 'add',
  });
  t.same(await endpointsOf(v1), ['198.51.100.7', 'sbc.example.net'], 'added beside');
  t.same(await endpointsOf(otherRoute).catch(() => null), null, "another seller's route untouched (and not visible)");
  t.equal(
    (
      await call('POST', '/routes/my/bulk-sip-endpoint', seller.session, {
        routeIds: Array.from({ length: 5001 }, () => v1),
        endpoint: { host: '192.0.2.1' },
      })
    ).status,
    400,
    'at most 5,000 routes',
  );

  // --- bulk SMS delivery
  const smsDry = await call('POST', '/routes/my/bulk-sms-delivery', seller.session, {
    smsDelivery: { kind: 'smpp', host: 'smsc.example.net', port: 2775, systemId: 'sys', password: 'p' },
    dryRun: true,
  });
  t.match(smsDry.body.data, { dryRun: true, check: { ok: true }, matched: 1, updated: 0 });
  const smsBad = await call('POST', '/routes/my/bulk-sms-delivery', seller.session, {
    smsDelivery: { kind: 'http', url: 'http://plain.example/send' },
  });
  t.match(smsBad.body.data, { check: { ok: false }, updated: 0 });
  const smsOk = await call('POST', '/routes/my/bulk-sms-delivery', seller.session, {
    smsDelivery: { kind: 'smpp', host: 'smsc.example.net', port: 2775, systemId: 'sys', password: 'smpp-secret' },
  });
  t.match(smsOk.body.data, { updated: 1, routeIds: [s1] });
  t.equal((await call('GET', `/routes/${s1}`, seller.session)).body.data.smsDeliveryKind, 'smpp');
  t.notOk(JSON.stringify(smsOk.body).includes('smpp-secret'));
});
