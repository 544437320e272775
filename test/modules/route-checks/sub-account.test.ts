import { randomUUID } from 'node:crypto';
import { Decimal } from 'decimal.js';
import t from 'tap';
import { checkInvariants } from '../../ledger/helpers.js';
import { createWorld, eventually, loopingSupplier, type World } from '../sip-trunks/world.js';
import { available, expectedCost } from '../api-calls/peers.js';
import { testLine } from './peers.js';

/**
 * A sub-account (Application Manager) checks a route and tests a caller ID with its own API key,
 * over the daemon's SIP plane: a sipp test line answers the check call, the caller-ID test comes
 * back in to a handset hosted on the exchange. The sub-account has a markup of its own (25%) and a
 * markup per route (40% on the checked route, 10% on the tested one): what it pays, what its operator
 * earns and what the seller gets are read back from the ledger to the sixth decimal.
 */

async function adminSession(w: World): Promise<string> {
  const email = `${randomUUID()}@operator.test`;
  const password = 'correct horse battery staple 42';
  await w.d.modules.services.accounts.createAccount({ email, password, role: 'admin' });
  return (await w.d.modules.services.accounts.login(email, password, {})).accessToken;
}

const m6 = (d: Decimal.Value) => new Decimal(d).toDecimalPlaces(6, Decimal.ROUND_HALF_UP).toFixed(6);

