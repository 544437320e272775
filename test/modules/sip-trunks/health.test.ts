import t from 'tap';
import { freePort, optionsUas, sipp } from '../../telephony/sip/sipp.js';
import { createWorld, eventually, expectExit, uac, uacScenario, uasAnswer } from './world.js';

t.test('OPTIONS health: a failing endpoint is skipped; POST /routes/{id}/test probes', async (t) => {
  const w = await createWorld(t);
  const calls = w.d.modules.services.calls;
  const number = '446000000001';

  const sick = await sipp(t, optionsUas(503), [], { calls: 3 });
  const cheap = await w.route({ port: sick.port, prefix: '4460', rate: '0.005000' });
  for (let i = 0; i < 3; i++) await calls.health.checkAll();
  await expectExit(t, sick, 'the sick endpoint answered three probes');
  t.equal(
    calls.health.isDown({ host: '127.0.0.1', port: sick.port, transport: 'udp' }),
    true,
    'three 503s mark it down',
  );

  const sub0 = await w.sub({ fund: '1.000000' });
  const refusedBefore = calls.refusals()['endpoints-down'] ?? 0;
  const none = await uac(
    t,
    w.sipPort,
    uacScenario('uac-tail-final.xml', { FINAL: '503' }),
    number,
    sub0.sipUsername,
    sub0.sipPassword,
  );
  await expectExit(t, none, 'every endpoint down: 503 to the caller');
  t.equal(calls.refusals()['endpoints-down'], refusedBefore + 1);
  t.equal((await w.d.modules.services.ledger.balanceOf(sub0.id)).held, '0.000000', 'nothing held');

  // Listed after the checks, so the probes never reach this scenario (it expects an INVITE).
  const good = await uasAnswer(t, number);
  const dear = await w.route({ port: good.port, prefix: '4460', rate: '0.013700' });
  const sub = await w.sub({ markupPct: '0', fund: '2.000000' });
  const run = await uac(
    t,
    w.sipPort,
    uacScenario('uac-tail-answer.xml', { HOLD_MS: '200' }),
    number,
    sub.sipUsername,
    sub.sipPassword,
  );
  await expectExit(t, run, 'call completed');
  await expectExit(t, good, 'the healthy route answered');
  const legs = await eventually(async () => {
    const rows = await w.d.sql<{ routeId: string }[]>`select route_id from cdrs where account_id = ${sub.id}`;
    return rows.length ? rows : null;
  });
  t.same(
    legs.map((l) => l.routeId),
    [dear.routeId],
    'the cheaper route with a down endpoint was never tried',
  );
  t.not(legs[0]?.routeId, cheap.routeId);

  // Route test: own route and a buyer's view of a public one.
  const healthy = await sipp(t, optionsUas(200), [], { calls: 2 });
  const probeMe = await w.route({ port: healthy.port, prefix: '4461', rate: '0.010000' });
  const own = await w.api('POST', `/routes/${probeMe.routeId}/test`, w.seller.token);
  t.equal(own.status, 200, own.text);
  t.match(own.body.data, { ok: true, status: 200 });
  t.type(own.body.data.rttMs, 'number');
  const asBuyer = await w.api('POST', `/routes/${probeMe.routeId}/test`, w.operator.token);
  t.match(asBuyer.body.data, { ok: true, status: 200 });
  await expectExit(t, healthy, 'two probes answered');

  const silentPort = await freePort();
  const dead = await w.route({ port: silentPort, prefix: '4462', rate: '0.010000' });
  const r = await w.api('POST', `/routes/${dead.routeId}/test`, w.seller.token);
  t.match(r.body.data, { ok: false, status: null }, 'nothing answers: not ok, no status');

  const priv = await w.api('POST', '/routes', w.seller.token, {
    type: 'voice',
    name: 'private',
    visibility: 'private',
    endpoints: [{ host: '127.0.0.1', port: silentPort, transport: 'udp' }],
  });
  t.equal(priv.status, 201, priv.text);
  t.equal(
    (await w.api('POST', `/routes/${priv.body.data.id}/test`, w.operator.token)).status,
    404,
    'a private route of someone else is not found',
  );
});

t.test("[sip] options_* settings drive the daemon's health checks", async (t) => {
  const w = await createWorld(t, {
    sip: {
      host: '127.0.0.1',
      port: 0,
      options_interval_seconds: 3600,
      options_failure_threshold: 1,
      options_recovery_threshold: 1,
      options_timeout_ms: 300,
    },
  });
  const calls = w.d.modules.services.calls;
  const silent = await freePort();
  await w.route({ port: silent, prefix: '4463', rate: '0.010000' });
  const target = { host: '127.0.0.1', port: silent, transport: 'udp' };
  t.equal(await calls.health.checkAll(), 1);
  t.equal(calls.health.isDown(target), true, 'one unanswered probe (300 ms timeout) is enough at threshold 1');
  // The endpoint comes to life on the same port: one good probe brings it back at threshold 1.
  const back = await sipp(t, optionsUas(200), [], { calls: 1, port: silent });
  t.equal(back.port, silent, "sipp took the silent endpoint's port");
  await calls.health.checkAll();
  await expectExit(t, back, 'the endpoint answered one probe');
  t.equal(calls.health.isDown(target), false, 'back up after one success');
});
