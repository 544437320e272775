import t from 'tap';
import { connectPeer } from '../../messaging/smpp-peer.js';
import { freePort, optionsUas, sipp } from '../../telephony/sip/sipp.js';
import { createWorld, eventually, expectExit, uac, uacScenario, uasAnswer } from '../sip-trunks/world.js';

/**
 * Connections on a whole daemon: the connection points made by their own operations gathered in
 * one list with a real SMPP bind shown live, the connection settings, SIP OPTIONS reachability
 * tests against a sipp peer, a silent port, and targets the outbound guard refuses, kept and
 * listed; limits per connection point and disabling one, enforced on real sipp calls (live call
 * counts shown while a call is up) and on real Net::SMPP binds.
 */
t.test('connections: one list of connection points, settings, reachability', async (t) => {
  const w = await createWorld(t);
  const { operator } = w;
  let ip0 = '';

  await t.test('every connection point in one list, with live SMPP binds', async (t) => {
    const ip = await w.api('POST', '/sip/trunk-ips', operator.token, { ip: '192.0.2.44', label: 'main PBX' });
    t.equal(ip.status, 201, ip.text);
    ip0 = ip.body.data.id as string;
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

  await t.test('the reachability tests are kept and listed, newest first', async (t) => {
    const first = await w.api('GET', '/connections/tests?limit=2', operator.token);
    t.equal(first.status, 200, first.text);
    t.equal(first.body.hasMore, true);
    const rest = await w.api('GET', `/connections/tests?cursor=${first.body.nextCursor}`, operator.token);
    const all = [...first.body.data, ...rest.body.data];
    // The four probes that ran (answered, silent, 503, unresolved); the refused targets sent nothing and are not kept.
    t.same(
      all.map((x: { reachable: boolean; status: number | null; address: string | null }) => [
        x.reachable,
        x.status,
        x.address,
      ]),
      [
        [false, null, null],
        [false, 503, '127.0.0.1'],
        [false, null, '127.0.0.1'],
        [true, 200, '127.0.0.1'],
      ],
    );
    t.match(all[0], { host: 'no-such-host.invalid', transport: 'udp', port: 5060, createdAt: String });
    t.same(
      (await w.api('GET', '/connections/tests', w.seller.token)).body.data,
      [],
      "another account's are not listed",
    );
  });

  await t.test('SIP credentials: a concurrency limit, live calls, disabled and enabled again', async (t) => {
    const number = '442300000001';
    const uas = await uasAnswer(t, number);
    const route = await w.route({ port: uas.port, prefix: '4423', rate: '0.010000' });
    const creds = await w.api('POST', `/purchases/${route.purchaseId}/sip-credentials`, operator.token);
    t.equal(creds.status, 201, creds.text);
    const { sipUsername: user, sipPassword: pass } = creds.body.data;
    const patch = (body: unknown) => w.api('PATCH', `/connections/${route.purchaseId}`, operator.token, body);

    const limited = await patch({ maxConcurrentCalls: 1, maxCps: 50 });
    t.equal(limited.status, 200, limited.text);
    t.match(limited.body.data, {
      kind: 'sip_credentials',
      maxConcurrentCalls: 1,
      maxCps: 50,
      currentCalls: 0,
      disabled: false,
      status: 'active',
    });

    const first = await uac(t, w.sipPort, uacScenario('uac-tail-answer.xml', { HOLD_MS: '4000' }), number, user, pass);
    const live = await eventually(async () => {
      const r = await w.api('GET', `/connections/${route.purchaseId}`, operator.token);
      return r.body.data.currentCalls === 1 ? r : null;
    });
    t.equal(live.body.data.currentCalls, 1, 'the live call shows on the connection point');
    const listed = await w.api('GET', '/connections?kind=sip_credentials', operator.token);
    t.match(
      listed.body.data.find((c: { id: string }) => c.id === route.purchaseId),
      { currentCalls: 1 },
    );
    const before = w.d.modules.services.calls.refusals()['connection-calls'] ?? 0;
    const second = await uac(t, w.sipPort, uacScenario('uac-tail-final.xml', { FINAL: '503' }), number, user, pass);
    await expectExit(t, second, 'the second call through the credentials is refused with 503');
    t.equal(w.d.modules.services.calls.refusals()['connection-calls'], before + 1, 'counted as the connection limit');
    await expectExit(t, first, 'the first call completed');
    await expectExit(t, uas, 'the supplier answered the first call only');
    await eventually(async () => {
      const r = await w.api('GET', `/connections/${route.purchaseId}`, operator.token);
      return r.body.data.currentCalls === 0;
    });

    const off = await patch({ disabled: true });
    t.match(off.body.data, { disabled: true, status: 'disabled', disabledAt: String, maxConcurrentCalls: 1 });
    const refused = await uac(t, w.sipPort, uacScenario('uac-tail-final.xml', { FINAL: '403' }), number, user, pass);
    await expectExit(t, refused, 'a call through disabled credentials is refused with 403');
    const [n] = await w.d.sql<{ n: string }[]>`
      select count(*)::text as n from calls where account_id = ${operator.accountId} and to_number = ${number}`;
    t.equal(n?.n, '1', 'nothing was held or written for the refused calls');

    const on = await patch({ disabled: false, maxConcurrentCalls: null, maxCps: null });
    t.match(on.body.data, {
      disabled: false,
      disabledAt: null,
      status: 'active',
      maxConcurrentCalls: null,
      maxCps: null,
    });
    // Another destination of the account's routes: the credentials' own route's supplier took its one call.
    const other = '442400000001';
    const uas2 = await uasAnswer(t, other);
    await w.route({ port: uas2.port, prefix: '4424', rate: '0.010000' });
    const again = await uac(t, w.sipPort, uacScenario('uac-tail-answer.xml', { HOLD_MS: '500' }), other, user, pass);
    await expectExit(t, again, 'enabled again, the credentials call as before');
    await expectExit(t, uas2, 'the supplier answered');
  });

  await t.test('a whitelisted address disabled: its calls are refused with 403', async (t) => {
    const ip = await w.api('POST', '/sip/trunk-ips', operator.token, { ip: '127.0.0.1', label: 'lab' });
    t.equal(ip.status, 201, ip.text);
    const off = await w.api('PATCH', `/connections/${ip.body.data.id}`, operator.token, { disabled: true });
    t.match(off.body.data, { kind: 'sip_ip', identifier: '127.0.0.1', disabled: true, status: 'disabled' });
    const refused = await uac(t, w.sipPort, uacScenario('uac-tail-final.xml', { FINAL: '403' }, false), '442300000009');
    await expectExit(t, refused, 'a call from the disabled address is refused with 403, not challenged');
    t.equal((await w.api('DELETE', `/sip/trunk-ips/${ip.body.data.id}`, operator.token)).status, 200);
  });

  await t.test('SMPP: throughput, a disabled credential unbinds its sessions and refuses binds', async (t) => {
    const created = await w.api('POST', '/account/smpp-credentials', operator.token, { systemId: 'icx2' });
    t.equal(created.status, 201, created.text);
    const { id, password } = created.body.data;
    const peer = await connectPeer(w.d.ports['smpp']!);
    t.teardown(() => peer.close());
    t.equal((await peer.request('bind_transceiver', { system_id: 'icx2', password })).command_status, 0, 'bound');

    const slower = await w.api('PATCH', `/connections/${id}`, operator.token, { throughput: 5 });
    t.match(slower.body.data, { kind: 'smpp', throughput: 5, binds: [{ bindType: 'transceiver' }] });
    const wrong = await w.api('PATCH', `/connections/${id}`, operator.token, { maxConcurrentCalls: 3 });
    t.equal(wrong.status, 400, 'call limits are for SIP points');
    t.match(wrong.body.error, { code: 'VALIDATION_ERROR', details: [{ path: '/maxConcurrentCalls' }] });
    const sipWrong = await w.api('PATCH', `/connections/${ip0}`, operator.token, { throughput: 3 });
    t.equal(sipWrong.status, 400, 'throughput is for SMPP credentials');
    t.equal((await w.api('PATCH', `/connections/${id}`, w.seller.token, { disabled: true })).status, 404);

    const off = await w.api('PATCH', `/connections/${id}`, operator.token, { disabled: true });
    t.match(off.body.data, { disabled: true, status: 'disabled' });
    await peer.closed;
    t.pass('the bound session was unbound and closed');
    const after = await w.api('GET', `/connections/${id}`, operator.token);
    t.same(after.body.data.binds, [], 'no session is bound with it');

    const peer2 = await connectPeer(w.d.ports['smpp']!);
    t.teardown(() => peer2.close());
    const refused = await peer2.request('bind_transceiver', { system_id: 'icx2', password });
    t.equal(refused.command_status, 0x0d, 'a bind with disabled credentials gets ESME_RBINDFAIL');

    const on = await w.api('PATCH', `/connections/${id}`, operator.token, { disabled: false });
    t.match(on.body.data, { disabled: false, status: 'active', throughput: 5 });
    const peer3 = await connectPeer(w.d.ports['smpp']!);
    t.teardown(() => peer3.close());
    t.equal(
      (await peer3.request('bind_transceiver', { system_id: 'icx2', password })).command_status,
      0,
      'binds again',
    );
  });
});
