import t from 'tap';
import { startPerlSmsc } from '../../messaging/perl-smsc.js';
import { account, api, daemonWithReceiver, numbers } from './world.js';

t.test(
  'mobile-originated SMS over the seller SMPP bind (Net::SMPP SMSC): kept on the number, signed webhook',
  async (t) => {
    const smsc = await startPerlSmsc('seller-mo', 'pw-mo');
    t.teardown(() => smsc.stop());
    const { d, receiver } = await daemonWithReceiver(t);
    const svc = d.modules.services;
    const seller = await account(d, 'seller@example.com');
    const owner = await account(d, 'owner@example.com');

    // The seller's SMS route delivers over SMPP to its SMSC: the bind its handsets' messages come back on.
    const route = await api(d, 'POST', '/routes', seller.key, {
      type: 'sms',
      name: 'Seller SMS',
      smsDelivery: { kind: 'smpp', host: '127.0.0.1', port: smsc.port, systemId: 'seller-mo', password: 'pw-mo' },
    });
    t.equal(route.status, 201, JSON.stringify(route.json));
    const stock = await svc.numbers.inventory.importItems(
      seller.id,
      true,
      numbers(1, { first: 7000001 }),
      (i) => `items[${i}]`,
    );
    const [sku] = await d.sql<{ id: string }[]>`select id from did_skus where group_id = ${stock.groups[0]!.groupId}`;
    await svc.ledger.topup({ accountId: owner.id, amount: '10', source: 'card', postingKey: 'o' });
    const did = await svc.numbers.orders.buy(owner.id, { groupId: stock.groups[0]!.groupId, skuId: sku!.id });
    await svc.numbers.orders.settled();
    const number = (await svc.numbers.manage.get(owner.id, did.id)).number!.replace(/^\+/, '');
    const hooks = (await svc.keys.create(owner.id, { mode: 'live', scopes: ['webhooks:write'] })).secret;
    const hook = await api(d, 'POST', '/account/webhooks', hooks, {
      url: receiver.url(),
      events: ['number.sms.received'],
    });
    t.equal(hook.status, 201, JSON.stringify(hook.json));
    receiver.secret = hook.json.data.secret;

    // The minute's bind check (run now) opens the seller's bind without anything sent over it.
    await svc.numbers.keepSellerBinds();
    await smsc.waitFor(/^BIND trx ok/);

    smsc.send(`mo 447700900555 ${number} Is the shop open today?`);
    t.equal(await smsc.waitFor(/^DLR_RESP/), 'DLR_RESP 0', 'answered ESME_ROK once kept');
    const [kept] = await d.sql<{ direction: string; fromNumber: string; body: string; status: string }[]>`
    select direction, from_number, body, status from did_messages where did_id = ${did.id}`;
    t.same(kept, { direction: 'in', fromNumber: '447700900555', body: 'Is the shop open today?', status: 'received' });

    smsc.send(`mo 447700900555 449999999999 Wrong number`);
    t.equal(
      await smsc.waitFor(/^DLR_RESP/, 2),
      'DLR_RESP 11',
      'ESME_RINVDSTADR for a number not rented from this seller',
    );

    await svc.webhookWorker.runOnce();
    await receiver.waitFor(1);
    const hit = receiver.received[0]!;
    t.equal(hit.headers['x-webhook-event'], 'number.sms.received');
    t.ok(hit.signatureOk, 'signed');
    t.match(JSON.parse(hit.rawBody.toString()).data, {
      didId: did.id,
      number,
      from: '447700900555',
      body: 'Is the shop open today?',
    });
    const thread = await api(d, 'GET', `/dids/${did.id}/messages?peer=447700900555`, owner.key);
    t.match(thread.json.data, [{ direction: 'in', status: 'received', from: '447700900555' }]);
  },
);
