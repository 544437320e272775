import t from 'tap';
import { signBody } from '../../../src/messaging/index.js';
import { account, daemonWithReceiver, httpsSmsRoute, numbers } from './world.js';

const SECRET = 'seller-sms-route-secret-0123456789';

t.test(
  'inbound SMS from the seller over signed HTTPS: kept on the number, signed webhook to the owner, read',
  async (t) => {
    const { d, receiver } = await daemonWithReceiver(t);
    const svc = d.modules.services;
    const seller = await account(d, 'seller@example.com');
    const other = await account(d, 'other-seller@example.com');
    await svc.accounts.createAccount({ email: 'owner@example.com', password: 'correct horse battery' });
    const { accessToken: owner } = await svc.accounts.login('owner@example.com', 'correct horse battery', {});
    const ownerId = (await svc.accounts.repo.byEmail('owner@example.com'))!.id;

    const routeId = await httpsSmsRoute(t, d, seller.key, SECRET);
    const otherRoute = await httpsSmsRoute(t, d, other.key, 'other-route-secret-0123456789');

    const stock = await svc.numbers.inventory.importItems(seller.id, true, numbers(1), (i) => `items[${i}]`);
    const [sku] = await d.sql<{ id: string }[]>`select id from did_skus where group_id = ${stock.groups[0]!.groupId}`;
    await svc.ledger.topup({ accountId: ownerId, amount: '10', source: 'card', postingKey: 'o' });
    const did = await svc.numbers.orders.buy(ownerId, { groupId: stock.groups[0]!.groupId, skuId: sku!.id });
    await svc.numbers.orders.settled();
    const number = (await svc.numbers.manage.get(ownerId, did.id)).number!;

    const hook = await d.https('POST', '/account/webhooks', {
      token: owner,
      body: { url: receiver.url(), events: ['number.sms.received'] },
    });
    t.equal(hook.status, 201, hook.text);
    receiver.secret = hook.json.data.secret;

    const deliver = (id: string, secret: string, body: Record<string, unknown>, shift = 0) => {
      const raw = JSON.stringify(body);
      const ts = Math.floor(Date.now() / 1000) + shift;
      return d.https('POST', `/numbers/inbound/sms/${id}`, {
        rawBody: raw,
        headers: {
          'content-type': 'application/json',
          'x-svc-timestamp': String(ts),
          'x-svc-signature': signBody(secret, ts, raw),
        },
      });
    };
    const sms = { from: '+447700900555', to: number, text: 'Is the shop open today?', supplierMessageId: 'mo-1' };
    t.equal((await deliver(routeId, 'wrong-secret', sms)).status, 401, 'bad signature');
    t.equal((await deliver(routeId, SECRET, sms, -3600)).status, 401, 'stale timestamp');
    t.equal((await deliver(otherRoute, 'other-route-secret-0123456789', sms)).status, 404, "another seller's route");
    const got = await deliver(routeId, SECRET, sms);
    t.equal(got.status, 200, got.text);
    t.equal(got.json.data.duplicate, false);
    const again = await deliver(routeId, SECRET, sms);
    t.same(
      again.json.data,
      { received: true, messageId: got.json.data.messageId, duplicate: true },
      'a retry stores once',
    );
    t.equal((await deliver(routeId, SECRET, { ...sms, to: '449999999999', supplierMessageId: 'mo-2' })).status, 404);

    // The owner's endpoint gets number.sms.received, signed with its secret.
    await svc.webhookWorker.runOnce();
    await receiver.waitFor(1);
    const hit = receiver.received[0]!;
    t.equal(hit.headers['x-webhook-event'], 'number.sms.received');
    t.ok(hit.signatureOk && hit.legacyOk, 'signed like every webhook');
    t.match(JSON.parse(hit.rawBody.toString()).data, {
      didId: did.id,
      messageId: got.json.data.messageId,
      number,
      from: '447700900555',
      body: 'Is the shop open today?',
      segments: 1,
    });
    t.equal(receiver.received.length, 1, 'one event for the retried delivery');

    const convs = await d.https('GET', `/dids/${did.id}/conversations`, { token: owner });
    t.match(convs.json.data, [{ peer: '447700900555', messages: 1, unread: 1, lastDirection: 'in' }]);
    const thread = await d.https('GET', `/dids/${did.id}/messages?peer=447700900555`, { token: owner });
    t.match(thread.json.data, [
      { direction: 'in', status: 'received', from: '447700900555', to: number, cost: '0.000000', readAt: null },
    ]);
    const read = await d.https('POST', `/dids/${did.id}/messages/read`, {
      token: owner,
      body: { peer: '+447700900555' },
    });
    t.same(read.json.data, { updated: 1 });
    const reread = await d.https('POST', `/dids/${did.id}/messages/read`, {
      token: owner,
      body: { peer: '447700900555' },
    });
    t.same(reread.json.data, { updated: 0 });
    const after = await d.https('GET', `/dids/${did.id}/conversations`, { token: owner });
    t.equal(after.json.data[0].unread, 0);
  },
);
