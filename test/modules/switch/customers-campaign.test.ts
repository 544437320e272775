import { Decimal } from 'decimal.js';
import t from 'tap';
import { checkInvariants } from '../../ledger/helpers.js';
import { sippMediaPort, sipp } from '../../telephony/sip/sipp.js';
import { available, callee, expectedCost, MANY } from '../api-calls/peers.js';
import { createWorld, eventually } from '../sip-trunks/world.js';
import { switchCustomer } from './customer.js';

/**
 * A Switch customer's dialer campaign (the runner placing its calls over the API call plane, the
 * daemon dialling sipp) meets the rules its trunk and API calls meet (docs/switch.md): each call
 * priced at its sell rate, a route above that rate refused, `maxSpend` budgeted at the sell rate,
 * and its operator's do-not-call list screening the numbers at dial time.
 *
 * Money: the route's seller rate 0.012000 → price 0.014000/min (fee 0.002000) in 1/1 blocks. The
 * customer's markup is 25 % (a call of at most 30 s: at most 0.008750), but its sell rate for 4473
 * is 0.030000/min in 60/60: each call costs 0.030000. maxSpend 0.070000 fits two such calls, not
 * three (budgeted at base plus markup, all three would fit).
 */
t.test(
  "a Switch customer's campaign: sell rate, below-cost refusal, budget, operator's do-not-call list",
  { skip: available ? false : 'sipp or espeak-ng not installed' },
  async (t) => {
    const base = 44000 + (process.pid % 300) * 20;
    const w = await createWorld(t, {
      rtp: { port_min: base, port_max: base + 19, bind_address: '127.0.0.1' },
      dialer: { tick_ms: 50, call_poll_ms: 150 },
    });
    const { d, operator } = w;
    const services = d.modules.services;
    const customer = await switchCustomer(w, { label: 'dialer customer', credit: '10.000000' });
    const api = (method: string, url: string, body?: unknown) => w.api(method, url, customer.apiKey, body);
    const balance = () => services.ledger.balanceOf(customer.id);

    const peer = await sipp(t, callee('[0-9]+', '', false), ['-mp', String(await sippMediaPort())], {
      timeout: '60s',
      calls: MANY,
    });
    const { routeId } = await w.route({ port: peer.port, prefix: '447', rate: '0.012000', increment: '1/1' });
    const sell = await w.api('POST', `/switch/customers/${customer.id}/sell-rates`, operator.token, {
      kind: 'voice',
      rows: [
        { prefix: '4473', destination: 'UK mobile', rate: '0.03', billingIncrement: '60/60' },
        // Below the route's 0.014000/min: a call there would cost the operator money.
        { prefix: '4474', destination: 'UK mobile', rate: '0.01' },
      ],
    });
    t.equal(sell.status, 200, sell.text);
    // Listed by the operator, honored for its customers' calls: screened at dial time, never dialled.
    const listed = '+447300000009';
    t.equal((await w.api('POST', '/dnc', operator.token, { numbers: [listed] })).status, 200);
    t.equal((await w.api('PATCH', '/switch/dnc/honor', operator.token, { calls: true })).status, 200);

    const clis = await api('POST', '/dialer/cli-sets', { name: 'main', clis: ['+15550001111'] });
    t.equal(clis.status, 201, clis.text);
    const created = await api('POST', '/dialer/campaigns', {
      name: 'Switch customer campaign',
      routeId,
      kind: 'voice',
      concurrency: 1,
      maxAttempts: 1,
      maxCallDuration: 30,
      maxSpend: '0.07',
      cliSetId: clis.body.data.id,
      actions: [{ pause: 1 }, { hangup: true }],
    });
    t.equal(created.status, 201, created.text);
    const c = created.body.data;
    // Dialled in this order: the refused and the listed numbers first, then three the budget meets.
    const good = ['+447300000001', '+447300000002', '+447300000003'];
    const below = '+447400000001';
    const added = await api('POST', `/dialer/campaigns/${c.id}/numbers`, { numbers: [below, listed, ...good] });
    t.equal(added.status, 200, added.text);
    t.match(added.body.data, { added: 5 }, "the operator's list is not the customer's own: added");

    const estimate = await api('GET', `/dialer/campaigns/${c.id}/estimate`);
    t.equal(estimate.status, 200, estimate.text);
    t.equal(estimate.body.data.cost.perCallMax, '0.030000', 'the estimate prices a call at the sell rate');

    const before = await balance();
    const payableBefore = (await services.ledger.balanceOf(operator.accountId)).payable;
    const started = await api('POST', `/dialer/campaigns/${c.id}/control`, { action: 'start' });
    t.equal(started.status, 200, started.text);
    const done = await eventually(async () => {
      const r = await api('GET', `/dialer/campaigns/${c.id}`);
      return r.body.data.status === 'paused' ? r.body.data : null;
    }, 90_000);
    t.match(
      done,
      { statusReason: 'max_spend_reached', spent: '0.060000' },
      'two calls at the sell rate fill the budget',
    );

    const attempts = await d.sql<{ number: string; status: string; cause: string | null; cost: string }[]>`
      select number, status, cause, cost::numeric(20,6)::text as cost from dialer_attempts
      where campaign_id = ${c.id} order by started_at, id`;
    t.same(
      attempts.map((a) => [a.number, a.status, a.status === 'failed' ? a.cause : null, a.cost]),
      [
        [below.slice(1), 'failed', 'SELL_RATE_BELOW_COST', '0.000000'],
        [good[0]!.slice(1), 'completed', null, '0.030000'],
        [good[1]!.slice(1), 'completed', null, '0.030000'],
      ],
      'below cost refused before dialling; the listed number never attempted; the third left by the budget',
    );
    const states = await d.sql<{ number: string; state: string }[]>`
      select number, state from dialer_numbers where campaign_id = ${c.id} order by number`;
    t.same(Object.fromEntries(states.map((s) => [s.number, s.state])), {
      [good[0]!.slice(1)]: 'answered',
      [good[1]!.slice(1)]: 'answered',
      [good[2]!.slice(1)]: 'pending',
      [listed.slice(1)]: 'blocked',
      [below.slice(1)]: 'failed',
    });
    t.equal(
      (await d.sql`select 1 from calls where to_number in (${listed}, ${below})`).length,
      0,
      'no call row for the listed or the below-cost number',
    );

    // Each answered call: the customer pays 0.030000, the route's own cost (1/1 blocks) goes to the
    // seller and the platform, the operator earns the difference through the call's markup posting.
    let margin = new Decimal(0);
    for (const n of good.slice(0, 2)) {
      const [cdr] = await d.sql<{ durationSeconds: number; buyerCost: string; ratePerUnit: string; callId: string }[]>`
        select c.duration_seconds, c.buyer_cost::text, c.rate_per_unit::text, c.call_group_id::text as call_id
        from cdrs c join dialer_attempts a on a.call_id = c.call_uuid
        where a.campaign_id = ${c.id} and a.number = ${n.slice(1)} and c.status = 'completed'`;
      t.same([cdr?.buyerCost, cdr?.ratePerUnit], ['0.030000', '0.030000'], `${n}: the sell rate, not price plus 25 %`);
      // The route's blocks are 1/1: its cost is per second of the call, not of the 60 s sell block.
      const cost = expectedCost(cdr!.durationSeconds, '0.012000');
      margin = margin.plus(new Decimal('0.030000').minus(cost));
      const posted = await d.sql`select 1 from postings where posting_key = ${`apicall:${cdr!.callId}:markup`}`;
      t.equal(posted.length, 1, `${n}: the margin went through the call's markup posting`);
    }
    const after = await balance();
    t.equal(new Decimal(before.balance).minus(after.balance).toFixed(6), '0.060000', 'the customer paid 2 × 0.030000');
    t.equal(after.held, before.held, 'no hold left');
    const payable = new Decimal((await services.ledger.balanceOf(operator.accountId)).payable).minus(payableBefore);
    t.equal(payable.toFixed(6), margin.toFixed(6), 'the operator earned sell − cost, to the 6th decimal');

    const hits = await w.api('GET', `/switch/dnc/hits?customerId=${customer.id}`, operator.token);
    t.equal(hits.status, 200, hits.text);
    t.equal(hits.body.data.length, 1, 'one hit: the listed number, screened once');
    t.match(hits.body.data[0], { customerId: customer.id, channel: 'voice', number: '44730…', matchedBy: 'number' });
    await checkInvariants(t, d.sql);
  },
);
