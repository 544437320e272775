import t from 'tap';
import { createWorld, eventually, expectExit, uac, uacScenario, uasAnswer } from '../../sip-trunks/world.js';

t.test('listing lifecycle: pause, resume, visibility, clone, delete, SMS delivery, endpoints, sales', async (t) => {
  const w = await createWorld(t);
  const number = '442600000001';
  const uas = await uasAnswer(t, number);
  const r = await w.route({ port: uas.port, prefix: '4426', rate: '0.013700' });
  const sub = await w.sub({ markupPct: '0', fund: '5.000000' });
  const run = await uac(
    t,
    w.sipPort,
    uacScenario('uac-tail-answer.xml', { HOLD_MS: '300' }),
    number,
    sub.sipUsername,
    sub.sipPassword,
  );
  await expectExit(t, run, 'a sold call');
  await expectExit(t, uas, 'answered');
  await eventually(async () => (await w.d.sql`select 1 from cdrs where account_id = ${sub.id}`).length > 0);

  const sales = await w.api('GET', '/routes/my/sales?days=7', w.seller.token);
  t.equal(sales.status, 200, sales.text);
  t.match(sales.body.data, {
    days: 7,
    revenue: '0.001370',
    routes: [
      {
        routeId: r.routeId,
        activeBuyers: 1,
        newPurchases: 1,
        calls: 1,
        answeredCalls: 1,
        billedMinutes: 0.1,
        revenue: '0.001370',
      },
    ],
  });
  t.notOk(JSON.stringify(sales.body).includes(w.operator.accountId), 'buyers never named');

  const paused = await w.api('POST', `/routes/${r.routeId}/pause`, w.seller.token);
  t.equal(paused.body.data.status, 'paused');
  t.equal(
    (await w.api('GET', `/purchases/route-for?number=${number}`, w.operator.token)).status,
    404,
    'no new traffic',
  );
  t.equal((await w.api('GET', `/routes/price-number?number=${number}`, w.operator.token)).body.data.total, 0);
  t.equal((await w.api('POST', `/routes/${r.routeId}/pause`, w.operator.token)).status, 404, 'sellers only');
  const resumed = await w.api('POST', `/routes/${r.routeId}/resume`, w.seller.token);
  t.equal(resumed.body.data.status, 'active');
  t.equal((await w.api('GET', `/purchases/route-for?number=${number}`, w.operator.token)).status, 200);

  const priv = await w.api('PUT', `/routes/${r.routeId}/visibility`, w.seller.token, { visibility: 'private' });
  t.equal(priv.body.data.visibility, 'private');
  t.equal(
    (await w.api('GET', `/purchases/route-for?number=${number}`, w.operator.token)).status,
    200,
    'buyers keep it',
  );
  const stranger = await w.signUp();
  t.equal((await w.api('GET', `/routes/${r.routeId}`, stranger.token)).status, 404);

  t.equal((await w.api('DELETE', `/routes/${r.routeId}`, w.seller.token)).status, 409, 'sold: not deleted');
  const copy = await w.api('POST', `/routes/${r.routeId}/clone`, w.seller.token, { name: 'UK copy' });
  t.equal(copy.status, 201, copy.text);
  t.match(copy.body.data, {
    name: 'UK copy',
    visibility: 'private',
    rateCount: 1,
    lowestRate: '0.013700',
    billingIncrement: '6/6',
  });
  t.equal(copy.body.data.endpoints.length, 1);
  const copyId = copy.body.data.id as string;
  const rates = await w.api('GET', `/routes/${copyId}/rates`, w.seller.token);
  t.same(
    rates.body.data.rows.map((x: { prefix: string; rate: string }) => [x.prefix, x.rate]),
    [['4426', '0.013700']],
  );
  const second = await w.api('POST', '/routes/my-endpoints', w.seller.token, {
    routeId: copyId,
    host: '192.0.2.40',
    port: 5060,
  });
  t.equal(second.status, 201, second.text);
  const firstEndpoint = copy.body.data.endpoints[0].id as string;
  t.equal((await w.api('DELETE', `/routes/my-endpoints/${firstEndpoint}`, w.seller.token)).status, 200);
  t.equal(
    (await w.api('DELETE', `/routes/my-endpoints/${second.body.data.id}`, w.seller.token)).status,
    400,
    'the last stays',
  );
  const gone = await w.api('DELETE', `/routes/${copyId}`, w.seller.token);
  t.equal(gone.status, 200, gone.text);
  t.equal((await w.api('GET', `/routes/${copyId}`, w.seller.token)).status, 404);

  const sms = await w.api('POST', '/routes', w.seller.token, {
    type: 'sms',
    name: 'UK SMS',
    smsDelivery: { kind: 'http', url: 'https://192.0.2.50/submit', signingSecret: 'a-long-shared-secret-1234' },
  });
  t.equal(sms.status, 201, sms.text);
  const bad = await w.api('PUT', `/routes/${sms.body.data.id}/sms-delivery`, w.seller.token, {
    kind: 'smpp',
    host: 'not a host',
    port: 2775,
    systemId: 'x',
    password: 'y',
  });
  t.equal(bad.status, 400);
  const smpp = await w.api('PUT', `/routes/${sms.body.data.id}/sms-delivery`, w.seller.token, {
    kind: 'smpp',
    host: '192.0.2.51',
    port: 2775,
    systemId: 'sys',
    password: 'pw',
  });
  t.equal(smpp.status, 200, smpp.text);
  t.equal(smpp.body.data.smsDeliveryKind, 'smpp');
  t.notOk(smpp.text.includes('"pw"'), 'credentials write-only');
  t.equal(
    (
      await w.api('PUT', `/routes/${r.routeId}/sms-delivery`, w.seller.token, {
        kind: 'smpp',
        host: '192.0.2.51',
        port: 2775,
        systemId: 's',
        password: 'p',
      })
    ).status,
    400,
    'voice route',
  );
});
