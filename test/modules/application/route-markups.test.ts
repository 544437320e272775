import t from 'tap';
import { checkInvariants } from '../../ledger/helpers.js';
import { createSmsWorld } from '../sms/world.js';

/**
 * Markup per route: a sub-account's messages on a route with its own markup pay that markup to
 * the operator instead of the sub-account's; removing it restores the sub-account's. Real sends
 * through the Net::SMPP supplier, billed through the one settlement path.
 */
t.test('route markups: set, list, refused, applied to real messages, removed', async (t) => {
  const w = await createSmsWorld(t);
  const { h, buyer, routeId, api } = w;
  const created = await api('POST', '/application/sub-accounts', buyer.session, { label: 'retail', markupPct: 20 });
  t.equal(created.status, 201, JSON.stringify(created.body));
  const sub = created.body.data as { id: string; apiKey: string };
  const credit = await api('POST', `/application/sub-accounts/${sub.id}/credit`, buyer.session, { amount: '1.000000' });
  t.equal(credit.status, 200, JSON.stringify(credit.body));
  const base = `/application/sub-accounts/${sub.id}/route-markups`;

  const empty = await api('GET', base, buyer.session);
  t.same(empty.body.data, { subAccountId: sub.id, markupPct: '20.000', items: [] });

  const send = async (n: number) => {
    const r = await api('POST', '/comms/sms', sub.apiKey, { to: `+1202555${3000 + n}`, from: 'MyShop', message: 'hi' });
    t.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.data as { status: string; cost: string };
  };
  // 0.010000 + 0.000500 a segment; 20%: 0.002100 to the operator.
  t.match(await send(1), { status: 'sent', cost: '0.012600' }, "the sub-account's own markup");

  const put = await api('PUT', `${base}/${routeId}`, buyer.session, { markupPct: '50' });
  t.equal(put.status, 200, JSON.stringify(put.body));
  t.match(put.body.data, { routeId, markupPct: '50.000' });
  const again = await api('PUT', `${base}/${routeId}`, buyer.session, { markupPct: 50.5 });
  t.match(again.body.data, { routeId, markupPct: '50.500', createdAt: put.body.data.createdAt }, 'set again: updated');
  const listed = await api('GET', base, buyer.session);
  t.match(listed.body.data, { markupPct: '20.000', items: [{ routeId, markupPct: '50.500' }] });

  // 50.5% of 0.010500 = 0.005302500 → 0.005303.
  t.match(await send(2), { status: 'sent', cost: '0.015803' }, 'the route markup replaces it');
  const [m] = await h.sql<{ amount: string }[]>`
    select e.amount::text from messages x join entries e on e.posting_id = x.markup_posting_id
    where x.account_id = ${sub.id} and e.owner_id = ${buyer.accountId} order by e.seq desc limit 1`;
  t.equal(m!.amount, '0.005303', 'the operator earned the route markup');

  // Refusals.
  t.equal((await api('PUT', `${base}/${routeId}`, buyer.session, { markupPct: '100000.001' })).status, 400);
  t.equal((await api('PUT', `${base}/${routeId}`, buyer.session, { markupPct: -1 })).status, 400);
  const unknownRoute = await api('PUT', `${base}/${sub.id}`, buyer.session, { markupPct: 5 });
  t.same([unknownRoute.status, unknownRoute.body.error.code], [404, 'NOT_FOUND'], 'an unknown route');
  const stranger = await h.signUp();
  t.equal((await api('GET', base, stranger.session)).status, 404, "another operator's sub-account");
  t.equal((await api('PUT', `${base}/${routeId}`, stranger.session, { markupPct: 1 })).status, 404);
  t.equal((await api('DELETE', `${base}/${routeId}`, stranger.session)).status, 404);
  t.equal((await api('GET', base, sub.apiKey)).status, 404, 'a sub-account cannot read its own markups');
  const testKey = (await h.services.keys.create(buyer.accountId, { mode: 'test' })).secret;
  const byTestKey = await api('PUT', `${base}/${routeId}`, testKey, { markupPct: 1 });
  t.same(
    [byTestKey.status, byTestKey.body.error.code],
    [403, 'TEST_KEY_NOT_ALLOWED'],
    'a test key changes no live markup',
  );

  const del = await api('DELETE', `${base}/${routeId}`, buyer.session);
  t.same(del.body.data, { routeId, deleted: true });
  t.equal((await api('DELETE', `${base}/${routeId}`, buyer.session)).status, 404, 'removed once');
  t.match(await send(3), { status: 'sent', cost: '0.012600' }, "removed: the sub-account's own markup again");

  const b = await w.balance(sub.id);
  t.same([b.balance, b.held], ['0.958997', '0.000000'], 'each message charged once at its markup');
  await checkInvariants(t, h.sql);
});
