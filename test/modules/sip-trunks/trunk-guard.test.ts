import dgram from 'node:dgram';
import t from 'tap';
import { createWorld, eventually, loopingSupplier, rawInvite as invite } from './world.js';
import { rawUdpPeer } from '../../telephony/sip/helpers.js';

/**
 * SIP trunk addresses and loops against a whole daemon: which source addresses a customer may
 * whitelist, a second claim of a held address, and a route whose supplier sends the INVITE back.
 */

t.test(
  "trunk addresses: loopback, unspecified, multicast, private and metadata refused without the operator's networks",
  async (t) => {
    const w = await createWorld(t, { security: { private_supplier_networks: [], private_trunk_networks: [] } });
    for (const ip of [
      '127.0.0.1',
      '0.0.0.0',
      '::',
      '::1',
      '224.0.0.5',
      '10.1.2.3',
      '192.168.1.1',
      '169.254.169.254',
      '::ffff:127.0.0.1',
    ]) {
      const r = await w.api('POST', '/sip/trunk-ips', w.operator.token, { ip });
      t.equal(r.status, 400, `${ip}: ${r.text}`);
      t.match(r.body.error, { code: 'VALIDATION_ERROR', details: [{ path: 'ip' }] });
    }
    const ok = await w.api('POST', '/sip/trunk-ips', w.operator.token, { ip: '203.0.114.9' });
    t.equal(ok.status, 201, ok.text);
    t.equal(ok.body.data.status, 'approved');
    t.same(
      (await w.api('GET', '/sip/trunk-ips', w.operator.token)).body.data.map((r: { ip: string }) => r.ip),
      ['203.0.114.9'],
    );
  },
);

t.test(
  'an address another account holds is claimed pending: it bills nobody new until the operator decides',
  async (t) => {
    const w = await createWorld(t);
    const repo = w.d.modules.services.calls.repo;
    const first = await w.api('POST', '/sip/trunk-ips', w.operator.token, { ip: '127.0.0.1', label: 'office' });
    t.equal(first.body.data.status, 'approved');
    const attacker = await w.signUp();
    const second = await w.api('POST', '/sip/trunk-ips', attacker.token, { ip: '127.0.0.1' });
    t.equal(second.status, 201, second.text);
    t.equal(second.body.data.status, 'pending');
    t.equal(
      (await w.api('POST', '/sip/trunk-ips', attacker.token, { ip: '127.0.0.1' })).status,
      409,
      'the same claim twice',
    );
    t.equal(
      await repo.accountByIp('127.0.0.1'),
      w.operator.accountId,
      'calls from it still bill the account that held it',
    );

    // An unauthenticated INVITE from the address, over a real socket: attributed to the holder, so the
    // holder's (empty) routing answers, never the claimant's.
    const caller = await rawUdpPeer();
    t.teardown(() => caller.close());
    caller.send(invite(caller.port, w.sipPort, '441200000009', 'claim-1'), w.sipPort);
    await eventually(async () => caller.got.some((m) => /^SIP\/2\.0 [3-6]\d\d/.test(m)), 10_000);
    t.notOk(
      caller.got.some((m) => m.startsWith('SIP/2.0 401')),
      'no challenge: the whitelist matched the holder',
    );

    const pending = await repo.pendingTrunkIps();
    t.same(
      pending.map((p) => [p.ip, p.accountId, p.heldBy]),
      [['127.0.0.1', attacker.accountId, w.operator.accountId]],
    );
    t.ok(await repo.approveTrunkIp(w.d.sql, second.body.data.id));
    t.equal(await repo.accountByIp('127.0.0.1'), attacker.accountId, 'approved: the claimant now holds it');
    const held = (await w.api('GET', '/sip/trunk-ips', w.operator.token)).body.data;
    t.match(held, [{ ip: '127.0.0.1', status: 'pending' }], 'the former holder keeps a pending claim');
    t.ok(await repo.rejectTrunkIp(held[0].id));
    t.same((await w.api('GET', '/sip/trunk-ips', w.operator.token)).body.data, []);
    t.notOk(await repo.rejectTrunkIp(second.body.data.id), 'an approved claim is not rejected');
  },
);

t.test('a supplier that sends our INVITE back is answered 482 once, not looped', async (t) => {
  const w = await createWorld(t);
  const relay = await loopingSupplier(t, w.sipPort);
  await w.route({ port: relay.port, prefix: '4413', rate: '0.010000' });
  t.equal((await w.api('POST', '/sip/trunk-ips', w.operator.token, { ip: '127.0.0.1' })).status, 201);

  const caller = await rawUdpPeer();
  t.teardown(() => caller.close());
  caller.send(invite(caller.port, w.sipPort, '441300000001', 'loop-1'), w.sipPort);
  const final = await eventually(async () => caller.got.find((m) => /^SIP\/2\.0 [3-6]\d\d/.test(m)), 15_000);
  t.equal(relay.invites(), 1, 'the INVITE went round once');
  t.match(final, /^SIP\/2\.0 482/, 'the caller hears Loop Detected');
});

t.test('a SIP endpoint whose address became loopback after it was saved gets no INVITE', async (t) => {
  // Trunk callers on loopback are allowed here; supplier targets on loopback are not.
  const w = await createWorld(t, {
    security: { private_supplier_networks: [], private_trunk_networks: ['127.0.0.0/8'] },
  });
  const target = dgram.createSocket('udp4');
  let datagrams = 0;
  target.on('message', () => datagrams++);
  await new Promise<void>((r) => target.bind(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => target.close(() => r())));
  const created = await w.api('POST', '/routes', w.seller.token, {
    type: 'voice',
    name: 'moved',
    country: 'GB',
    billingIncrement: '6/6',
    endpoints: [{ host: '203.0.114.20', port: 5060 }],
  });
  t.equal(created.status, 201, created.text);
  const routeId = created.body.data.id as string;
  t.equal(
    (
      await w.api('POST', `/routes/${routeId}/rates`, w.seller.token, {
        format: 'csv',
        csv: 'prefix,destination,rate,increment\n4414,UK test,0.010000,6/6\n',
      })
    ).status,
    200,
  );
  t.equal((await w.api('POST', '/purchases', w.operator.token, { routeId })).status, 201);
  // As a changed DNS answer would: the stored target now points at a loopback service.
  await w.d
    .sql`update route_endpoints set host = '127.0.0.1', port = ${target.address().port} where route_id = ${routeId}`;
  w.d.modules.services.routingCache.routeChanged(routeId);
  t.equal((await w.api('POST', '/sip/trunk-ips', w.operator.token, { ip: '127.0.0.1' })).status, 201);
  const caller = await rawUdpPeer();
  t.teardown(() => caller.close());
  caller.send(invite(caller.port, w.sipPort, '441400000001', 'moved-1'), w.sipPort);
  const final = await eventually(async () => caller.got.find((m) => /^SIP\/2\.0 [3-6]\d\d/.test(m)), 15_000);
  t.match(final, /^SIP\/2\.0 [45]\d\d/, 'the call fails: the endpoint is left out of routing');
  t.equal(datagrams, 0, 'nothing was sent to the loopback address');
});
