import t from 'tap';
import { checkInvariants } from '../../ledger/helpers.js';
import { createSmsWorld } from '../sms/world.js';

/**
 * A Switch customer's SMS matching its sell-rate deck (docs/switch.md "The deck applies"), sent over
 * POST /comms/sms to a real SMSC (Net::SMPP). The route charges 0.010000 a segment for prefix 1, and
 * the platform adds 0.000500: 0.010500 a segment. The customer's markup is 20 %, but its sell rate
 * for 1202 is 0.015000 a message (segment): it pays that, and the operator earns 0.004500 a segment
 * through the markup posting, in the send's transaction.
 */
t.test("a Switch customer's SMS is charged its sell rate; a rate below cost refuses the message", async (t) => {
  const w = await createSmsWorld(t);
  const { h, buyer: operator } = w;
  await h.services.switchSubscriptions.grant(operator.accountId, 'plan', null);
  const customer = await h.services.application.create(operator.accountId, { label: 'sms customer', markupPct: '20' });
  await h.services.application.credit(operator.accountId, customer.id, { amount: '1.000000' }, `fund-${customer.id}`);
  const put = await w.api('POST', `/switch/customers/${customer.id}/sell-rates`, operator.session, {
    kind: 'sms',
    rows: [
      { prefix: '1202', destination: 'US test', rate: '0.015' },
      // Under the route's 0.010500 for prefix 1: nothing may be sent at a loss.
      { prefix: '1303', destination: 'US cheap', rate: '0.01' },
    ],
  });
  t.equal(put.status, 200, JSON.stringify(put.body));
  const send = (to: string, message: string) =>
    w.api('POST', '/comms/sms', customer.apiKey, { to, from: 'MyShop', message });

  await t.test('one segment, then two: the sell rate per segment; sell − cost to the operator', async (t) => {
    const one = await send('+12025550100', 'hello');
    t.equal(one.status, 200, JSON.stringify(one.body));
    t.match(one.body.data, { status: 'sent', segments: 1, cost: '0.015000' }, 'the sell rate, not price plus 20 %');
    await w.smsc.waitFor(/^SUBMIT 12025550100/);
    const two = await send('+12025550101', 'x'.repeat(200));
    t.equal(two.status, 200, JSON.stringify(two.body));
    t.match(two.body.data, { status: 'sent', segments: 2, cost: '0.030000' });

    const b = await w.balance(customer.id);
    t.same([b.balance, b.held], ['0.955000', '0.000000'], 'the customer paid 0.015000 + 0.030000');
    const op = await h.services.ledger.balanceOf(operator.accountId);
    t.equal(op.payable, '0.013500', 'sell − cost: 0.004500 + 0.009000, to the 6th decimal');
    const rows = await h.sql<{ cost: string; markup: string | null }[]>`
      select m.cost::text, (select sum(e.amount)::text from entries e
                            where e.posting_id = m.markup_posting_id and e.amount > 0) as markup
      from messages m where m.account_id = ${customer.id} order by m.queued_at`;
    t.same(
      rows.map((r) => [r.cost, r.markup]),
      [
        ['0.015000', '0.004500'],
        ['0.030000', '0.009000'],
      ],
      'each message names its markup posting: the margin',
    );
    const cdrs = await h.sql<{ buyerCost: string }[]>`
      select buyer_cost::text from cdrs where account_id = ${customer.id} and kind = 'sms' order by created_at`;
    t.same(
      cdrs.map((c) => c.buyerCost),
      ['0.015000', '0.030000'],
      'the records show what the customer paid',
    );
    await checkInvariants(t, h.sql);
  });

  await t.test('a sell rate under every route: 400, nothing sent or charged', async (t) => {
    const before = await w.balance(customer.id);
    const refused = await send('+13035550100', 'hello');
    t.equal(refused.status, 400, JSON.stringify(refused.body));
    t.equal(refused.body.error.code, 'VALIDATION_ERROR');
    t.same(await w.balance(customer.id), before);
    const none = await h.sql`select 1 from messages where account_id = ${customer.id} and to_number = '13035550100'`;
    t.equal(none.length, 0, 'no message row');
  });

  await t.test('a number the deck does not price: base plus the 20 % markup as before', async (t) => {
    const other = await send('+14155550100', 'hello');
    t.equal(other.status, 200, JSON.stringify(other.body));
    t.equal(other.body.data.cost, '0.012600', '0.010500 plus 20 %');
  });
});
