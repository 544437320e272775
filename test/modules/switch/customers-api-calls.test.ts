import { Decimal } from 'decimal.js';
import t from 'tap';
import { checkInvariants } from '../../ledger/helpers.js';
import { answering, available, exitOk } from '../api-calls/peers.js';
import { createWorld } from '../sip-trunks/world.js';

/**
 * A Switch customer's calls placed through the API (POST /comms/calls over HTTPS, the daemon's own
 * SIP stack and media engine dialling sipp) meet the rules its trunk calls meet: the sell-rate deck
 * (docs/switch.md "The deck applies") and the operator's do-not-call list ("DNC").
 *
 * Money: the route's seller rate 0.013700 → price 0.015700/min (fee 0.002000) in 6/6 blocks. The
 * customer's markup is 25 %, but its sell rate for 4411 is 0.030000/min in 60/60: a call of under a
 * minute costs it 0.030000, and the operator earns 0.030000 − the route's cost through the markup posting.
 */
t.test(
  "a Switch customer's API calls: sell rate, below-cost refusal, do-not-call list",
  { skip: available ? false : 'sipp or espeak-ng not installed' },
  async (t) => {
    const base = 52000 + (process.pid % 300) * 20;
    const w = await createWorld(t, { rtp: { port_min: base, port_max: base + 19, bind_address: '127.0.0.1' } });
    const { d, operator } = w;
    const services = d.modules.services;
    await services.switchSubscriptions.grant(operator.accountId, 'plan', null);
    const customer = await services.application.create(operator.accountId, { label: 'api customer', markupPct: '25' });
    await services.application.credit(operator.accountId, customer.id, { amount: '10.000000' }, `fund-${customer.id}`);
    const place = (to: string) =>
      d.https('POST', '/comms/calls', {
        token: customer.apiKey,
        headers: { 'x-idempotency-key': `${to}-${Date.now()}` },
        body: { to, from: '+15550002222', maxDuration: 30, actions: [{ pause: 1 }, { hangup: true }] },
      });
    const sellRates = (rows: { prefix: string; rate: string; billingIncrement?: string }[]) =>
      w.api('POST', `/switch/customers/${customer.id}/sell-rates`, operator.token, {
        kind: 'voice',
        rows: rows.map((r) => ({ destination: 'UK test', ...r })),
      });
    const balance = () => services.ledger.balanceOf(customer.id);

    const peer = await answering(t, '441100000077');
    await w.route({ port: peer.port, prefix: '4411', rate: '0.013700' });
    // A route for 4412 that no call reaches: refused before dialling in every case below.
    await w.route({ port: 9, prefix: '4412', rate: '0.013700' });
    const put = await sellRates([
      { prefix: '4411', rate: '0.03', billingIncrement: '60/60' },
      { prefix: '4412', rate: '0.01' },
    ]);
    t.equal(put.status, 200, put.text);

    await t.test('a matching sell rate is what the call costs; the operator earns sell − cost', async (t) => {
      const payableBefore = (await services.ledger.balanceOf(operator.accountId)).payable;
      const res = await place('+441100000077');
      t.equal(res.status, 200, res.text);
      const call = res.json.data;
      t.equal(call.status, 'completed');
      t.equal(call.cost, '0.030000', 'the sell rate for one 60 s block, not price plus 25 %');
      await exitOk(t, peer, 'sipp answered and received our BYE');
      // The route's own cost in its 6/6 blocks: what the seller and the platform fee are paid from.
      const costSeconds = Math.max(6, Math.ceil(call.durationSeconds / 6) * 6);
      const cost = new Decimal('0.015700').times(costSeconds).div(60).toDecimalPlaces(6);
      const seller = new Decimal('0.013700').times(costSeconds).div(60).toDecimalPlaces(6);
      const [cdr] = await d.sql<{ buyerCost: string; ratePerUnit: string; sellerCredit: string }[]>`
        select buyer_cost::text, rate_per_unit::text, seller_credit::text from cdrs where call_group_id = ${call.callId}`;
      t.same(
        [cdr?.buyerCost, cdr?.ratePerUnit, cdr?.sellerCredit],
        ['0.030000', '0.030000', seller.toFixed(6)],
        'the record shows the sell rate; the seller is paid its own rate',
      );
      const [stored] = await d.sql<
        { sell: unknown }[]
      >`select pricing -> 'sell' as sell from calls where id = ${call.callId}`;
      t.same(stored?.sell, { rate: '0.030000', increment: '60/60' }, 'kept for a crash reconcile');
      const after = await balance();
      t.equal(after.balance, '9.970000');
      t.equal(after.held, '0.000000', 'no hold left');
      const payable = new Decimal((await services.ledger.balanceOf(operator.accountId)).payable).minus(payableBefore);
      t.equal(payable.toFixed(6), new Decimal('0.030000').minus(cost).toFixed(6), 'sell − cost, to the 6th decimal');
      const margin = await d.sql`select 1 from postings where posting_key = ${`apicall:${call.callId}:markup`}`;
      t.equal(margin.length, 1, 'the margin went through the markup posting of the call');
      await checkInvariants(t, d.sql);
    });

    await t.test('every route above the sell rate: 400 SELL_RATE_BELOW_COST, nothing held', async (t) => {
      const before = await balance();
      const res = await place('+441200000001');
      t.equal(res.status, 400, res.text);
      t.equal(res.json.error.code, 'VALIDATION_ERROR');
      t.same(res.json.error.details, { code: 'SELL_RATE_BELOW_COST' });
      t.same(await balance(), before);
      t.equal((await d.sql`select 1 from calls where to_number = '+441200000001'`).length, 0, 'no call row');
    });

    await t.test("a number on the operator's honored list: 400 DO_NOT_CALL and a masked hit", async (t) => {
      const listed = '441200000002';
      t.equal((await w.api('POST', '/dnc', operator.token, { numbers: [`+${listed}`] })).status, 200);
      const notYet = await place(`+${listed}`);
      t.same(notYet.json.error?.details, { code: 'SELL_RATE_BELOW_COST' }, 'not honored yet: on to routing');

      const honor = await w.api('PATCH', '/switch/dnc/honor', operator.token, { calls: true });
      t.equal(honor.status, 200, honor.text);
      const before = await balance();
      const refused = await place(`+${listed}`);
      t.equal(refused.status, 400, refused.text);
      t.equal(refused.json.error.code, 'VALIDATION_ERROR');
      t.same(refused.json.error.details, { code: 'DO_NOT_CALL' });
      t.same(await balance(), before, 'nothing held or charged');
      t.equal((await d.sql`select 1 from calls where to_number = ${`+${listed}`}`).length, 0, 'no call row');
      const hits = await w.api('GET', `/switch/dnc/hits?customerId=${customer.id}`, operator.token);
      t.equal(hits.status, 200, hits.text);
      t.equal(hits.body.data.length, 1);
      t.match(hits.body.data[0], { customerId: customer.id, channel: 'voice', number: '44120…', matchedBy: 'number' });
      t.notOk(hits.text.includes(listed), 'the whole number is never shown');

      // The customer's override exempts it at once on this daemon: the call goes on to routing.
      const exempt = await w.api('PATCH', '/switch/dnc/honor', operator.token, {
        customers: [{ customerId: customer.id, honor: false }],
      });
      t.equal(exempt.status, 200, exempt.text);
      const passed = await place(`+${listed}`);
      t.same(passed.json.error?.details, { code: 'SELL_RATE_BELOW_COST' }, 'the override lets the call through');
      const summary = await w.api('GET', '/switch/dnc/summary', operator.token);
      t.match(summary.body.data, { hits: { total: 1, voiceLast30Days: 1 } }, 'one hit: only the refused call');
    });
  },
);
