import t from 'tap';
import { freePort, optionsUas, sipp } from '../../../telephony/sip/sipp.js';
import { createWorld, expectExit } from '../../sip-trunks/world.js';

t.test('bulk SIP endpoint: the endpoint is probed with OPTIONS once before writing', async (t) => {
  const w = await createWorld(t);
  const own = async (name: string): Promise<string> => {
    const r = await w.api('POST', '/routes', w.seller.token, {
      type: 'voice',
      name,
      country: 'GB',
      endpoints: [{ host: '192.0.2.1', port: 5060 }],
    });
    t.equal(r.status, 201, r.text);
    return r.body.data.id as string;
  };
  const v1 = await own('bulk one');
  const v2 = await own('bulk two');
  const targets = async (id: string) =>
    ((await w.api('GET', `/routes/${id}`, w.seller.token)).body.data.endpoints as { host: string; port: number }[]).map(
      (e) => `${e.host}:${e.port}`,
    );
  const bulk = (port: number, extra: Record<string, unknown> = {}) =>
    w.api('POST', '/routes/my/bulk-sip-endpoint', w.seller.token, {
      routeIds: [v1, v2],
      endpoint: { host: '127.0.0.1', port, transport: 'udp' },
      ...extra,
    });

  const healthy = await sipp(t, optionsUas(200), [], { calls: 2 });
  const dry = await bulk(healthy.port, { dryRun: true });
  t.equal(dry.status, 200, dry.text);
  t.match(dry.body.data, {
    dryRun: true,
    check: { ok: true, method: 'options', status: 200, problems: [] },
    matched: 2,
    updated: 0,
  });
  t.type(dry.body.data.check.rttMs, 'number');
  t.same(await targets(v1), ['192.0.2.1:5060'], 'a dry run writes nothing');
  const applied = await bulk(healthy.port);
  t.equal(applied.status, 200, applied.text);
  t.match(applied.body.data, {
    dryRun: false,
    check: { ok: true, method: 'options', status: 200 },
    matched: 2,
    updated: 2,
  });
  await expectExit(t, healthy, 'one probe per bulk request answered');
  t.same(await targets(v1), [`127.0.0.1:${healthy.port}`]);
  t.same(await targets(v2), [`127.0.0.1:${healthy.port}`]);

  const silent = await freePort();
  const deadDry = await bulk(silent, { dryRun: true });
  t.equal(deadDry.status, 200, 'a dry run reports a failed probe');
  t.match(deadDry.body.data, {
    check: { ok: false, method: 'options', status: null, problems: [{ path: '/endpoint', message: /did not answer/ }] },
    updated: 0,
  });
  const dead = await bulk(silent);
  t.equal(dead.status, 400, dead.text);
  t.match(dead.body.error, { code: 'VALIDATION_ERROR', message: /did not answer SIP OPTIONS; no route was changed/ });
  t.same(await targets(v1), [`127.0.0.1:${healthy.port}`], 'a failed probe writes nothing');

  const sick = await sipp(t, optionsUas(503), [], { calls: 1 });
  const refused = await bulk(sick.port, { mode: 'add' });
  t.equal(refused.status, 400, refused.text);
  t.match(refused.body.error.message, /answered SIP OPTIONS with 503/);
  await expectExit(t, sick, 'the sick endpoint was probed once');
  t.same(await targets(v2), [`127.0.0.1:${healthy.port}`]);

  // TLS endpoints are probed too: nothing listens here, so the dry run reports the failed probe.
  const tls = await w.api('POST', '/routes/my/bulk-sip-endpoint', w.seller.token, {
    routeIds: [v1],
    endpoint: { host: '127.0.0.1', port: silent, transport: 'tls' },
    dryRun: true,
  });
  t.match(tls.body.data, { check: { ok: false, method: 'options' } }, 'a TLS endpoint is probed over TLS');
});
