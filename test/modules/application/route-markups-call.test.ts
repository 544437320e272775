import t from 'tap';
import { checkInvariants } from '../../ledger/helpers.js';
import { answeredSubCall, createWorld, eventually, uasAnswer } from '../sip-trunks/world.js';

// A sub-account's trunk call over a route with its own markup: seller rate 0.013700 → buyer
// price 0.015700/min (fee 0.002000), 6/6: a 1–6 s call bills 6 s = 0.001570. The sub-account's
// own markup is 25%; its markup on this route, 40%: 0.000628 to the operator, 0.002198 in all.
t.test("a real trunk call bills the sub-account's markup on its route", async (t) => {
  const w = await createWorld(t);
  const number = '441100000077';
  const uas = await uasAnswer(t, number);
  const r = await w.route({ port: uas.port, prefix: '4411', rate: '0.013700' });
  const sub = await w.sub({ markupPct: '25', fund: '10.000000' });
  const put = await w.api('PUT', `/application/sub-accounts/${sub.id}/route-markups/${r.routeId}`, w.operator.token, {
    markupPct: '40',
  });
  t.equal(put.status, 200, put.text);

  await answeredSubCall(t, w, sub, number, uas);
  const call = await eventually(async () => {
    const [c] = await w.d.sql<{ id: string; cost: string; billableSeconds: number }[]>`
      select id, cost::text, billable_seconds from calls where account_id = ${sub.id} and ended_at is not null`;
    return c;
  });
  t.equal(call.billableSeconds, 6);
  t.equal(call.cost, '0.002198', 'price × 6 s plus the 40% route markup');
  const [cdr] = await w.d.sql<{ buyerCost: string; ratePerUnit: string }[]>`
    select buyer_cost::text, rate_per_unit::text from cdrs where call_group_id = ${call.id}`;
  t.same([cdr!.buyerCost, cdr!.ratePerUnit], ['0.002198', '0.021980'], 'the record shows the marked-up rate');
  const ledger = w.d.modules.services.ledger;
  t.equal((await ledger.balanceOf(sub.id)).balance, '9.997802');
  t.equal((await ledger.balanceOf(w.operator.accountId)).payable, '0.000628', 'the operator earned the route markup');
  await checkInvariants(t, w.d.sql);
});
