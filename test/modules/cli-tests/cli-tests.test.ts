import { randomUUID } from 'node:crypto';
import { Decimal } from 'decimal.js';
import t from 'tap';
import { createWorld, eventually, loopingSupplier, type World } from '../sip-trunks/world.js';
import { available, refusingMany } from '../api-calls/peers.js';

/**
 * Caller-ID tests through the real daemon: the test call leaves over the exchange's SIP plane to a
 * supplier that sends it on to the handset's number, which is hosted on the exchange itself (a UDP
 * relay back to the exchange's SIP port), so the arriving INVITE's From is what the handset shows.
 */

async function adminSession(w: World): Promise<string> {
  const email = `${randomUUID()}@operator.test`;
  const password = 'correct horse battery staple 42';
  await w.d.modules.services.accounts.createAccount({ email, password, role: 'admin' });
  return (await w.d.modules.services.accounts.login(email, password, {})).accessToken;
}

const final = new Set(['completed', 'failed', 'not_tested', 'cancelled']);

async function waitTest(w: World, token: string, id: string) {
  return eventually(async () => {
    const r = await w.d.https('GET', `/cli-tests/${id}`, { token });
    return r.status === 200 && final.has(r.json.data.status) ? r.json.data : null;
  }, 30_000);
}

t.test(
  'caller-ID tests: observed caller ID, charge only when rang, batches, schedule',
  {
    skip: available ? false : 'sipp not installed',
  },
  async (t) => {
    const base = 45000 + (process.pid % 300) * 20;
    const w = await createWorld(t, {
      rtp: { port_min: base, port_max: base + 19, bind_address: '127.0.0.1' },
      cli_tests: { gap_seconds: 0, ring_ms: 500 },
    });
    const { d, operator } = w;
    const ledger = d.modules.services.ledger;
    const relay = await loopingSupplier(t, w.sipPort);
    const refuser = await refusingMany(t, 503, 'Service Unavailable');
    const good = await w.route({ port: relay.port, prefix: '4479', rate: '0.010000', increment: '1/1' });
    const bad = await w.route({ port: refuser.port, prefix: '4479', rate: '0.008000', increment: '1/1' });

    const token = operator.token;
    const off = await d.https('GET', '/cli-tests/availability', { token });
    t.same(off.json.data, { enabled: false }, 'no handset yet');
    t.same((await d.https('GET', '/cli-tests/countries', { token })).json.data, {
      countries: null,
      dialCodes: null,
      checkedAt: null,
    });

    const admin = await adminSession(w);
    t.equal(
      (await d.https('POST', '/operator/cli-handsets', { token, body: { number: '+447900000001', country: 'GB' } }))
        .status,
      403,
      'a customer cannot register handsets',
    );
    const h = await d.https('POST', '/operator/cli-handsets', {
      token: admin,
      body: { number: '+447900000001', country: 'GB', label: 'loopback handset' },
    });
    t.equal(h.status, 201, h.text);
    t.same((await d.https('GET', '/cli-tests/availability', { token })).json.data, { enabled: true });
    const online = (await d.https('GET', '/cli-tests/countries', { token })).json.data;
    t.same([online.countries, online.dialCodes], [['GB'], ['+44']]);

    const before = await ledger.balanceOf(operator.accountId);
    const created = await d.https('POST', '/cli-tests', {
      token,
      body: { routeId: good.routeId, displayCli: '+15550001234', testCountry: 'United Kingdom' },
    });
    t.equal(created.status, 201, created.text);
    t.equal(created.json.data.tests.length, 1);
    t.same(created.json.data.skippedTrunks, []);
    const ok = await waitTest(w, token, created.json.data.id);
    t.match(ok, {
      status: 'completed',
      reportedCli: '+15550001234',
      displayedCorrectly: true,
      rang: true,
      testNumber: '+447900000001',
      cost: '0.500000',
      failureCause: null,
    });
    t.ok(ok.ringMs >= 0, 'time to ringing recorded');
    t.ok(relay.invites() >= 1, 'the call went out to the supplier');
    const afterOne = await ledger.balanceOf(operator.accountId);
    t.equal(new Decimal(before.balance).minus(afterOne.balance).toFixed(6), '0.500000', 'charged 0.50 because it rang');

    const refused = await d.https('POST', '/cli-tests', {
      token,
      body: { routeId: bad.routeId, displayCli: '+15550001234', testCountry: 'GB' },
    });
    t.equal(refused.status, 201, refused.text);
    const no = await waitTest(w, token, refused.json.data.id);
    t.match(no, { status: 'failed', rang: false, sipCode: 503, failureCause: 'ROUTE_REFUSED', cost: '0.000000' });
    const afterTwo = await ledger.balanceOf(operator.accountId);
    t.equal(afterTwo.balance, afterOne.balance, 'a test that never rang costs nothing');

    // Batches: preview writes nothing; one running batch at a time.
    const preview = await d.https('POST', '/cli-tests/batches/preview', {
      token,
      body: { routeIds: [good.routeId, bad.routeId] },
    });
    t.equal(preview.status, 200, preview.text);
    t.match(preview.json.data, {
      enabled: true,
      testableCount: 2,
      minRoutes: 2,
      maxRoutes: 20,
      costPerTest: 0.5,
      maxCost: '1.00',
      runningBatchId: null,
      gapSeconds: 0,
    });
    t.match(preview.json.data.countries, [{ country: 'GB', routes: 2, handsets: 1, parallel: 1 }]);
    t.equal((await d.https('POST', '/cli-tests/batches', { token, body: { routeIds: [good.routeId] } })).status, 400);
    const batch = await d.https('POST', '/cli-tests/batches', {
      token,
      body: { routeIds: [good.routeId, bad.routeId], displayCli: '+15550009999' },
    });
    t.equal(batch.status, 201, batch.text);
    const second = await d.https('POST', '/cli-tests/batches', {
      token,
      body: { routeIds: [good.routeId, bad.routeId] },
    });
    t.equal(second.status, 409, 'one running batch at a time');
    t.equal(second.json.error.details.runningBatchId, batch.json.data.id);
    const done = await eventually(async () => {
      const r = await d.https('GET', `/cli-tests/batches/${batch.json.data.id}`, { token });
      return r.json.data.status === 'completed' ? r.json.data : null;
    }, 30_000);
    t.match(done.summary, { tests: 2, rang: 1, displayedCorrectly: 1, open: 0, totalCost: '0.500000' });
    t.equal(done.tests[0].route.country, 'GB');
    const afterBatch = await ledger.balanceOf(operator.accountId);
    t.equal(new Decimal(afterTwo.balance).minus(afterBatch.balance).toFixed(6), '0.500000', 'only the route that rang');
    const listed = await d.https('GET', '/cli-tests/batches', { token });
    t.equal(listed.json.data[0].id, batch.json.data.id);

    // A scheduled daily test: dispatched when due, the next run scheduled a day later, then cancelled.
    const at = new Date(Date.now() + 500).toISOString();
    const sched = await d.https('POST', '/cli-tests', {
      token,
      body: {
        routeId: good.routeId,
        displayCli: '+15550001234',
        testCountry: 'GB',
        scheduledAt: at,
        recurrence: 'daily',
      },
    });
    t.equal(sched.json.data.status, 'scheduled');
    await new Promise((r) => setTimeout(r, 700));
    await d.modules.services.cliTests.dispatchDue();
    const ran = await waitTest(w, token, sched.json.data.id);
    t.equal(ran.status, 'completed');
    const next = await eventually(async () => {
      const r = await d.https('GET', '/cli-tests?status=scheduled', { token });
      return r.json.data[0] ?? null;
    });
    t.equal(new Date(next.scheduledAt).getTime() - new Date(at).getTime(), 86_400_000, 'the next run a day later');
    t.match(next.route, { country: 'GB' });
    const cancelled = await d.https('POST', `/cli-tests/${next.id}/cancel`, { token });
    t.equal(cancelled.json.data.status, 'cancelled');
    t.equal((await d.https('POST', `/cli-tests/${next.id}/cancel`, { token })).status, 409);

    const quota = await d.https('GET', '/cli-tests/quota', { token });
    t.match(quota.json.data, { costPerTest: 0.5, usedThisHour: 5, limitPerHour: 30, remaining: 25 });

    // Test keys simulate; list reads are for full-access credentials only.
    const testKey = await d.modules.services.keys.create(operator.accountId, {
      mode: 'test',
      scopes: ['dialer:write'],
    });
    const sim = await d.https('POST', '/cli-tests', {
      token: testKey.secret,
      body: { routeId: good.routeId, displayCli: '+15550001234', testCountry: 'GB' },
    });
    t.equal(sim.status, 201, sim.text);
    t.match(await waitTest(w, testKey.secret, sim.json.data.id), { status: 'completed', cost: '0.000000' });
    t.equal((await d.https('GET', '/cli-tests', { token: testKey.secret })).status, 403);

    // A blend of the two bought routes is tested member by member, each test carrying the blend.
    const blend = await d.https('POST', '/routes/blends', {
      token,
      body: {
        type: 'voice',
        name: 'UK pair',
        strategy: 'priority',
        members: [{ routeId: good.routeId }, { routeId: bad.routeId }],
      },
    });
    t.equal(blend.status, 201, blend.text);
    const blendId = blend.json.data.id as string;
    const perMember = await d.https('POST', '/cli-tests', {
      token: testKey.secret,
      body: { blendRouteId: blendId, displayCli: '+15550001234', testCountry: 'GB' },
    });
    t.equal(perMember.status, 201, perMember.text);
    t.same(
      perMember.json.data.tests.map((x: { routeId: string; blendRouteId: string }) => [x.routeId, x.blendRouteId]),
      [
        [good.routeId, blendId],
        [bad.routeId, blendId],
      ],
      'one test per member, in member order',
    );
    for (const x of perMember.json.data.tests as { id: string }[]) {
      t.match(await waitTest(w, testKey.secret, x.id), { status: 'completed', cost: '0.000000' });
    }
    const notOwner = await d.https('POST', '/cli-tests', {
      token: w.seller.token,
      body: { blendRouteId: blendId, displayCli: '+15550001234', testCountry: 'GB' },
    });
    t.equal(notOwner.status, 404, "another account cannot see the operator's private blend");
    const [sum] = await d.sql<{ s: string }[]>`select coalesce(sum(amount), 0)::text as s from entries`;
    t.equal(Number(sum!.s), 0, 'the ledger balances');
  },
);
