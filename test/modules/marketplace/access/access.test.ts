import t from 'tap';
import { createWorld } from '../../sip-trunks/world.js';

t.test('route access: request, decide, list by route and by buyer', async (t) => {
  const w = await createWorld(t);
  const buyer = w.operator;
  const other = await w.signUp();
  const created = await w.api('POST', '/routes', w.seller.token, {
    type: 'voice',
    name: 'private carrier',
    country: 'GB',
    visibility: 'private',
    endpoints: [{ host: '192.0.2.20', port: 5060 }],
  });
  t.equal(created.status, 201, created.text);
  const routeId = created.body.data.id as string;
  const pub = await w.api('POST', '/routes', w.seller.token, {
    type: 'voice',
    name: 'public carrier',
    endpoints: [{ host: '192.0.2.21', port: 5060 }],
  });
  const events = async (accountId: string, event: string) =>
    w.d.sql<
      { data: Record<string, unknown> }[]
    >`select data from events where account_id = ${accountId} and event = ${event}`;

  t.equal((await w.api('GET', `/routes/${routeId}`, buyer.token)).status, 404, 'private: not visible');
  t.equal((await w.api('POST', '/purchases', buyer.token, { routeId })).status, 404, 'private: not buyable');
  t.equal(
    (await w.api('POST', `/routes/${pub.body.data.id}/access-requests`, buyer.token, {})).status,
    400,
    'a public route needs no access',
  );
  t.equal((await w.api('POST', `/routes/${routeId}/access-requests`, w.seller.token, {})).status, 409, 'own route');

  const asked = await w.api('POST', `/routes/${routeId}/access-requests`, buyer.token, {
    note: 'we carry CLI traffic',
  });
  t.equal(asked.status, 201, asked.text);
  t.match(asked.body.data, { routeId, status: 'pending', note: 'we carry CLI traffic' });
  t.equal((await w.api('POST', `/routes/${routeId}/access-requests`, buyer.token, {})).status, 409, 'one open request');
  const told = await events(w.seller.accountId, 'route.access_requested');
  t.match(told, [{ data: { requestId: asked.body.data.id, routeId, accountId: buyer.accountId } }]);
  const denyAsk = await w.api('POST', `/routes/${routeId}/access-requests`, other.token);
  t.equal(denyAsk.status, 201, 'a request without a body');

  const byRoute = await w.api('GET', `/routes/${routeId}/access?status=pending`, w.seller.token);
  t.equal(byRoute.status, 200, byRoute.text);
  t.equal(byRoute.body.data.total, 2);
  t.equal((await w.api('GET', `/routes/${routeId}/access`, buyer.token)).status, 404, 'sellers only');
  t.equal(
    (
      await w.api('POST', `/routes/${routeId}/access-requests/${asked.body.data.id}/decide`, buyer.token, {
        decision: 'approve',
      })
    ).status,
    404,
    'the buyer cannot approve itself',
  );

  const approved = await w.api(
    'POST',
    `/routes/${routeId}/access-requests/${asked.body.data.id}/decide`,
    w.seller.token,
    {
      decision: 'approve',
    },
  );
  t.equal(approved.status, 200, approved.text);
  t.match(approved.body.data, { status: 'approved', accountId: buyer.accountId });
  t.match(await events(buyer.accountId, 'route.access_decided'), [{ data: { status: 'approved', routeId } }]);
  t.equal((await w.api('GET', `/routes/${routeId}`, buyer.token)).status, 200, 'visible once granted');
  t.equal((await w.api('POST', '/purchases', buyer.token, { routeId })).status, 201, 'buyable once granted');
  const again = await w.api('POST', `/routes/${routeId}/access-requests/${asked.body.data.id}/decide`, w.seller.token, {
    decision: 'deny',
  });
  t.equal(again.status, 409, 'decided');

  const denied = await w.api(
    'POST',
    `/routes/${routeId}/access-requests/${denyAsk.body.data.id}/decide`,
    w.seller.token,
    {
      decision: 'deny',
      reason: 'no capacity',
    },
  );
  t.match(denied.body.data, { status: 'denied', reason: 'no capacity' });
  t.equal((await w.api('GET', `/routes/${routeId}`, other.token)).status, 404);

  const grants = await w.api('GET', `/routes/${routeId}/access?status=granted`, w.seller.token);
  t.match(grants.body.data, { total: 1, rows: [{ kind: 'grant', accountId: buyer.accountId, status: 'granted' }] });
  const all = await w.api('GET', `/routes/${routeId}/access?limit=2`, w.seller.token);
  t.equal(all.body.data.total, 3);
  t.equal(all.body.data.rows.length, 2);

  const mine = await w.api('GET', '/routes/access/mine', buyer.token);
  t.equal(mine.body.data.total, 2);
  t.match(mine.body.data.rows, [
    { routeId, routeName: 'private carrier' },
    { routeId, routeName: 'private carrier' },
  ]);
  const theirs = await w.api('GET', '/routes/access/mine', other.token);
  t.match(theirs.body.data.rows, [{ kind: 'request', status: 'denied', routeName: null }], 'no name without access');

  const revoked = await w.api('DELETE', `/routes/${routeId}/access/${buyer.accountId}`, w.seller.token);
  t.equal(revoked.status, 200);
  t.equal((await w.api('GET', '/routes/access/mine?status=granted', buyer.token)).body.data.total, 0);
});
