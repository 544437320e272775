import t from 'tap';
import { startPerlSmsc } from '../../messaging/perl-smsc.js';
import { account, api, daemonWithReceiver, numbers, smsWebhook } from './world.js';

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
    await smsWebhook(t, d, receiver, owner.id);

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

    // The group prices received SMS: the renter pays, the seller earns it less the 10 % platform fee.
    const priced = await api(d, 'PATCH', `/dids/inventory/groups/${stock.groups[0]!.groupId}`, seller.key, {
      inboundSmsRate: '0.003333',
    });
    t.equal(priced.status, 200, JSON.stringify(priced.json));
    const balances = async () => {
      const [o, s] = await Promise.all([svc.ledger.balanceOf(owner.id), svc.ledger.balanceOf(seller.id)]);
      return { owner: o.balance, seller: s.payable };
    };
    t.same(await balances(), { owner: '6.250000', seller: '3.375000' }, 'after the purchase');

    // The SMSC sends the same deliver_sm again (its response lost): kept, billed and forwarded once.
    smsc.send(`mo 447700900556 ${number} Priced hello`);
    t.equal(await smsc.waitFor(/^DLR_RESP/, 3), 'DLR_RESP 0');
    smsc.send(`mo 447700900556 ${number} Priced hello`);
    t.equal(await smsc.waitFor(/^DLR_RESP/, 4), 'DLR_RESP 0', 'the re-send is answered ESME_ROK');
    const kept2 = await d.sql<{ body: string; cost: string; postingId: string | null }[]>`
      select body, cost::text, posting_id from did_messages where did_id = ${did.id} and peer = '447700900556'`;
    t.equal(kept2.length, 1, 'the re-send is not kept again');
    t.equal(kept2[0]!.cost, '0.003333');
    t.ok(kept2[0]!.postingId, 'charged through the ledger');
    t.same(await balances(), { owner: '6.246667', seller: '3.378000' }, 'charged once: 0.003333, seller 0.003000');
    const priceHit = await api(d, 'GET', `/dids/${did.id}/messages?peer=447700900556`, owner.key);
    t.match(priceHit.json.data, [{ direction: 'in', cost: '0.003333' }]);

    // A different message from the same handset is a new one.
    smsc.send(`mo 447700900556 ${number} Priced hello again`);
    t.equal(await smsc.waitFor(/^DLR_RESP/, 5), 'DLR_RESP 0');
    t.same(await balances(), { owner: '6.243334', seller: '3.381000' });

    // A price the renter cannot pay: refused for good (ESME_RX_P_APPN, no retry), nothing kept or charged.
    await api(d, 'PATCH', `/dids/inventory/groups/${stock.groups[0]!.groupId}`, seller.key, {
      inboundSmsRate: '7.000000',
    });
    smsc.send(`mo 447700900557 ${number} Too dear`);
    t.equal(await smsc.waitFor(/^DLR_RESP/, 6), 'DLR_RESP 101', 'ESME_RX_P_APPN');
    const [none] = await d.sql<{ n: number }[]>`
      select count(*)::int as n from did_messages where did_id = ${did.id} and peer = '447700900557'`;
    t.equal(none!.n, 0, 'not kept');
    t.same(await balances(), { owner: '6.243334', seller: '3.381000' }, 'nothing moved');

    await svc.webhookWorker.runOnce();
    await receiver.waitFor(3);
    t.same(
      receiver.received.map((r) => JSON.parse(r.rawBody.toString()).data.body),
      ['Is the shop open today?', 'Priced hello', 'Priced hello again'],
      'one webhook per message kept',
    );
  },
);
