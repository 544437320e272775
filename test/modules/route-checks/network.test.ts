import { randomUUID } from 'node:crypto';
import { Decimal } from 'decimal.js';
import t from 'tap';
import { createWorld, eventually, type World } from '../sip-trunks/world.js';
import { available, expectedCost, refusing } from '../api-calls/peers.js';
import { falseAnswerer, ringing, testLine } from './peers.js';

/**
 * Route checks through the real daemon: check calls over its SIP plane to sipp peers (a test line
 * answering after about two seconds of ringing, a false answerer, a refusing route, a route that
 * rings until cancelled), money read back from the ledger to the sixth decimal.
 */

async function operatorSession(w: World): Promise<string> {
  const email = `${randomUUID()}@operator.test`;
  const password = 'correct horse battery staple 42';
  await w.d.modules.services.accounts.createAccount({ email, password, role: 'admin' });
  return (await w.d.modules.services.accounts.login(email, password, {})).accessToken;
}

async function waitDone(w: World, token: string, checkId: string) {
  return eventually(async () => {
    const r = await w.d.https('GET', `/routes/check/${checkId}`, { token });
    return r.status === 200 && r.json.data.status === 'done' ? r.json.data : null;
  }, 40_000);
}

async function ledgerBalances(w: World) {
  const [sum] = await w.d.sql<{ s: string }[]>`select coalesce(sum(amount), 0)::text as s from entries`;
  return new Decimal(sum!.s);
}

t.test(
  'network check: a test line answered and billed, a false answer and a refusal free',
  {
    skip: available ? false : 'sipp not installed',
  },
  async (t) => {
    const base = 43000 + (process.pid % 300) * 20;
    const w = await createWorld(t, { rtp: { port_min: base, port_max: base + 19, bind_address: '127.0.0.1' } });
    const { d, operator } = w;
    const line = await testLine(t, '447300000001');
    const fa = await falseAnswerer(t, '447300000001');
    // Alive as long as the test line: under load the set-up before the check outlasted sipp's 15 s.
    const ref = await refusing(t, 503, 'Service Unavailable', false, '60s');
    const r1 = await w.route({ port: line.port, prefix: '4473', rate: '0.012000', increment: '1/1' });
    const r2 = await w.route({ port: fa.port, prefix: '4473', rate: '0.010000', increment: '1/1' });
    const r3 = await w.route({ port: ref.port, prefix: '4473', rate: '0.009000', increment: '1/1' });

    // The operator registers the line; a customer may not.
    const admin = await operatorSession(w);
    const denied = await d.https('POST', '/operator/route-test-lines', {
      token: operator.token,
      body: { number: '+447300000001', country: 'GB', lineType: 'mobile' },
    });
    t.equal(denied.status, 403, 'a customer cannot register test lines');
    const added = await d.https('POST', '/operator/route-test-lines', {
      token: admin,
      body: { number: '+447300000001', country: 'GB', lineType: 'mobile', label: 'loopback line' },
    });
    t.equal(added.status, 201, added.text);
    t.equal(added.json.data.number, '+447300000001');

    const { secret } = await d.modules.services.keys.create(operator.accountId, {
      mode: 'live',
      scopes: ['voice:send', 'routes:read', 'purchases:write'],
    });
    const cov = await d.https('GET', `/routes/check/coverage?routeIds=${r1.routeId},${r3.routeId}&number=4474`, {
      token: secret,
    });
    t.equal(cov.status, 200, cov.text);
    t.same(cov.json.data, [
      { routeId: r1.routeId, testLine: false },
      { routeId: r3.routeId, testLine: false },
    ]);
    const cov2 = await d.https('GET', `/routes/check/coverage?routeIds=${r1.routeId}`, { token: secret });
    t.same(cov2.json.data, [{ routeId: r1.routeId, testLine: true }], 'the GB line covers the GB route');

    // A little test credit, less than the call costs: the leg is paid from both (mixed).
    const ledger = d.modules.services.ledger;
    await ledger.grantTestCredit({
      postingKey: `tc-${operator.accountId}`,
      accountId: operator.accountId,
      amount: '0.000100',
    });
    const before = await ledger.balanceOf(operator.accountId);

    const started = await d.https('POST', '/routes/check', {
      token: secret,
      headers: { 'x-idempotency-key': `rc-${process.pid}` },
      body: { routeIds: [r1.routeId, r2.routeId, r3.routeId] },
    });
    t.equal(started.status, 202, started.text);
    const checkId = started.json.data.checkId as string;
    const check = await waitDone(w, secret, checkId);
    t.equal(check.mode, 'network');
    t.equal(check.simulated, false);
    const [a, b, c] = check.routes;

    t.match(a, { position: 0, role: 'primary', routeId: r1.routeId, result: 'working', checkType: 'full' });
    t.match(a, {
      rang: true,
      answered: true,
      lineType: 'mobile',
      sipCode: 200,
      ownRoute: false,
      destination: 'UK test',
    });
    t.ok(a.answerMs >= 1500, `answered after ${a.answerMs} ms`);
    t.ok(a.billableSeconds >= 2, 'held about two seconds');
    t.equal(
      a.cost,
      expectedCost(a.billableSeconds, '0.012000'),
      'route rate plus platform fee for the billable seconds',
    );
    t.equal(a.paidFrom, 'mixed', 'test credit first, then balance');

    t.match(b, {
      position: 1,
      role: 'backup',
      routeId: r2.routeId,
      result: 'false_answer',
      answered: true,
      rang: false,
    });
    t.equal(b.cost, '0.000000', 'a suspected false answer costs nothing');
    t.equal(b.paidFrom, null);
    t.match(c, { position: 2, routeId: r3.routeId, result: 'no_capacity', sipCode: 503, answered: false });
    t.equal(c.cost, '0.000000', 'an unanswered leg costs nothing');
    t.equal(check.totalCost, a.cost);
    t.same(check.working, [r1.routeId]);

    const after = await ledger.balanceOf(operator.accountId);
    t.equal(after.testCredit, '0.000000', 'the test credit was used first');
    t.equal(
      new Decimal(before.balance).minus(after.balance).toFixed(6),
      new Decimal(a.cost).minus('0.000100').toFixed(6),
      'the balance paid the rest to the sixth decimal',
    );
    t.equal(after.held, before.held, 'no hold left');
    t.equal((await ledgerBalances(w)).toFixed(6), '0.000000', 'the ledger balances');

    // The results feed the seller's listing health (who checked is not kept).
    const health = await d.https('GET', '/routes/my/listing-health', { token: w.seller.token });
    t.equal(health.status, 200, health.text);
    const checksOf = (routeId: string) =>
      health.json.data.listings.find((l: { routeId: string }) => l.routeId === routeId).checks;
    t.match(checksOf(r1.routeId), { checks: 1, passed: 1, calls: { checks: 1, passed: 1 } }, 'working: passed');
    t.match(checksOf(r2.routeId), { checks: 1, passed: 0 }, 'a false answer: failed');
    t.match(checksOf(r3.routeId), { checks: 1, passed: 0, sms: { checks: 0 } }, 'a refusal: failed');

    // The same key returns the first check and places no second call.
    const replay = await d.https('POST', '/routes/check', {
      token: secret,
      headers: { 'x-idempotency-key': `rc-${process.pid}` },
      body: { routeIds: [r1.routeId, r2.routeId, r3.routeId] },
    });
    t.equal(replay.json.data.checkId, checkId, 'idempotent replay');

    const list = await d.https('GET', '/routes/checks?limit=5', { token: secret });
    t.equal(list.status, 200, list.text);
    t.equal(list.json.data[0].id, checkId);
    t.equal(list.json.hasMore, false);

    // The routes that passed are bought (already were) and go to the top of the routing order.
    const bought = await d.https('POST', `/routes/check/${checkId}/purchase`, { token: secret });
    t.equal(bought.status, 200, bought.text);
    t.same(
      bought.json.data.purchased.map((p: { routeId: string; created: boolean }) => [p.routeId, p.created]),
      [[r1.routeId, false]],
    );
    t.equal(bought.json.data.routingOrder[0].routeId, r1.routeId, 'primary first');

    // Another account cannot see the check.
    const other = await w.signUp();
    t.equal((await d.https('GET', `/routes/check/${checkId}`, { token: other.token })).status, 404);
  },
);

