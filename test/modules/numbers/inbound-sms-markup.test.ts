import t from 'tap';
import { Decimal } from 'decimal.js';
import { checkInvariants } from '../../ledger/helpers.js';
import { startPerlSmsc } from '../../messaging/perl-smsc.js';
import { startTestDaemon } from '../../helpers/daemon.js';
import { account, api, numbers } from './world.js';

// Money in this file (numbers' platform fee 10 %): inbound SMS price 0.003333 → seller 0.003000,
// platform 0.000333. The renter is a sub-account with a 12.5 % markup: 0.003333 × 12.5 % = 0.000416625,
// rounded once to 0.000417, paid to its operator; the sub-account pays 0.003750 a message.

t.test("a sub-account renter's received SMS carries its reseller's markup (Net::SMPP SMSC)", async (t) => {
  const smsc = await startPerlSmsc('seller-mk', 'pw-mk');
  t.teardown(() => smsc.stop());
  // Sub-accounts made without the route requirement, as the trunk world does (the operator buys no route here).
  const d = await startTestDaemon(t, { billing: { require_route_for_sub_accounts: false } });
  const svc = d.modules.services;
  const seller = await account(d, 'seller-mk@example.com');
  const operator = await account(d, 'operator-mk@example.com');
  const direct = await account(d, 'direct-mk@example.com');

  const route = await api(d, 'POST', '/routes', seller.key, {
    type: 'sms',
    name: 'Seller SMS',
    smsDelivery: { kind: 'smpp', host: '127.0.0.1', port: smsc.port, systemId: 'seller-mk', password: 'pw-mk' },
  });
  t.equal(route.status, 201, JSON.stringify(route.json));
  const stock = await svc.numbers.inventory.importItems(
    seller.id,
    true,
    numbers(2, { first: 7100001 }),
    (i) => `items[${i}]`,
  );
  const groupId = stock.groups[0]!.groupId;
  const priced = await api(d, 'PATCH', `/dids/inventory/groups/${groupId}`, seller.key, {
    inboundSmsRate: '0.003333',
  });
  t.equal(priced.status, 200, JSON.stringify(priced.json));
  const [sku] = await d.sql<{ id: string }[]>`select id from did_skus where group_id = ${groupId}`;

  // The operator funds a sub-account (12.5 % markup) that rents one number; another account rents the other directly.
  await svc.ledger.topup({ accountId: operator.id, amount: '20', source: 'card', postingKey: 'op-mk' });
  await svc.ledger.topup({ accountId: direct.id, amount: '10', source: 'card', postingKey: 'direct-mk' });
  const sub = await svc.application.create(operator.id, { label: 'retail', markupPct: '12.5' });
  await svc.application.credit(operator.id, sub.id, { amount: '3.757500' }, `fund-${sub.id}`);
  const subDid = await svc.numbers.orders.buy(operator.id, { groupId, skuId: sku!.id, subAccountId: sub.id });
  const directDid = await svc.numbers.orders.buy(direct.id, { groupId, skuId: sku!.id });
  await svc.numbers.orders.settled();
  const digitsOf = async (owner: string, id: string) =>
    (await svc.numbers.manage.get(owner, id)).number!.replace(/^\+/, '');
  const subNumber = await digitsOf(operator.id, subDid.id);
  const directNumber = await digitsOf(direct.id, directDid.id);

  const diff = (a: string, b: string) => new Decimal(a).minus(b).toFixed(6);
  const balances = async () => {
    const [s, o, sel, dir] = await Promise.all(
      [sub.id, operator.id, seller.id, direct.id].map((id) => svc.ledger.balanceOf(id)),
    );
    return { sub: s!.balance, operatorEarned: o!.payable, sellerEarned: sel!.payable, direct: dir!.balance };
  };
  const before = await balances();
  t.equal(before.sub, '0.007500', 'the sub-account has 0.0075 left after its number (setup + month 3.75)');

  await svc.numbers.keepSellerBinds();
  await smsc.waitFor(/^BIND trx ok/);
  let resps = 0;
  const deliver = async (from: string, to: string, text: string) => {
    smsc.send(`mo ${from} ${to} ${text}`);
    return smsc.waitFor(/^DLR_RESP/, ++resps);
  };

  await t.test('the sub-account pays price plus markup, the operator earns the markup', async (t) => {
    t.equal(await deliver('447700900601', subNumber, 'Hello retail'), 'DLR_RESP 0');
    const [msg] = await d.sql<{ id: string; cost: string }[]>`
      select id, cost::text from did_messages where did_id = ${subDid.id} and peer = '447700900601'`;
    t.equal(msg!.cost, '0.003750', "the message's cost is what the renter paid");
    const entries = await d.sql<{ ownerId: string | null; type: string; amount: string }[]>`
      select owner_id, type, amount::text from entries where related_entity_id = ${msg!.id} and owner_id is not null
      order by owner_id, type, amount`;
    t.same(
      entries
        .map((e) => [
          e.ownerId === sub.id ? 'sub' : e.ownerId === operator.id ? 'operator' : 'seller',
          e.type,
          e.amount,
        ])
        .sort(),
      [
        ['operator', 'credit', '0.000417'],
        ['seller', 'credit', '0.003000'],
        ['sub', 'charge', '-0.000417'],
        ['sub', 'charge', '-0.003000'],
        ['sub', 'platform_fee', '-0.000333'],
      ].sort(),
      'seller and platform as for any renter; the markup from the sub-account to its operator',
    );
    const after = await balances();
    t.equal(diff(before.sub, after.sub), '0.003750', 'the sub-account paid 0.003750');
    t.equal(diff(after.operatorEarned, before.operatorEarned), '0.000417', 'the operator earned the markup');
    t.equal(diff(after.sellerEarned, before.sellerEarned), '0.003000', 'the seller earned the price less 10 %');
    const read = await api(d, 'GET', `/dids/${subDid.id}/messages?peer=447700900601`, operator.key);
    t.match(read.json.data, [{ direction: 'in', cost: '0.003750' }]);
  });

  await t.test('a renter that is not a sub-account pays the price only', async (t) => {
    const b0 = await balances();
    t.equal(await deliver('447700900602', directNumber, 'Hello direct'), 'DLR_RESP 0');
    const [msg] = await d.sql<{ cost: string }[]>`
      select cost::text from did_messages where did_id = ${directDid.id} and peer = '447700900602'`;
    t.equal(msg!.cost, '0.003333');
    const b1 = await balances();
    t.equal(diff(b0.direct, b1.direct), '0.003333');
    t.equal(b1.operatorEarned, b0.operatorEarned, 'no markup to anyone');
  });

  await t.test('a balance that covers the price but not the markup refuses the message', async (t) => {
    // 0.003750 left; one more message takes it all, the next finds 0.000000.
    t.equal(await deliver('447700900603', subNumber, 'Second'), 'DLR_RESP 0');
    t.equal((await balances()).sub, '0.000000');
    // Credit 0.003500: the price (0.003333) fits, price + markup (0.003750) does not.
    await svc.application.credit(operator.id, sub.id, { amount: '0.003500' }, `fund2-${sub.id}`);
    const b0 = await balances();
    t.equal(await deliver('447700900604', subNumber, 'Too dear with markup'), 'DLR_RESP 101', 'ESME_RX_P_APPN');
    const [none] = await d.sql<{ n: number }[]>`
      select count(*)::int as n from did_messages where did_id = ${subDid.id} and peer = '447700900604'`;
    t.equal(none!.n, 0, 'not kept');
    t.same(await balances(), b0, 'nothing moved: neither the price nor the markup');
  });

  await checkInvariants(t, d.sql);
});
