import { randomUUID } from 'node:crypto';
import { Decimal } from 'decimal.js';
import t from 'tap';
import { checkInvariants } from '../../ledger/helpers.js';
import { available, expectedCost } from '../api-calls/peers.js';
import { testLine } from '../route-checks/peers.js';
import { createWorld, eventually, type World } from '../sip-trunks/world.js';
import { switchCustomer } from './customer.js';

/**
 * A Switch customer's route check (POST /routes/check with its own key, the daemon's SIP plane
 * calling a sipp test line) is billed at its sell rate as its calls are (docs/switch.md "The deck
 * applies"), and a route above that rate is refused before anything is dialled or charged.
 *
 * Money: the route's seller rate 0.012000 → price 0.014000/min (fee 0.002000) in 1/1 blocks; the
 * customer's markup is 25 %, but its sell rate for 4473 is 0.030000/min in 60/60: the check's leg,
 * held about two seconds, costs 0.030000, and the operator earns 0.030000 − the route's cost.
 */

async function adminSession(w: World): Promise<string> {
  const email = `${randomUUID()}@operator.test`;
  const password = 'correct horse battery staple 42';
  await w.d.modules.services.accounts.createAccount({ email, password, role: 'admin' });
  return (await w.d.modules.services.accounts.login(email, password, {})).accessToken;
}

t.test(
  "a Switch customer's route check: its sell rate, and no route above it",
  { skip: available ? false : 'sipp not installed' },
  async (t) => {
    const base = 45000 + (process.pid % 300) * 20;
    const w = await createWorld(t, { rtp: { port_min: base, port_max: base + 19, bind_address: '127.0.0.1' } });
    const { d, operator, seller } = w;
    const services = d.modules.services;
    const ledger = services.ledger;

    const line = await testLine(t, '447300000001');
    const checked = await w.route({ port: line.port, prefix: '4473', rate: '0.012000', increment: '1/1' });
    // Never dialled: the customer's sell rate for 4474 is below its price.
    const dear = await w.route({ port: 9, prefix: '4474', rate: '0.012000', increment: '1/1' });
    const admin = await adminSession(w);
    for (const number of ['+447300000001', '+447400000001']) {
      const added = await d.https('POST', '/operator/route-test-lines', {
        token: admin,
        body: { number, country: 'GB', lineType: 'mobile' },
      });
      t.equal(added.status, 201, added.text);
    }

    const customer = await switchCustomer(w, { label: 'check customer', credit: '5.000000' });
    const { secret } = await services.keys.create(customer.id, { mode: 'live', scopes: ['voice:send', 'routes:read'] });
    const sell = await w.api('POST', `/switch/customers/${customer.id}/sell-rates`, operator.token, {
      kind: 'voice',
      rows: [
        { prefix: '4473', destination: 'UK mobile', rate: '0.03', billingIncrement: '60/60' },
        { prefix: '4474', destination: 'UK mobile', rate: '0.01' },
      ],
    });
    t.equal(sell.status, 200, sell.text);
    const check = (routeId: string, key: string) =>
      d.https('POST', '/routes/check', {
        token: secret,
        headers: { 'x-idempotency-key': `${key}-${process.pid}` },
        body: { routeIds: [routeId] },
      });

    await t.test('a route above the sell rate: 400 SELL_RATE_BELOW_COST, nothing charged', async (t) => {
      const before = await ledger.balanceOf(customer.id);
      const res = await check(dear.routeId, 'switch-rc-dear');
      t.equal(res.status, 400, res.text);
      t.equal(res.json.error.code, 'VALIDATION_ERROR');
      t.same(res.json.error.details, { code: 'SELL_RATE_BELOW_COST' });
      t.same(await ledger.balanceOf(customer.id), before);
      t.equal((await d.sql`select 1 from route_checks where account_id = ${customer.id}`).length, 0, 'no check row');
    });

    await t.test('the check leg costs the sell rate; the operator earns sell − cost', async (t) => {
      const operatorBefore = await ledger.balanceOf(operator.accountId);
      const started = await check(checked.routeId, 'switch-rc');
      t.equal(started.status, 202, started.text);
      const done = await eventually(async () => {
        const r = await d.https('GET', `/routes/check/${started.json.data.checkId}`, { token: secret });
        return r.status === 200 && r.json.data.status === 'done' ? r.json.data : null;
      }, 40_000);
      const [leg] = done.routes;
      t.match(leg, { result: 'working', answered: true, paidFrom: 'balance', ownRoute: false });
      t.equal(leg.cost, '0.030000', 'one 60 s block at the sell rate, not price plus 25 %');
      t.equal(leg.billableSeconds, 60, 'billed in the sell row increments');
      t.equal(done.totalCost, '0.030000');

      const after = await ledger.balanceOf(customer.id);
      t.equal(after.balance, '4.970000', 'the customer paid the sell rate');
      t.equal(after.held, '0.000000', 'no hold left');
      // The seller is paid its own rate per connected second (1/1): that gives the seconds the route cost.
      const sellerGot = new Decimal((await ledger.balanceOf(seller.accountId)).payable);
      const seconds = sellerGot.times(60).div('0.012').toNumber();
      t.ok(Number.isInteger(seconds) && seconds >= 1, `the seller was paid for ${seconds} s`);
      const cost = expectedCost(seconds, '0.012000');
      const earned = new Decimal((await ledger.balanceOf(operator.accountId)).payable).minus(operatorBefore.payable);
      t.equal(earned.toFixed(6), new Decimal('0.030000').minus(cost).toFixed(6), 'sell − cost, to the 6th decimal');
      t.equal(
        (await ledger.balanceOf(operator.accountId)).balance,
        operatorBefore.balance,
        'the operator paid nothing',
      );
      await checkInvariants(t, d.sql);
    });
  },
);