t.test(
  'light check, ring-me and its per-number limit',
  { skip: available ? false : 'sipp not installed' },
  async (t) => {
    const base = 44000 + (process.pid % 300) * 20;
    const w = await createWorld(t, {
      rtp: { port_min: base, port_max: base + 19, bind_address: '127.0.0.1' },
      route_checks: { ring_me_ring_ms: 2000 },
    });
    const { d, operator } = w;
    const peer = await ringing(t, '447400000009');
    const r = await w.route({ port: peer.port, prefix: '4474', rate: '0.020000', increment: '1/1' });
    const { secret } = await d.modules.services.keys.create(operator.accountId, {
      mode: 'live',
      scopes: ['voice:send', 'routes:read'],
    });
    const before = await d.modules.services.ledger.balanceOf(operator.accountId);

    // No test line covers 4474: a light check to the given number, cancelled at the first ring.
    const light = await d.https('POST', '/routes/check', {
      token: secret,
      body: { routeIds: [r.routeId], number: '+447400000009' },
    });
    t.equal(light.status, 202, light.text);
    const lc = await waitDone(w, secret, light.json.data.checkId);
    t.match(lc.routes[0], { result: 'accepts', checkType: 'light', rang: true, answered: false, cost: '0.000000' });
    t.ok(lc.routes[0].pddMs >= 0, 'time to first ring measured');
    t.same(lc.working, [r.routeId]);

    for (let i = 0; i < 3; i++) {
      const res = await d.https('POST', '/routes/check', {
        token: secret,
        body: { routeIds: [r.routeId], number: '+447400000009', mode: 'ring_me' },
      });
      t.equal(res.status, 202, res.text);
      const rc = await waitDone(w, secret, res.json.data.checkId);
      t.match(rc.routes[0], { result: 'working', checkType: 'ring_me', rang: true, answered: false, cost: '0.000000' });
      t.equal(rc.mode, 'ring_me');
      t.equal(rc.number, '+447400000009');
    }
    const fourth = await d.https('POST', '/routes/check', {
      token: secret,
      body: { routeIds: [r.routeId], number: '+447400000009', mode: 'ring_me' },
    });
    t.equal(fourth.status, 429, 'a number is rung 3 times an hour at most');
    t.equal(fourth.json.error.code, 'RATE_LIMITED');
    t.ok(Number(fourth.headers['retry-after']) > 0);

    const premium = await d.https('POST', '/routes/check', {
      token: secret,
      body: { routeIds: [r.routeId], number: '+449098790000', mode: 'ring_me' },
    });
    t.equal(premium.status, 400);
    t.match(premium.json.error.message, /Premium-rate/);

    const after = await d.modules.services.ledger.balanceOf(operator.accountId);
    t.equal(after.balance, before.balance, 'nothing was answered, nothing was billed');
    const limits = await d.https('GET', '/routes/check/limits', { token: secret });
    t.equal(limits.status, 200, limits.text);
    t.equal(limits.json.data.ringMe.numbersUsedToday, 1);
  },
);

