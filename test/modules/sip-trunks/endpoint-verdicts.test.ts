import t from 'tap';
import { createWorld, eventually } from './world.js';

/**
 * Routing keeps the outbound guard's verdict on an IP-literal SIP endpoint with the endpoint's
 * cached row: a change of the endpoint (here made in SQL behind the services' back, so only the
 * trigger's NOTIFY tells the routing cache) is checked by the guard again before the next call
 * uses it, whichever way the verdict goes.
 */
t.test('a changed IP-literal endpoint is checked again by the guard', async (t) => {
  const w = await createWorld(t);
  const { routeId } = await w.route({ port: 5999, prefix: '4411', rate: '0.001000' });
  const routing = w.d.modules.services.routing;
  const addresses = async () =>
    (await routing.candidatesFor({ accountId: w.operator.accountId, number: '441100000001', type: 'voice' })).flatMap(
      (c) => c.endpoints.map((e) => e.address),
    );

  t.same(await addresses(), ['127.0.0.1'], 'a permitted literal is pinned to itself');
  t.same(await addresses(), ['127.0.0.1'], 'the kept verdict gives the same answer');

  // The metadata address is refused by the guard whatever the test networks allow.
  await w.d.sql`update route_endpoints set host = '169.254.169.254' where route_id = ${routeId}`;
  t.same(
    await eventually(async () => {
      const a = await addresses();
      return a.length === 0 ? a : null;
    }),
    [],
    'the refused address is left out',
  );

  await w.d.sql`update route_endpoints set host = '127.0.0.2' where route_id = ${routeId}`;
  t.same(
    await eventually(async () => {
      const a = await addresses();
      return a.length > 0 ? a : null;
    }),
    ['127.0.0.2'],
    'a permitted address again is used',
  );
});
