import t from 'tap';
import { randomUUID } from 'node:crypto';
import { SMPP_STATUS } from '../../../src/messaging/index.js';
import { ESME_X_NO_CREDIT } from '../../../src/modules/sms/smpp-in.js';
import { startTestDaemon } from '../../helpers/daemon.js';
import { connectPeer } from '../../messaging/smpp-peer.js';

/** The whole daemon: the SMS module's start() opens the customer SMPP listener on [smpp] port (0 here). */
t.test('the daemon listens for customer SMPP binds', async (t) => {
  const d = await startTestDaemon(t);
  const port = d.ports['smpp'];
  t.ok(port && port > 0, 'smpp port reported');
  const acc = await d.modules.services.accounts.createAccount({
    email: 'smpp-daemon@example.test',
    password: 'correct horse battery',
  });
  const creds = await d.modules.services.smppCredentials.issue(acc.id);
  const p = await connectPeer(port!);
  t.teardown(() => p.close());
  t.equal(
    (await p.request('submit_sm', { destination_addr: '12025550123', short_message: Buffer.from('x') })).command_status,
    SMPP_STATUS.ESME_RINVBNDSTS,
    'no submit before bind',
  );
  t.equal(
    (await p.request('bind_transceiver', { system_id: creds.systemId, password: creds.password })).command_status,
    0,
  );
  const r = await p.request('submit_sm', {
    source_addr: 'MyShop',
    destination_addr: '12025550123',
    short_message: Buffer.from('x'),
  });
  t.equal(r.command_status, SMPP_STATUS.ESME_RINVDSTADR, 'no SMS route bought: destination not allowed');
  t.equal((await p.request('unbind')).command_status, 0);
});

/**
 * A buyer whose daily spend cap is reached: the ledger refuses with the cap's own SQLSTATE, and
 * each plane recognises it by that code alone. SMPP answers the documented no-credit status and the
 * API the spec's 400 VALIDATION_ERROR "Insufficient balance". The send never reaches a supplier
 * (the route's URL has no listener).
 */
t.test('a daily spend cap reached: SMPP no credit, the API 400 Insufficient balance', async (t) => {
  const d = await startTestDaemon(t);
  const svc = d.modules.services;
  const signUp = async (email: string) => {
    const acc = await svc.accounts.createAccount({ email, password: 'correct horse battery' });
    return { id: acc.id, token: (await svc.accounts.login(email, 'correct horse battery', {})).accessToken };
  };
  const seller = await signUp('cap-seller@example.test');
  const buyer = await signUp('cap-buyer@example.test');
  const post = (path: string, token: string, body: unknown) =>
    d.https('POST', path, { token, body, headers: { 'x-idempotency-key': randomUUID() } });
  const route = await post('/routes', seller.token, {
    type: 'sms',
    name: 'Capped',
    smsDelivery: { kind: 'http', url: 'https://127.0.0.1:9/sms', signingSecret: 'cap-route-secret-0123456789' },
  });
  t.equal(route.status, 201, route.text);
  const routeId = route.json.data.id as string;
  t.equal(
    (
      await post(`/routes/${routeId}/rates`, seller.token, {
        format: 'csv',
        csv: 'prefix,destination,rate\n1,US,0.010\n',
      })
    ).status,
    200,
  );
  t.equal((await post('/purchases', buyer.token, { routeId })).status, 201);
  await svc.ledger.topup({ accountId: buyer.id, amount: '10.000000', source: 'card', postingKey: `fund-${buyer.id}` });
  await svc.ledger.setLimits(buyer.id, { creditLimit: '0.000000', dailySpendCap: '1.000000' });
  t.equal(
    (await svc.ledger.charge({ postingKey: 'cap-reach', accountId: buyer.id, amount: '1.000000' })).capReached,
    true,
  );
  await t.rejects(
    svc.ledger.hold({ postingKey: 'cap-probe', accountId: buyer.id, amount: '0.010000', ttlSeconds: 60 }),
    { code: 'SVC04', message: /^Insufficient balance: the daily spend cap/ },
    'the cap has its own SQLSTATE',
  );

  const creds = await svc.smppCredentials.issue(buyer.id);
  const p = await connectPeer(d.ports['smpp']!);
  t.teardown(() => p.close());
  t.equal(
    (await p.request('bind_transmitter', { system_id: creds.systemId, password: creds.password })).command_status,
    0,
  );
  const nc = await p.request('submit_sm', {
    source_addr: 'MyShop',
    destination_addr: '12025550161',
    short_message: Buffer.from('x'),
  });
  t.equal(nc.command_status, ESME_X_NO_CREDIT, 'SMPP: the documented no-credit status');

  const key = (await svc.keys.create(buyer.id, { mode: 'live', scopes: ['sms:send'] })).secret;
  const api = await post('/comms/sms', key, { to: '+12025550161', from: 'MyShop', message: 'capped' });
  t.equal(api.status, 400, api.text);
  t.match(api.json, {
    success: false,
    error: { code: 'VALIDATION_ERROR', message: /^Insufficient balance: the daily spend cap/ },
  });
  const bulk = await post('/comms/sms/bulk', key, { to: ['+12025550162'], from: 'MyShop', message: 'capped' });
  t.equal(bulk.status, 200, bulk.text);
  t.match(
    bulk.json.data.results,
    [{ success: false, error: { code: 'VALIDATION_ERROR', message: /^Insufficient balance: the daily spend cap/ } }],
    "bulk: the refusal is that recipient's own",
  );
  t.equal((await svc.ledger.balanceOf(buyer.id)).balance, '9.000000', 'nothing charged after the cap');
});
