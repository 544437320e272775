import t from 'tap';
import { connectPeer } from '../../messaging/smpp-peer.js';
import { freePort, optionsUas, sipp } from '../../telephony/sip/sipp.js';
import { createWorld, eventually, expectExit } from '../sip-trunks/world.js';

/**
 * Connections on a whole daemon: the connection points made by their own operations gathered in
 * one list with a real SMPP bind shown live, the connection settings, and SIP OPTIONS reachability
 * tests against a sipp peer, a silent port, and targets the outbound guard refuses.
 */
t.test('connections: one list of connection points, settings, reachability', async (t) => {
  const w = await createWorld(t);
  const { operator } = w;

  await t.test('every connection point in one list, with live SMPP binds', async (t) => {
    const ip = await w.api('POST', '/sip/trunk-ips', operator.token, { ip: '192.0.2.44', label: 'main PBX' });
    t.equal(ip.status, 201, ip.text);
    const route = await w.route({ port: 5099, prefix: '4420', rate: '0.010000' });
    const creds = await w.api('POST', `/purchases/${route.purchaseId}/sip-credentials`, operator.token);
    t.equal(creds.status, 201, creds.text);
    const smpp = await w.api('POST', '/account/smpp-credentials', operator.token, { systemId: 'icx1', throughput: 20 });
    t.equal(smpp.status, 201, smpp.text);

    const peer = await connectPeer(w.d.ports['smpp']!);
    t.teardown(() => peer.close());
    const bound = await peer.request('bind_transceiver', { system_id: 'icx1', password: smpp.body.data.password });
    t.equal(bound.command_status, 0, 'bound');

    const all = await w.api('GET', '/connections', operator.token);
    t.equal(all.status, 200, all.text);
    const byKind = Object.fromEntries(all.body.data.map((c: { kind: string }) => [c.kind, c]));
    t.match(byKind, {
      sip_ip: { id: ip.body.data.id, identifier: '192.0.2.44', label: 'main PBX', status: 'approved' },
      sip_credentials: {
        id: route.purchaseId,
        identifier: creds.body.data.sipUsername,
        status: 'active',
        purchaseId: route.purchaseId,
      },
      smpp: {
        id: smpp.body.data.id,
        identifier: 'icx1',
        status: 'active',
        throughput: 20,
        allowedIps: [],
        binds: [{ bindType: 'transceiver', remoteIp: /127\.0\.0\.1/ }],
      },
    });
    t.notOk(all.text.includes(smpp.body.data.password), 'no secret is listed');
    t.notOk(all.text.includes(creds.body.data.sipPassword), 'no secret is listed');
    const onlySmpp = await w.api('GET', '/connections?kind=smpp', operator.token);
    t.same(
      onlySmpp.body.data.map((c: { kind: string }) => c.kind),
      ['smpp'],
    );
    t.same((await w.api('GET', '/connections', w.seller.token)).body.data, [], "another account's are not shown");

    await peer.request('unbind');
    const after = await eventually(async () => {
      const r = await w.api('GET', '/connections?kind=smpp', operator.token);
      return r.body.data[0].binds.length === 0 ? r : null;
    });
    t.same(after.body.data[0].binds, [], 'the bind is gone once unbound');
  });

  await t.test('settings: where to connect', async (t) => {
    const r = await w.api('GET', '/connections/settings', operator.token);
    t.equal(r.status, 200, r.text);
    t.match(r.body.data, {
      sip: {
        hosts: [w.d.config.sip.primary_host],
        realm: w.d.config.sip.primary_host,
        udpPort: w.d.config.sip.port,
        authentication: ['ip', 'digest'],
      },
      smpp: { port: w.d.config.smpp.port, version: '3.4' },
      media: { rtpPortMin: w.d.config.rtp.port_min, rtpPortMax: w.d.config.rtp.port_max },
    });
  });

  await t.test('reachability: a real OPTIONS, a silent port, refused targets', async (t) => {
    const test = (body: Record<string, unknown>) => w.api('POST', '/connections/test', operator.token, body);
    const pbx = await sipp(t, optionsUas(200), [], { calls: 1 });
    const up = await test({ host: '127.0.0.1', port: pbx.port });
    t.equal(up.status, 200, up.text);
    t.match(up.body.data, {
      host: '127.0.0.1',
      port: pbx.port,
      transport: 'udp',
      address: '127.0.0.1',
      reachable: true,
      status: 200,
    });
    t.type(up.body.data.rttMs, 'number');
    await expectExit(t, pbx, 'the PBX got one OPTIONS');

    const silent = await test({ host: '127.0.0.1', port: await freePort() });
    t.match(silent.body.data, { reachable: false, status: null });

    const sick = await sipp(t, optionsUas(503), [], { calls: 1 });
    t.match((await test({ host: '127.0.0.1', port: sick.port })).body.data, { reachable: false, status: 503 });
    await expectExit(t, sick, 'the sick PBX got one OPTIONS');

    const privateNet = await test({ host: '10.20.30.40' });
    t.equal(privateNet.status, 400, 'a private address is refused before anything is sent');
    t.match(privateNet.body.error, { code: 'VALIDATION_ERROR', details: [{ path: '/host' }] });
    const self = await test({ host: '127.0.0.1', port: w.sipPort });
    t.equal(self.status, 400, "the exchange's own SIP port is refused");
    const unknownName = await test({ host: 'no-such-host.invalid' });
    t.match(unknownName.body.data, { reachable: false, address: null });
  });
});
