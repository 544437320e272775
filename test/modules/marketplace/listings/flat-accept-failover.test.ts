import t from 'tap';
import { bearer, buildTestApp } from '../../../helpers/app.js';
import { createManualClock } from '../../../../src/platform/clock.js';

const START = new Date('2026-11-22T00:00:00Z');
const DAY = 86_400_000;

const voiceRoute = (name: string, extra: Record<string, unknown> = {}) => ({
  type: 'voice',
  name,
  country: 'GB',
  expectedAsr: 50,
  expectedAcd: 120,
  expectedPdd: 2000,
  billingIncrement: '60/60',
  noticeDays: 7,
  endpoints: [{ host: '192.0.2.10', port: 5060, transport: 'udp' }],
  ...extra,
});

t.test('flat rate changes, early acceptance, failover per destination', async (t) => {
  const clock = createManualClock(START);
  const h = await buildTestApp(t, { clock });
  const seller = await h.signUp();
  const seller2 = await h.signUp();
  const buyer = await h.signUp();
  const other = await h.signUp();
  const call = async (method: string, url: string, token: string, payload?: unknown) => {
    const r = await h.app.inject({
      method: method as 'GET',
      url: `/api/v1${url}`,
      headers: bearer(token),
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    return { status: r.statusCode, body: r.json() as { success: boolean; data: any; error: any } }; // eslint-disable-line @typescript-eslint/no-explicit-any
  };
  const route = async (token: string, name: string, csv: string, extra: Record<string, unknown> = {}) => {
    const r = await call('POST', '/routes', token, voiceRoute(name, extra));
    t.equal(r.status, 201);
    const up = await call('POST', `/routes/${r.body.data.id}/rates`, token, {
      format: 'csv',
      csv: `prefix,destination,rate,increment\n${csv}`,
    });
    t.equal(up.status, 200, JSON.stringify(up.body));
    return r.body.data.id as string;
  };
  const a = await route(seller.session, 'A', '44,UK,0.010000,60/60\n447,UK Mobile,0.020000,1/1\n');
  const b = await route(seller2.session, 'B', '44,UK,0.012000,60/60\n', { expectedAsr: 90 });
  const rates = async (id: string) =>
    Object.fromEntries(
      (await call('GET', `/routes/${id}/rates`, seller.session)).body.data.rows.map(
        (r: { prefix: string; rate: string }) => [r.prefix, r.rate],
      ),
    );

  // --- flat change: decreases at once
  t.equal(
    (await call('POST', `/routes/${a}/rate-changes/flat`, seller.session, { amount: '0.001', percent: 5 })).status,
    400,
    'one of amount or percent',
  );
  t.equal((await call('POST', `/routes/${a}/rate-changes/flat`, seller.session, {})).status, 400);
  t.equal(
    (await call('POST', `/routes/${a}/rate-changes/flat`, seller2.session, { amount: '0.001' })).status,
    404,
    'own routes only',
  );
  const neg = await call('POST', `/routes/${a}/rate-changes/flat`, seller.session, { amount: '-0.015' });
  t.equal(neg.status, 400, 'no negative rates');
  t.match(neg.body.error.message, /prefix 44 negative/);
  const down = await call('POST', `/routes/${a}/rate-changes/flat`, seller.session, { percent: -10 });
  t.equal(down.status, 200, JSON.stringify(down.body));
  t.match(down.body.data, { rows: 2, decreases: 2, increases: 0, scheduledChanges: 0 });
  t.same(await rates(a), { 44: '0.009000', 447: '0.018000' }, 'decreases apply at once, rounded to 6 places');

  // --- flat increase obeys notice: at increaseEffectiveAt, not before
  const at = new Date(START.getTime() + 2 * DAY).toISOString();
  const up = await call('POST', `/routes/${a}/rate-changes/flat`, seller.session, {
    amount: '0.000500',
    increaseEffectiveAt: at,
  });
  t.match(up.body.data, { increases: 2, scheduledChanges: 2 });
  t.same(await rates(a), { 44: '0.009000', 447: '0.018000' }, 'increase not yet in force');
  const changes = (await call('GET', `/routes/${a}/rate-changes`, seller.session)).body.data;
  t.same(
    changes.map((c: { prefix: string; newRate: string; effectiveAt: string }) => [c.prefix, c.newRate, c.effectiveAt]),
    [
      ['44', '0.009500', at],
      ['447', '0.018500', at],
    ],
  );

  // --- buyer accepts early
  const p = (await call('POST', '/purchases', buyer.session, { routeId: a })).body.data;
  const pb = (await call('POST', '/purchases', buyer.session, { routeId: b })).body.data;
  let upcoming = (await call('GET', `/purchases/${p.id}/upcoming-rate-changes`, buyer.session)).body.data;
  t.same(
    upcoming.map((c: { acceptedAt: string | null }) => c.acceptedAt),
    [null, null],
  );
  const one = await call('POST', `/purchases/${p.id}/accept-rate`, buyer.session, { changeId: changes[0].id });
  t.equal(one.status, 200, JSON.stringify(one.body));
  t.same(one.body.data.accepted, [{ changeId: changes[0].id, acceptedAt: START.toISOString() }]);
  t.equal(
    (await call('POST', `/purchases/${pb.id}/accept-rate`, buyer.session, { changeId: changes[0].id })).status,
    404,
    'a change of another route',
  );
  t.equal(
    (await call('POST', `/purchases/${p.id}/accept-rate`, other.session, {})).status,
    404,
    "not the caller's purchase",
  );
  clock.advance(60_000);
  const all = await call('POST', `/purchases/${p.id}/accept-rate`, buyer.session);
  t.equal(all.status, 200, JSON.stringify(all.body));
  t.same(
    all.body.data.accepted.map((x: { acceptedAt: string }) => x.acceptedAt),
    [START.toISOString(), new Date(START.getTime() + 60_000).toISOString()],
    'first acceptance time kept',
  );
  upcoming = (await call('GET', `/purchases/${p.id}/upcoming-rate-changes`, buyer.session)).body.data;
  t.ok(upcoming.every((c: { acceptedAt: string | null }) => c.acceptedAt !== null));
  t.same(await rates(a), { 44: '0.009000', 447: '0.018000' }, 'acceptance does not move the price');

  // --- failover: per prefix, routing order first, then strategy
  const fo = await call('GET', '/purchases/failover', buyer.session);
  t.equal(fo.status, 200, JSON.stringify(fo.body));
  t.equal(fo.body.data.total, 2);
  const [r44, r447] = fo.body.data.rows;
  t.equal(r44.prefix, '44');
  t.same([r44.first.routeId, ...r44.backups.map((x: { routeId: string }) => x.routeId)], [a, b], 'cheapest first');
  t.equal(r44.first.price, '0.011000', 'seller rate plus the 0.002 fee');
  t.equal(r447.prefix, '447');
  t.same([r447.first.routeId, r447.backups[0].routeId], [b, a], 'B covers 447 through 44 and is cheaper there');
  t.equal(r447.first.matchedPrefix, '44');
  const quality = await call('GET', '/purchases/failover?strategy=best_quality&prefix=447', buyer.session);
  t.same(
    quality.body.data.rows.map((r: { prefix: string }) => r.prefix),
    ['447'],
  );
  t.equal(quality.body.data.rows[0].first.routeId, b);
  await call('PATCH', `/purchases/${p.id}/routing-priority`, buyer.session, { priority: 1 });
  const ordered = await call('GET', '/purchases/failover?prefix=447', buyer.session);
  t.equal(ordered.body.data.rows[0].first.routeId, a, 'routing order wins');
  t.match(ordered.body.data.rows[0].first.reason, /routing order/);
  t.equal(
    (await call('GET', '/purchases/failover', other.session)).body.data.total,
    0,
    'nothing bought, nothing listed',
  );
});
