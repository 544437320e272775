import t from 'tap';
import { checkInvariants } from '../../ledger/helpers.js';
import { answeredSubCall, createWorld, eventually, uasAnswer } from '../sip-trunks/world.js';

// A Switch customer's trunk call matching its sell-rate deck: the route's seller rate 0.013700 →
// price 0.015700/min (fee 0.002000), 6/6: a 1–2 s call costs 6 s = 0.001570. The customer's markup
// is 25%, but its sell rate for 4411 is 0.030000/min in 60/60: it pays 0.030000, and the operator
// earns 0.030000 − 0.001570 = 0.028430 through the markup posting.
t.test("a real trunk call bills the customer's sell rate and the operator's margin", async (t) => {
  const w = await createWorld(t);
  const number = '441100000088';
  const uas = await uasAnswer(t, number);
  await w.route({ port: uas.port, prefix: '4411', rate: '0.013700' });
  const sub = await w.sub({ markupPct: '25', fund: '10.000000' });
  await w.d.modules.services.switchSubscriptions.grant(w.operator.accountId, 'plan', null);
  const put = await w.api('POST', `/switch/customers/${sub.id}/sell-rates`, w.operator.token, {
    kind: 'voice',
    rows: [
      { prefix: '4411', destination: 'UK test', rate: '0.03', billingIncrement: '60/60' },
      { prefix: '44', destination: 'UK other', rate: '0.5' },
    ],
  });
  t.equal(put.status, 200, put.text);
  t.match(put.body.data, { written: 2, new: 2, increases: 0 });

  await answeredSubCall(t, w, sub, number, uas);
  const call = await eventually(async () => {
    const [c] = await w.d.sql<{ id: string; cost: string }[]>`
      select id, cost::text from calls where account_id = ${sub.id} and ended_at is not null`;
    return c;
  });
  t.equal(call.cost, '0.030000', 'the sell rate for one 60 s block, not price plus 25%');
  const [cdr] = await w.d.sql<{ buyerCost: string; ratePerUnit: string; sellerCredit: string }[]>`
    select buyer_cost::text, rate_per_unit::text, seller_credit::text from cdrs where call_group_id = ${call.id}`;
  t.same(
    [cdr!.buyerCost, cdr!.ratePerUnit, cdr!.sellerCredit],
    ['0.030000', '0.030000', '0.001370'],
    'the record shows the sell rate; the seller is paid its own rate',
  );
  const ledger = w.d.modules.services.ledger;
  t.equal((await ledger.balanceOf(sub.id)).balance, '9.970000');
  t.equal((await ledger.balanceOf(w.operator.accountId)).payable, '0.028430', 'sell − cost, to the 6th decimal');
  await checkInvariants(t, w.d.sql);
});

// A sell rate under every route's price: the call is refused before any supplier is tried.
t.test('a sell rate below cost refuses the call instead of routing it at a loss', async (t) => {
  const w = await createWorld(t);
  const number = '441100000089';
  await w.route({ port: 9, prefix: '4411', rate: '0.013700' });
  const sub = await w.sub({ fund: '10.000000' });
  await w.d.modules.services.switchSubscriptions.grant(w.operator.accountId, 'plan', null);
  const put = await w.api('PUT', `/switch/customers/${sub.id}/sell-rates/4411`, w.operator.token, {
    destination: 'UK test',
    rate: '0.010000',
  });
  t.equal(put.status, 200, put.text);
  const plan = await w.d.modules.services.calls.policy.planCall({
    accountId: w.operator.accountId,
    subAccountId: sub.id,
    to: number,
    from: '15550001111',
    callId: 'sell-below-cost',
    sourceIp: '127.0.0.1',
  });
  t.match(plan, { reject: { status: 503 } }, "no route costs less than the customer's sell rate");
  t.equal((await w.d.modules.services.ledger.balanceOf(sub.id)).balance, '10.000000', 'nothing held or charged');
});
