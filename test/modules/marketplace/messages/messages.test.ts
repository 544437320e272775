import t from 'tap';
import { createWorld } from '../../sip-trunks/world.js';

t.test('route messages: buyer and seller threads, identities hidden, events', async (t) => {
  const w = await createWorld(t);
  const buyer = w.operator;
  const other = await w.signUp();
  const created = await w.api('POST', '/routes', w.seller.token, {
    type: 'voice',
    name: 'UK CLI',
    country: 'GB',
    endpoints: [{ host: '192.0.2.30', port: 5060 }],
  });
  const routeId = created.body.data.id as string;
  const hidden = await w.api('POST', '/routes', w.seller.token, {
    type: 'voice',
    name: 'hidden',
    visibility: 'private',
    endpoints: [{ host: '192.0.2.31', port: 5060 }],
  });
  const events = async (accountId: string) =>
    w.d.sql<{ data: Record<string, unknown> }[]>`
      select data from events where account_id = ${accountId} and event = 'route.message_received' order by id`;

  t.equal(
    (await w.api('POST', `/routes/${hidden.body.data.id}/messages`, buyer.token, { body: 'hi' })).status,
    404,
    'not on a route the buyer cannot see',
  );
  t.equal(
    (await w.api('POST', `/routes/${routeId}/messages`, w.seller.token, { body: 'hello all' })).status,
    400,
    'the seller answers in a thread',
  );

  const first = await w.api('POST', `/routes/${routeId}/messages`, buyer.token, { body: 'Is CLI passed to mobiles?' });
  t.equal(first.status, 201, first.text);
  const threadId = first.body.data.threadId as string;
  t.match(first.body.data, { routeId, from: 'buyer', body: 'Is CLI passed to mobiles?', readAt: null });
  await w.api('POST', `/routes/${routeId}/messages`, other.token, { body: 'ASR on fixed?' });
  const second = await w.api('POST', `/routes/${routeId}/messages`, buyer.token, { body: 'And the ACD?' });
  t.equal(second.body.data.threadId, threadId, 'one thread per buyer and route');

  const told = await events(w.seller.accountId);
  t.equal(told.length, 3);
  t.match(told[0]!.data, { threadId, routeId, from: 'buyer', preview: 'Is CLI passed to mobiles?' });
  t.notOk(JSON.stringify(told).includes(buyer.accountId), 'the seller is never given the buyer');

  const sellerThreads = await w.api('GET', '/routes/messages/threads?role=seller', w.seller.token);
  t.equal(sellerThreads.status, 200, sellerThreads.text);
  t.equal(sellerThreads.body.data.length, 2);
  const mine = sellerThreads.body.data.find((x: { id: string }) => x.id === threadId);
  t.match(mine, { routeId, routeName: 'UK CLI', role: 'seller', unread: 2, lastMessage: 'And the ACD?' });
  t.match(mine.buyer, /^Buyer [0-9A-F]{6}$/);
  t.notOk(JSON.stringify(sellerThreads.body).includes(buyer.accountId));

  const page = await w.api('GET', `/routes/${routeId}/messages?threadId=${threadId}&limit=1`, w.seller.token);
  t.equal(page.body.data.length, 1);
  t.equal(page.body.data[0].body, 'And the ACD?', 'newest first');
  t.equal(page.body.hasMore, true);
  const rest = await w.api(
    'GET',
    `/routes/${routeId}/messages?threadId=${threadId}&cursor=${page.body.nextCursor}`,
    w.seller.token,
  );
  t.equal(rest.body.data[0].body, 'Is CLI passed to mobiles?');
  const read = await w.api('GET', '/routes/messages/threads?role=seller', w.seller.token);
  t.equal(read.body.data.find((x: { id: string }) => x.id === threadId).unread, 0, 'reading marks read');

  const answer = await w.api('POST', `/routes/${routeId}/messages`, w.seller.token, {
    threadId,
    body: 'Yes, CLI on all mobile networks.',
  });
  t.equal(answer.status, 201, answer.text);
  t.equal(answer.body.data.from, 'seller');
  const buyerTold = await events(buyer.accountId);
  t.match(buyerTold, [{ data: { threadId, from: 'seller', routeName: 'UK CLI' } }]);
  t.notOk(JSON.stringify(buyerTold).includes(w.seller.accountId), 'the buyer is never given the seller');

  const buyerView = await w.api('GET', `/routes/${routeId}/messages`, buyer.token);
  t.same(
    buyerView.body.data.map((m: { from: string }) => m.from),
    ['seller', 'buyer', 'buyer'],
  );
  t.ok(buyerView.body.data[1].readAt, "the seller read the buyer's messages");
  t.equal(
    (await w.api('GET', `/routes/${routeId}/messages?threadId=${threadId}`, other.token)).status,
    404,
    'another buyer cannot read the thread',
  );
  t.equal((await w.api('POST', `/routes/${routeId}/messages`, other.token, { threadId, body: 'x' })).status, 404);
});
