import { createServer } from 'node:net';
import pino from 'pino';
import t from 'tap';
import { systemClock } from '../../../src/platform/clock.js';
import { createHealthRegistry } from '../../../src/platform/health.js';
import { buildMarketplaceModule } from '../../../src/modules/marketplace/index.js';
import { createSmsWorld, eventually } from './world.js';

/**
 * Routing reads (usable routes, SMS delivery) are cached per daemon: a purchase, a routing order
 * change, a cancellation and a delivery change made through the API are seen by the very next send
 * on the daemon that made them, and by a second instance on the same database through the triggers'
 * NOTIFY; a change made in SQL behind the services' back reaches both the same way.
 */
t.test('routing cache follows every change that affects a send', async (t) => {
  const w = await createSmsWorld(t);
  const { h, api, buyer, smsc } = w;
  await h.services.routingCache.start();
  t.teardown(() => h.services.routingCache.stop());

  // A second daemon's marketplace on the same database: it learns of changes only through NOTIFY.
  const other = buildMarketplaceModule({
    config: h.config,
    sql: h.sql,
    log: pino({ level: 'silent' }),
    clock: systemClock,
    redis: null,
    health: createHealthRegistry(),
  });
  const otherRoutes = other.modules.find((m) => m.name === 'marketplace')!;
  await otherRoutes.start!();
  t.teardown(() => otherRoutes.stop!());
  const otherOrder = async () =>
    (
      await other.services.routing.candidatesFor({ accountId: buyer.accountId, number: '12025550123', type: 'sms' })
    ).map((c) => c.routeId);

  const key = (await h.services.keys.create(buyer.accountId, { mode: 'live', scopes: ['sms:send'] })).secret;
  const send = () => api('POST', '/comms/sms', key, { to: '+12025550123', from: 'MyShop', message: 'cache' });

  // Warm both caches on the world's one route (0.010000 + 0.000500 platform fee).
  const first = await send();
  t.match(first.body.data, { status: 'sent', cost: '0.010500' });
  t.same(await otherOrder(), [w.routeId]);

  const { routeId: cheapId, sellerSession } = await w.smsRoute({
    name: 'Cheaper SMSC',
    port: smsc.port,
    systemId: 'sup1',
    password: 'pw1',
    csv: 'prefix,destination,rate\n1,US test,0.005\n',
  });

  t.test('a new purchase is used by the next send', async (t) => {
    const bought = await api('POST', '/purchases', buyer.session, { routeId: cheapId });
    t.equal(bought.status, 201);
    t.match((await send()).body.data, { status: 'sent', cost: '0.005500' }, 'cheapest first at once on this daemon');
    t.same(
      await eventually(async () => {
        const o = await otherOrder();
        return o.length === 2 ? o : null;
      }),
      [cheapId, w.routeId],
      'second instance',
    );
  });

  t.test('a routing order change is used by the next send', async (t) => {
    const order = await api('PUT', '/purchases/routing-order', buyer.session, { routeIds: [w.routeId, cheapId] });
    t.equal(order.status, 200, JSON.stringify(order.body));
    t.match((await send()).body.data, { status: 'sent', cost: '0.010500' }, 'ordered route first at once');
    t.same(
      await eventually(async () => {
        const o = await otherOrder();
        return o[0] === w.routeId ? o : null;
      }),
      [w.routeId, cheapId],
      'second instance',
    );
  });

  t.test('a cancelled purchase is not used by the next send', async (t) => {
    const purchases = await api('GET', '/purchases?status=active', buyer.session);
    const p = (purchases.body.data as { id: string; routeId: string }[]).find((x) => x.routeId === w.routeId)!;
    t.equal((await api('POST', `/purchases/${p.id}/cancel`, buyer.session)).status, 200);
    t.match((await send()).body.data, { status: 'sent', cost: '0.005500' }, 'only the other route at once');
    t.same(
      await eventually(async () => {
        const o = await otherOrder();
        return o.length === 1 ? o : null;
      }),
      [cheapId],
      'second instance',
    );
  });

  t.test('a delivery change is used by the next send', async (t) => {
    const closed = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const { port } = s.address() as { port: number };
        s.close(() => resolve(port));
      });
    });
    const changed = await api('POST', '/routes/my/bulk-sms-delivery', sellerSession, {
      // HTTPS to a closed port is refused at once (an SMPP bind would keep retrying while the send waits).
      routeIds: [cheapId],
      smsDelivery: { kind: 'http', url: `https://127.0.0.1:${closed}/sms` },
    });
    t.equal(changed.status, 200, JSON.stringify(changed.body));
    t.match((await send()).body.data, { status: 'failed', cost: '0.000000' }, 'the new (dead) delivery at once');
    const seen = await eventually(async () => {
      const [c] = await other.services.routing.candidatesFor({
        accountId: buyer.accountId,
        number: '12025550123',
        type: 'sms',
      });
      return c?.smsDelivery?.['url'] === `https://127.0.0.1:${closed}/sms` ? c : null;
    });
    t.equal(seen.routeId, cheapId, 'second instance');
  });

  t.test('a change made in SQL reaches both through NOTIFY', async (t) => {
    await h.sql`update routes set status = 'paused' where id = ${cheapId}`;
    const refused = await eventually(async () => {
      const r = await send();
      return r.status === 400 ? r : null;
    });
    t.match(refused.body, { error: { message: /No purchased or own SMS route/ } });
    t.same(await eventually(async () => ((await otherOrder()).length === 0 ? [] : null)), [], 'second instance');
  });
});
