import t from 'tap';
import { createSmsWorld, eventually } from '../sms/world.js';
import { numbers } from './world.js';

t.test('SMS from a number through the SMS send path to a Net::SMPP SMSC; threads and read marks', async (t) => {
  const w = await createSmsWorld(t);
  const { h, buyer } = w;
  const seller = await h.signUp();
  const svc = h.services.numbers;
  const stock = await svc.inventory.importItems(seller.accountId, true, numbers(1), (i) => `items[${i}]`);
  const [sku] = await h.sql<{ id: string }[]>`select id from did_skus where group_id = ${stock.groups[0]!.groupId}`;
  const did = await svc.orders.buy(buyer.accountId, { groupId: stock.groups[0]!.groupId, skuId: sku!.id });
  await svc.orders.settled();
  const number = (await svc.manage.get(buyer.accountId, did.id)).number!;
  const before = await w.balance(buyer.accountId);
  t.equal(before.balance, '6.250000', '10 - 3.75 for the number');

  const send = (body: unknown, headers: Record<string, string> = {}) =>
    h.app.inject({
      method: 'POST',
      url: `/api/v1/dids/${did.id}/messages`,
      headers: { authorization: `Bearer ${buyer.session}`, ...headers },
      payload: body as object,
    });
  const sent = await send({ to: '+12025550199', body: 'Hello from my number', idempotencyKey: 'msg-1' });
  t.equal(sent.statusCode, 201, sent.body);
  const m = sent.json().data;
  t.match(m, {
    direction: 'out',
    from: number,
    to: '12025550199',
    peer: '12025550199',
    body: 'Hello from my number',
    segments: 1,
    // The SMSC's receipt can be applied before the send answers: the message then reads delivered at once.
    status: /^(sent|delivered)$/,
    error: null,
    readAt: null,
    cost: '0.010500',
  });
  await w.smsc.waitFor(/^SUBMIT 12025550199/);
  t.equal((await w.balance(buyer.accountId)).balance, '6.239500', 'charged as POST /comms/sms: 0.0105');
  const sms = await w.api('GET', `/comms/sms/${m.providerMessageId}`, buyer.session);
  t.equal(sms.status, 200);
  t.equal(sms.body.data.from, number, 'the number is the sender');

  const again = await send({ to: '+12025550199', body: 'Hello from my number', idempotencyKey: 'msg-1' });
  t.equal(again.json().data.id, m.id, 'the same key returns the original message');
  t.equal((await w.balance(buyer.accountId)).balance, '6.239500', 'and sends once');
  const byHeader = await send({ to: '12025550188', body: 'Second' }, { 'x-idempotency-key': 'hdr-1' });
  t.equal(byHeader.statusCode, 201);
  t.equal((await send({ to: '12025550188', body: 'x'.repeat(1601) })).statusCode, 400);
  t.equal((await send({ to: 'nobody', body: 'x' })).statusCode, 400);

  const thread = await w.api('GET', `/dids/${did.id}/messages?peer=12025550199`, buyer.session);
  t.equal(thread.body.data.length, 1);
  const convs = await w.api('GET', `/dids/${did.id}/conversations`, buyer.session);
  t.equal(convs.status, 200, JSON.stringify(convs.body));
  t.same(
    convs.body.data.map((c: { peer: string; messages: number; unread: number }) => [c.peer, c.messages, c.unread]),
    [
      ['12025550188', 1, 0],
      ['12025550199', 1, 0],
    ],
  );
  const read = await w.api('POST', `/dids/${did.id}/messages/read`, buyer.session, { peer: '12025550199' });
  t.same(read.body.data, { updated: 0 }, 'no received message to mark');

  // The SMSC's delivery receipt reaches the number's message, in the thread.
  const inThread = async (id: string, status: string) => {
    const page = await w.api('GET', `/dids/${did.id}/messages`, buyer.session);
    const found = (page.body.data as { id: string; status: string; deliveredAt: string; cost: string }[]).find(
      (x) => x.id === id,
    );
    return found?.status === status ? found : null;
  };
  const delivered = await eventually(() => inThread(m.id, 'delivered'));
  const sentAt = Date.parse(m.createdAt);
  t.ok(Date.parse(delivered.deliveredAt) >= sentAt, 'deliveredAt from the receipt');
  t.equal(delivered.cost, '0.010500');
  const sms2 = await w.api('GET', `/comms/sms/${m.providerMessageId}`, buyer.session);
  t.equal(sms2.body.data.status, 'delivered', 'as the SMS path has it');

  // An undelivered receipt fails the message; the SMS path refunds it, so it cost nothing.
  const lost = await send({ to: '14440001234', body: 'will not arrive' });
  t.equal(lost.statusCode, 201, lost.body);
  const failed = await eventually(() => inThread(lost.json().data.id, 'failed'));
  t.match(failed, { status: 'failed', error: 'UNDELIVERABLE', cost: '0.000000', deliveredAt: null });
  t.equal((await w.balance(buyer.accountId)).balance, '6.229000', 'two messages of 0.0105 paid, the lost one refunded');

  // A number no longer active sends nothing.
  await svc.manage.release(buyer.accountId, did.id);
  t.equal((await send({ to: '12025550199', body: 'late' })).statusCode, 400);
});