t.test('test keys simulate at once; 10 checks a minute per account', async (t) => {
  const w = await createWorld(t);
  const { d } = w;
  const r = await w.route({ port: 5999, prefix: '4475', rate: '0.010000' });
  const buyer = await w.signUp();
  const { secret } = await d.modules.services.keys.create(buyer.accountId, {
    mode: 'test',
    scopes: ['voice:send', 'routes:read'],
  });
  const ids = new Set<string>();
  for (let i = 0; i < 10; i++) {
    const res = await d.https('POST', '/routes/check', {
      token: secret,
      headers: { 'x-idempotency-key': `sim-${i}` },
      body: { routeIds: [r.routeId], number: '+447500000001' },
    });
    t.equal(res.status, 202, res.text);
    ids.add(res.json.data.checkId);
  }
  t.equal(ids.size, 10);
  const one = await d.https('GET', `/routes/check/${[...ids][0]}`, { token: secret });
  t.match(one.json.data, { status: 'done', simulated: true, totalCost: '0.000000' });
  t.match(one.json.data.routes[0], { checkType: 'simulated', result: 'accepts', cost: '0.000000', ownRoute: false });
  const over = await d.https('POST', '/routes/check', {
    token: secret,
    headers: { 'x-idempotency-key': 'sim-over' },
    body: { routeIds: [r.routeId] },
  });
  t.equal(over.status, 429, 'the eleventh check in a minute is refused');
  t.ok(Number(over.headers['retry-after']) > 0);

  // A live key without balance is refused before anything is dialled.
  const live = await d.modules.services.keys.create(buyer.accountId, { mode: 'live', scopes: ['voice:send'] });
  const broke = await d.https('POST', '/routes/check', { token: live.secret, body: { routeIds: [r.routeId] } });
  t.equal(broke.status, 400);
  t.match(broke.json.error.message, /^Insufficient balance/);
  const missing = await d.https('POST', '/routes/check', { token: live.secret, body: { routeIds: [randomUUID()] } });
  t.equal(missing.status, 404);
});

t.test('a route blend is never route-checked: its member routes are', async (t) => {
  const w = await createWorld(t);
  const { d } = w;
  const a = await w.route({ port: 5998, prefix: '4476', rate: '0.010000' });
  const b = await w.route({ port: 5997, prefix: '4476', rate: '0.011000' });
  const blend = await w.api('POST', '/routes/blends', w.seller.token, {
    type: 'voice',
    name: 'Two UK routes',
    visibility: 'public',
    strategy: 'priority',
    members: [{ routeId: a.routeId }, { routeId: b.routeId }],
  });
  t.equal(blend.status, 201, blend.text);
  const blendId = blend.body.data.id as string;
  const key = await d.modules.services.keys.create(w.operator.accountId, { mode: 'live', scopes: ['voice:send'] });
  const refused = await d.https('POST', '/routes/check', {
    token: key.secret,
    body: { routeIds: [a.routeId, blendId], number: '+447600000001' },
  });
  t.equal(refused.status, 400, refused.text);
  t.match(refused.json.error, { code: 'VALIDATION_ERROR', message: /is a route blend/ });
  const [checks] = await d.sql<{ n: number }[]>`select count(*)::int as n from route_checks`;
  t.equal(checks!.n, 0, 'nothing was started for the refused check');
  t.equal((await d.modules.services.ledger.balanceOf(w.operator.accountId)).held, '0.000000', 'nothing held');
});