t.test(
  "a sub-account's route check and caller-ID test carry its markup on each route",
  { skip: available ? false : 'sipp not installed' },
  async (t) => {
    const base = 47000 + (process.pid % 300) * 20;
    const w = await createWorld(t, {
      rtp: { port_min: base, port_max: base + 19, bind_address: '127.0.0.1' },
      cli_tests: { gap_seconds: 0, ring_ms: 500 },
    });
    const { d, operator, seller } = w;
    const ledger = d.modules.services.ledger;
    const app = d.modules.services.application;

    const line = await testLine(t, '447300000001');
    const relay = await loopingSupplier(t, w.sipPort);
    const checked = await w.route({ port: line.port, prefix: '4473', rate: '0.012000', increment: '1/1' });
    const tested = await w.route({ port: relay.port, prefix: '4479', rate: '0.010000', increment: '1/1' });
    const admin = await adminSession(w);
    const lineAdded = await d.https('POST', '/operator/route-test-lines', {
      token: admin,
      body: { number: '+447300000001', country: 'GB', lineType: 'mobile' },
    });
    t.equal(lineAdded.status, 201, lineAdded.text);
    const handset = await d.https('POST', '/operator/cli-handsets', {
      token: admin,
      body: { number: '+447900000001', country: 'GB' },
    });
    t.equal(handset.status, 201, handset.text);

    const sub = await app.create(operator.accountId, { label: 'reseller customer', markupPct: '25' });
    for (const [routeId, markupPct] of [
      [checked.routeId, '40'],
      [tested.routeId, '10'],
    ] as const) {
      const put = await w.api('PUT', `/application/sub-accounts/${sub.id}/route-markups/${routeId}`, operator.token, {
        markupPct,
      });
      t.equal(put.status, 200, put.text);
    }
    const { secret } = await d.modules.services.keys.create(sub.id, {
      mode: 'live',
      scopes: ['voice:send', 'routes:read', 'dialer:write'],
    });
    const fund = (amount: string) => app.credit(operator.accountId, sub.id, { amount }, `fund-${sub.id}-${amount}`);

    // The price a sub-account is shown is its price with markup: 0.50 + 25%, or + 10% on its tested route.
    const quota = await d.https('GET', '/cli-tests/quota', { token: secret });
    t.equal(quota.status, 200, quota.text);
    t.equal(quota.json.data.costPerTest, 0.625, 'the sub-account price with its own markup');
    const onRoute = await d.https('GET', `/cli-tests/quota?routeId=${tested.routeId}`, { token: secret });
    t.equal(onRoute.json.data.costPerTest, 0.55, 'with its markup on that route');
    const opQuota = await d.https('GET', '/cli-tests/quota', { token: operator.token });
    t.equal(opQuota.json.data.costPerTest, 0.5, 'an account that is not a sub-account pays the price');

    // The balance checks price with the markup. A 2 s check leg costs 0.000467, 0.000654 with 40%:
    // 0.000600 would fund it without the markup, not with it.
    await fund('0.000600');
    const short = await d.https('POST', '/routes/check', {
      token: secret,
      headers: { 'x-idempotency-key': `sub-rc-short-${process.pid}` },
      body: { routeIds: [checked.routeId] },
    });
    t.equal(short.status, 400, short.text);
    t.match(short.json.error.message, /^Insufficient balance: this check may cost 0\.000654/);
    // 0.520000 pays a test at 0.50, not at 0.55.
    await fund('0.519400');
    const shortCli = await d.https('POST', '/cli-tests', {
      token: secret,
      body: { routeId: tested.routeId, displayCli: '+15550001234', testCountry: 'GB' },
    });
    t.equal(shortCli.status, 400, shortCli.text);
    t.match(shortCli.json.error.message, /^Insufficient balance: 1 caller-ID test\(s\) may cost 0\.550000/);
    await fund('4.480000');
    t.equal((await ledger.balanceOf(sub.id)).balance, '5.000000');
    const operatorBefore = await ledger.balanceOf(operator.accountId);

    // The route check: answered by the test line, held about two seconds.
    const started = await d.https('POST', '/routes/check', {
      token: secret,
      headers: { 'x-idempotency-key': `sub-rc-${process.pid}` },
      body: { routeIds: [checked.routeId] },
    });
    t.equal(started.status, 202, started.text);
    const check = await eventually(async () => {
      const r = await d.https('GET', `/routes/check/${started.json.data.checkId}`, { token: secret });
      return r.status === 200 && r.json.data.status === 'done' ? r.json.data : null;
    }, 40_000);
    const [leg] = check.routes;
    t.match(leg, { result: 'working', answered: true, paidFrom: 'balance', ownRoute: false });
    const billed = leg.billableSeconds as number;
    t.ok(billed >= 2, `held ${billed} s`);
    const price = expectedCost(billed, '0.012000');
    const checkMarkup = m6(new Decimal(price).times('0.40'));
    const checkSeller = m6(new Decimal('0.012000').times(billed).div(60));
    t.equal(leg.cost, m6(new Decimal(price).plus(checkMarkup)), 'price plus the 40% route markup');

    // The caller-ID test: rings the handset, 0.50 plus the 10% route markup.
    const created = await d.https('POST', '/cli-tests', {
      token: secret,
      body: { routeId: tested.routeId, displayCli: '+15550001234', testCountry: 'GB' },
    });
    t.equal(created.status, 201, created.text);
    const cli = await eventually(async () => {
      const r = await d.https('GET', `/cli-tests/${created.json.data.id}`, { token: secret });
      return r.status === 200 && r.json.data.status === 'completed' ? r.json.data : null;
    }, 30_000);
    t.match(cli, { rang: true, reportedCli: '+15550001234', displayedCorrectly: true, cost: '0.550000' });
    t.ok(relay.invites() >= 1, 'the test call went out through the supplier');

    const subAfter = await ledger.balanceOf(sub.id);
    t.equal(
      m6(new Decimal('5.000000').minus(subAfter.balance)),
      m6(new Decimal(leg.cost).plus('0.550000')),
      'the sub-account paid the check and the test with their markups',
    );
    t.equal(subAfter.held, '0.000000', 'no hold left');
    const operatorAfter = await ledger.balanceOf(operator.accountId);
    t.equal(
      m6(new Decimal(operatorAfter.payable).minus(operatorBefore.payable)),
      m6(new Decimal(checkMarkup).plus('0.050000')),
      'the operator earned both markups',
    );
    t.equal(operatorAfter.balance, operatorBefore.balance, "the operator's own balance paid nothing");
    t.equal((await ledger.balanceOf(seller.accountId)).payable, checkSeller, 'the seller got its rate for the check');
    const [fee] = await d.sql<{ s: string }[]>`
      select coalesce(sum(amount), 0)::text as s from entries
      where account_kind in ('platform_revenue', 'platform_fee') and related_entity_id in (${check.id}, ${cli.id})`;
    t.equal(
      m6(fee!.s),
      m6(new Decimal(price).minus(checkSeller).plus('0.500000')),
      'the platform kept its fee and the test price',
    );
    await checkInvariants(t, d.sql);
  },
);
