import t from 'tap';
import { fill, fixture, sippMediaPort, sipp } from '../../telephony/sip/sipp.js';
import { createWorld, eventually, expectExit, uac, uacScenario } from './world.js';

t.test("a route in proxy media mode relays the call's audio through the daemon", async (t) => {
  const w = await createWorld(t);

  await t.test('mediaMode is part of the route: shown, defaulted, and refused on SMS routes', async (t) => {
    const created = await w.api('POST', '/routes', w.seller.token, {
      type: 'voice',
      name: 'defaults',
      country: 'GB',
      endpoints: [{ host: '127.0.0.1', port: 5099, transport: 'udp' }],
    });
    t.equal(created.status, 201);
    t.equal(created.body.data.mediaMode, 'direct', 'direct unless asked');
    const sms = await w.api('POST', '/routes', w.seller.token, {
      type: 'sms',
      name: 'sms',
      country: 'GB',
      mediaMode: 'proxy',
      smsDelivery: { kind: 'smpp', host: '127.0.0.1', port: 2775, systemId: 'x', password: 'y' },
    });
    t.equal(sms.status, 400);
    t.equal(sms.body.error.code, 'VALIDATION_ERROR');
    t.match(sms.body.error.details, [{ path: '/mediaMode' }]);
    const bad = await w.api('POST', '/routes', w.seller.token, {
      type: 'voice',
      name: 'bad',
      country: 'GB',
      mediaMode: 'anchor',
      endpoints: [{ host: '127.0.0.1', port: 5099, transport: 'udp' }],
    });
    t.equal(bad.status, 400);
    t.equal(bad.body.error.code, 'VALIDATION_ERROR');
  });

  await t.test(
    "the supplier is offered the daemon's relay port, echoes audio, and the call bills as ever",
    async (t) => {
      const number = '441200000001';
      // The default RTP range is 10000–20000; the caller's sipp offers its own port 6000.
      const scenario = fill(fixture('uas-answer.xml'), { EXPECT_USER: number, BEFORE_RING: '' }).replace(
        'regexp="m=audio"',
        'regexp="m=audio 1[0-9]{4} RTP"',
      );
      const uas = await sipp(t, scenario, ['-rtp_echo', '-mp', String(await sippMediaPort())]);
      const r = await w.route({ port: uas.port, prefix: '4412', rate: '0.013700', mediaMode: 'proxy' });
      const shown = await w.api('GET', `/routes/${r.routeId}`, w.seller.token);
      t.equal(shown.body.data.mediaMode, 'proxy');
      const sub = await w.sub({ fund: '5.000000' });
      const run = await uac(
        t,
        w.sipPort,
        uacScenario('uac-tail-answer.xml', { HOLD_MS: '500' }),
        number,
        sub.sipUsername,
        sub.sipPassword,
      );
      await expectExit(t, run, 'caller completed the call');
      await expectExit(t, uas, 'supplier got a relay port in the offer, answered and got the BYE');
      const call = await eventually(async () => {
        const [c] = await w.d.sql<{ status: string; hangupCause: string; cost: string }[]>`
        select status, hangup_cause, cost::text from calls where account_id = ${sub.id} and ended_at is not null`;
        return c;
      });
      t.equal(call.status, 'completed');
      t.equal(call.hangupCause, 'caller-bye');
      t.equal(call.cost, '0.001570', '6 s at the buyer price, as on a direct route');

      // The seller switches the route to direct media: the next call's offer is the caller's own.
      const patched = await w.api('PATCH', `/routes/${r.routeId}`, w.seller.token, {
        mediaMode: 'direct',
        capacity: 20,
        name: 'renamed',
      });
      t.equal(patched.status, 200, patched.text);
      t.match(patched.body.data, { mediaMode: 'direct', capacity: 20, name: 'renamed' });
      const direct = fill(fixture('uas-answer.xml'), { EXPECT_USER: number, BEFORE_RING: '' }).replace(
        'regexp="m=audio"',
        'regexp="m=audio [0-9]{4} RTP"',
      );
      const uas2 = await sipp(t, direct, []);
      await w.d.sql`update route_endpoints set port = ${uas2.port} where route_id = ${r.routeId}`;
      // The endpoint change arrives by NOTIFY (migration 041): the next call may not see it before.
      await eventually(
        async () => (await w.d.modules.services.routingCache.endpointsFor([r.routeId]))[0]?.port === uas2.port,
      );
      const run2 = await uac(
        t,
        w.sipPort,
        uacScenario('uac-tail-answer.xml', { HOLD_MS: '200' }),
        number,
        sub.sipUsername,
        sub.sipPassword,
      );
      await expectExit(t, run2, 'caller completed the second call');
      await expectExit(t, uas2, "supplier got the caller's own media port in the offer");

      // Each leg's CDR says how its audio flowed, and the list filters on it.
      await eventually(async () => (await w.d.sql`select 1 from cdrs where route_id = ${r.routeId}`).length === 2);
      const proxied = await w.api('GET', '/billing/cdrs?mediaMode=proxy', w.operator.token);
      const direct2 = await w.api('GET', '/billing/cdrs?mediaMode=direct', w.operator.token);
      t.equal(proxied.status, 200, proxied.text);
      t.same(
        proxied.body.data
          .filter((c: { routeId: string }) => c.routeId === r.routeId)
          .map((c: { mediaMode: string }) => c.mediaMode),
        ['proxy'],
      );
      t.same(
        direct2.body.data
          .filter((c: { routeId: string }) => c.routeId === r.routeId)
          .map((c: { mediaMode: string }) => c.mediaMode),
        ['direct'],
      );
      t.equal((await w.api('GET', '/billing/cdrs?mediaMode=anchor', w.operator.token)).status, 400);
    },
  );

  await t.test('PATCH /routes/{id}: own routes only, something to change, media only on voice', async (t) => {
    const voice = await w.api('POST', '/routes', w.seller.token, {
      type: 'voice',
      name: 'v',
      country: 'GB',
      endpoints: [{ host: '127.0.0.1', port: 5099, transport: 'udp' }],
    });
    const id = voice.body.data.id as string;
    const other = await w.signUp();
    t.equal(
      (await w.api('PATCH', `/routes/${id}`, other.token, { name: 'mine now' })).status,
      404,
      "another seller's route is not found",
    );
    const empty = await w.api('PATCH', `/routes/${id}`, w.seller.token, {});
    t.equal(empty.status, 400);
    t.equal(empty.body.error.code, 'VALIDATION_ERROR');
    const unknown = await w.api('PATCH', `/routes/${id}`, w.seller.token, { billingIncrement: '1/1' });
    t.equal(unknown.status, 400, 'prices and increment do not change here');
    const cleared = await w.api('PATCH', `/routes/${id}`, w.seller.token, { capacity: 5, expectedAsr: 45.5 });
    t.match(cleared.body.data, { capacity: 5, expectedAsr: 45.5 });
    const none = await w.api('PATCH', `/routes/${id}`, w.seller.token, { capacity: null });
    t.equal(none.body.data.capacity, null, 'null lifts the limit');
    const sms = await w.api('POST', '/routes', w.seller.token, {
      type: 'sms',
      name: 's',
      country: 'GB',
      smsDelivery: { kind: 'smpp', host: '127.0.0.1', port: 2775, systemId: 'x', password: 'y' },
    });
    const bad = await w.api('PATCH', `/routes/${sms.body.data.id}`, w.seller.token, { mediaMode: 'proxy' });
    t.equal(bad.status, 400);
    t.match(bad.body.error.details, [{ path: '/mediaMode' }]);
  });
});
