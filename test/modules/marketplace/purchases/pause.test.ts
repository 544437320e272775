import t from 'tap';
import { createWorld, eventually, expectExit, uac, uacScenario, uasAnswer } from '../../sip-trunks/world.js';

// Money (fee 0.002000/min absolute, increment 6/6): rate 0.013700 → 0.015700/min; a 1–6 s call bills 0.001570.

t.test('purchases: pause and resume, with a call in progress', async (t) => {
  const w = await createWorld(t);
  const number = '442200000001';
  const uas = await uasAnswer(t, number);
  const r = await w.route({ port: uas.port, prefix: '4422', rate: '0.013700' });
  const sub = await w.sub({ markupPct: '0', fund: '5.000000' });
  t.equal(
    (await w.api('PATCH', `/purchases/${r.purchaseId}/routing-priority`, w.operator.token, { priority: 1 })).status,
    200,
  );

  const run = await uac(
    t,
    w.sipPort,
    uacScenario('uac-tail-answer.xml', { HOLD_MS: '1500' }),
    number,
    sub.sipUsername,
    sub.sipPassword,
  );
  await eventually(async () => {
    const [c] = await w.d.sql`select 1 from calls where account_id = ${sub.id} and answered_at is not null`;
    return c;
  });
  const paused = await w.api('PATCH', `/purchases/${r.purchaseId}`, w.operator.token, { status: 'paused' });
  t.equal(paused.status, 200, paused.text);
  t.match(paused.body.data, { status: 'paused', routingPriority: 1 });
  t.ok(paused.body.data.pausedAt);
  await expectExit(t, run, 'the call in progress went on to its end');
  await expectExit(t, uas, 'supplier answered');
  const [cdr] = await eventually(async () => {
    const rows = await w.d.sql<{ buyerCost: string }[]>`select buyer_cost::text from cdrs where account_id = ${sub.id}`;
    return rows.length > 0 ? rows : null;
  });
  t.equal(cdr!.buyerCost, '0.001570', 'settled at the price it started with');
  const b = await w.d.modules.services.ledger.balanceOf(sub.id);
  t.equal(b.balance, '4.998430');
  t.equal(b.held, '0.000000', 'the hold is settled');

  const usage = await w.api('GET', `/purchases/${r.purchaseId}/usage?days=7`, w.operator.token);
  t.equal(usage.status, 200, usage.text);
  t.match(usage.body.data, { days: 7, calls: 1, answeredCalls: 1, billedMinutes: 0.1, messages: 0, spend: '0.001570' });
  t.equal((await w.api('GET', `/purchases/${r.purchaseId}/usage`, w.seller.token)).status, 404);

  const none = await w.api('GET', `/purchases/route-for?number=${number}`, w.operator.token);
  t.equal(none.status, 404, 'a paused purchase carries no new traffic');
  t.equal((await w.api('GET', '/purchases?status=paused', w.operator.token)).body.data.length, 1);
  t.equal(
    (await w.api('POST', '/purchases', w.operator.token, { routeId: r.routeId })).status,
    409,
    'resume, not buy again',
  );
  const same = await w.api('PATCH', `/purchases/${r.purchaseId}`, w.operator.token, { status: 'paused' });
  t.equal(same.status, 200, 'pausing a paused purchase changes nothing');

  const resumed = await w.api('PATCH', `/purchases/${r.purchaseId}`, w.operator.token, { status: 'active' });
  t.match(resumed.body.data, { status: 'active', pausedAt: null, routingPriority: 1 });
  const back = await w.api('GET', `/purchases/route-for?number=${number}`, w.operator.token);
  t.match(back.body.data.route, { routeId: r.routeId, price: '0.015700' });

  t.equal((await w.api('PATCH', `/purchases/${r.purchaseId}`, w.seller.token, { status: 'paused' })).status, 404);
  await w.api('PATCH', `/purchases/${r.purchaseId}`, w.operator.token, { status: 'paused' });
  const cancelled = await w.api('POST', `/purchases/${r.purchaseId}/cancel`, w.operator.token);
  t.equal(cancelled.body.data.status, 'cancelled', 'a paused purchase can be cancelled');
  t.equal((await w.api('PATCH', `/purchases/${r.purchaseId}`, w.operator.token, { status: 'active' })).status, 400);
});
