import t from 'tap';
import { signBody } from '../../../src/messaging/index.js';
import { startPerlSmsc } from '../../messaging/perl-smsc.js';
import { account, api, daemonWithReceiver, httpsSmsRoute, smsWebhook } from './world.js';

const SECRET = 'carrier-sms-route-secret-0123456789';

// A completed port-in makes the digits the buyer's DID; the carrier the order names brings its
// mobile-originated messages in over its SMPP bind or its signed HTTPS callback, as a seller does
// for a rented number (docs/numbers.md "Ported numbers").
t.test('mobile-originated SMS to a ported number: SMPP and HTTPS, kept, signed webhook, read by API', async (t) => {
  const smsc = await startPerlSmsc('carrier-mo', 'pw-carrier');
  t.teardown(() => smsc.stop());
  const { d, receiver } = await daemonWithReceiver(t);
  const svc = d.modules.services;
  const carrier = await account(d, 'carrier@example.com');
  const stranger = await account(d, 'stranger@example.com');
  const owner = await account(d, 'owner@example.com');
  const operator = await account(d, 'operator@example.com', { operator: true });

  const smppRoute = await api(d, 'POST', '/routes', carrier.key, {
    type: 'sms',
    name: 'Carrier SMPP',
    smsDelivery: { kind: 'smpp', host: '127.0.0.1', port: smsc.port, systemId: 'carrier-mo', password: 'pw-carrier' },
  });
  t.equal(smppRoute.status, 201, JSON.stringify(smppRoute.json));
  const carrierHttp = await httpsSmsRoute(t, d, carrier.key, SECRET);
  const strangerHttp = await httpsSmsRoute(t, d, stranger.key, 'stranger-route-secret-0123456789');

  const number = '447911123401';
  const order = await svc.numbers.portIns.create(owner.id, {
    numbers: [`+${number}`],
    losingCarrier: 'Old Telco Ltd',
    carrierAccountNumber: 'ACC-7',
    carrierPin: null,
    authorizedName: 'Ada Lovelace',
    documentsRef: null,
    desiredDate: '2026-12-15',
  });
  await svc.numbers.portIns.decide(operator.id, order.id, 'approve');
  await svc.numbers.portIns.decide(operator.id, order.id, 'complete', null, carrier.id);
  const [did] = await d.sql<{ id: string }[]>`select id from dids where number = ${number} and origin = 'ported'`;
  t.ok(did, 'the ported DID');
  const didId = did!.id;
  const features = await api(d, 'GET', `/dids/${didId}/features`, owner.key);
  t.match(features.json.data.sms, { inbound: true, inboundPrice: null }, 'messages come in, free');

  await smsWebhook(t, d, receiver, owner.id);

  // The minute's bind check opens the carrier's bind: it has no rented numbers, only the ported one.
  await svc.numbers.keepSellerBinds();
  await smsc.waitFor(/^BIND trx ok/);
  smsc.send(`mo 447700900555 ${number} Hello ported number`);
  t.equal(await smsc.waitFor(/^DLR_RESP/), 'DLR_RESP 0', 'ESME_ROK once kept');
  smsc.send(`mo 447700900555 ${number} Hello ported number`);
  t.equal(await smsc.waitFor(/^DLR_RESP/, 2), 'DLR_RESP 0', 'a re-send is answered ESME_ROK');

  const deliver = (routeId: string, secret: string, body: Record<string, unknown>) => {
    const raw = JSON.stringify(body);
    const ts = Math.floor(Date.now() / 1000);
    return d.https('POST', `/numbers/inbound/sms/${routeId}`, {
      rawBody: raw,
      headers: {
        'content-type': 'application/json',
        'x-svc-timestamp': String(ts),
        'x-svc-signature': signBody(secret, ts, raw),
      },
    });
  };
  const sms = { from: '+447700900666', to: `+${number}`, text: 'Over HTTPS', supplierMessageId: 'c-1' };
  const other = await deliver(strangerHttp, 'stranger-route-secret-0123456789', sms);
  t.equal(other.status, 404, 'an account that is not the carrier delivers nothing to the number');
  const got = await deliver(carrierHttp, SECRET, sms);
  t.equal(got.status, 200, got.text);
  t.equal(got.json.data.duplicate, false);

  const kept = await d.sql<
    { direction: string; peer: string; body: string; cost: string | null; postingId: string | null }[]
  >`
    select direction, peer, body, cost::text, posting_id from did_messages where did_id = ${didId} order by created_at`;
  t.same(
    kept,
    [
      { direction: 'in', peer: '447700900555', body: 'Hello ported number', cost: '0.000000', postingId: null },
      { direction: 'in', peer: '447700900666', body: 'Over HTTPS', cost: '0.000000', postingId: null },
    ],
    'each message kept once, nothing charged',
  );

  await svc.webhookWorker.runOnce();
  await receiver.waitFor(2);
  t.ok(
    receiver.received.every((r) => r.signatureOk),
    'signed',
  );
  t.same(
    receiver.received.map((r) => JSON.parse(r.rawBody.toString()).data).map((x) => [x.didId, x.from, x.body]),
    [
      [didId, '447700900555', 'Hello ported number'],
      [didId, '447700900666', 'Over HTTPS'],
    ],
  );
  const convs = await api(d, 'GET', `/dids/${didId}/conversations`, owner.key);
  t.match(convs.json.data, [
    { messages: 1, lastDirection: 'in' },
    { messages: 1, lastDirection: 'in' },
  ]);
  const thread = await api(d, 'GET', `/dids/${didId}/messages?peer=447700900666`, owner.key);
  t.match(thread.json.data, [{ direction: 'in', status: 'received', from: '447700900666', to: number }]);
});
