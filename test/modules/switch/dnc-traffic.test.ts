import t from 'tap';
import { answeredSubCall, createWorld, expectExit, uac, uacScenario, uasAnswer } from '../sip-trunks/world.js';

/**
 * The Switch DNC at call admission and SMS send: a Switch customer's real SIP call (sipp, digest
 * credentials of the sub-account) to a number its Switch lists is declined with 603 and recorded as
 * a hit; a call to another number is answered; a message to the listed number is refused.
 */
t.test('Switch DNC: customer traffic to a listed number is refused and recorded', async (t) => {
  const w = await createWorld(t);
  const op = w.operator;
  await w.d.modules.services.switchSubscriptions.grant(op.accountId, 'plan', null);
  const listed = '441100000001';
  const clean = '441100000002';
  const uas = await uasAnswer(t, clean);
  await w.route({ port: uas.port, prefix: '4411', rate: '0.013700' });
  const sub = await w.sub({ fund: '10.000000' });
  const created = await w.d.modules.services.application.create(op.accountId, { label: 'sms customer' });
  const smsKey = created.apiKey;

  const add = await w.api('POST', '/dnc', op.token, { numbers: [`+${listed}`] });
  t.equal(add.status, 200, add.text);

  // Not honored yet: the check says listed, not refused.
  const before = await w.api('GET', `/switch/dnc/check?number=%2B${listed}&customerId=${sub.id}`, op.token);
  t.equal(before.status, 200, before.text);
  t.match(before.body.data, { listed: true, refused: { voice: false, sms: false } });

  const honor = await w.api('PATCH', '/switch/dnc/honor', op.token, { calls: true, sms: true });
  t.equal(honor.status, 200, honor.text);
  t.match(honor.body.data, { calls: true, sms: true, customers: [] });

  await t.test('a SIP call to the listed number: 603, counted, a hit', async (t) => {
    const refusedBefore = w.d.modules.services.calls.refusals()['dnc'] ?? 0;
    const run = await uac(
      t,
      w.sipPort,
      uacScenario('uac-tail-final.xml', { FINAL: '603' }),
      listed,
      sub.sipUsername,
      sub.sipPassword,
    );
    await expectExit(t, run, 'the call was declined with 603');
    t.equal(w.d.modules.services.calls.refusals()['dnc'], refusedBefore + 1, 'refusal counted under dnc');
    const calls = await w.d.sql`select 1 from calls where account_id = ${sub.id}`;
    t.equal(calls.length, 0, 'no call row, no hold: refused before routing');
    const hits = await w.api('GET', '/switch/dnc/hits', op.token);
    t.equal(hits.status, 200, hits.text);
    t.equal(hits.body.data.length, 1);
    t.match(hits.body.data[0], { customerId: sub.id, channel: 'voice', number: '44110…', matchedBy: 'number' });
    t.notOk(hits.text.includes(listed), 'the whole number is never shown');
  });

  await t.test('a SIP call to another number is answered', async (t) => {
    await answeredSubCall(t, w, sub, clean, uas);
    await expectExit(t, uas, 'the supplier answered the clean call');
  });

  await t.test('an SMS to the listed number is refused; another number passes the DNC check', async (t) => {
    const send = (to: string) =>
      w.d.https('POST', '/comms/sms', {
        token: smsKey,
        body: { to: `+${to}`, from: 'Exchange', message: 'hello' },
        headers: { 'idempotency-key': `${to}-${Date.now()}` },
      });
    const refused = await send(listed);
    t.equal(refused.status, 400, refused.text);
    t.equal(refused.json.error.code, 'VALIDATION_ERROR');
    t.match(refused.json.error.message, /do-not-call/);
    const other = await send(clean);
    // No SMS route was bought in this world: the send goes past the DNC check and stops at routing.
    t.notMatch(other.text, /do-not-call/);
    const hits = await w.api('GET', `/switch/dnc/hits?channel=sms&customerId=${created.id}`, op.token);
    t.equal(hits.body.data.length, 1);
    t.match(hits.body.data[0], { customerId: created.id, channel: 'sms' });
  });

  await t.test('a customer override exempts it; customers and summary show the hits', async (t) => {
    const patch = await w.api('PATCH', '/switch/dnc/honor', op.token, {
      customers: [{ customerId: sub.id, honor: false }],
    });
    t.equal(patch.status, 200, patch.text);
    t.same(patch.body.data.customers, [{ customerId: sub.id, honor: false }]);
    const check = await w.api('GET', `/switch/dnc/check?number=%2B${listed}&customerId=${sub.id}`, op.token);
    t.match(check.body.data, { listed: true, refused: { voice: false, sms: false } });
    t.equal(
      await w.d.modules.services.switchDnc.gate.refuses({
        operatorId: op.accountId,
        customerId: sub.id,
        number: listed,
        channel: 'voice',
      }),
      false,
      'the gate follows the override at once on this daemon',
    );
    const customers = await w.api('GET', '/switch/dnc/customers', op.token);
    t.equal(customers.status, 200, customers.text);
    const mine = customers.body.data.rows.find((r: { customerId: string }) => r.customerId === sub.id);
    t.match(mine, { override: false, honored: { voice: false, sms: false }, hits: { total: 1, last30Days: 1 } });
    const other = customers.body.data.rows.find((r: { customerId: string }) => r.customerId === created.id);
    t.match(other, { override: null, honored: { voice: true, sms: true }, hits: { total: 1 } });
    const summary = await w.api('GET', '/switch/dnc/summary', op.token);
    t.match(summary.body.data, {
      list: { numbers: 1, prefixes: 0 },
      honor: { calls: true, sms: true, customerOverrides: 1 },
      hits: { total: 2, voiceLast30Days: 1, smsLast30Days: 1 },
    });
    const foreign = await w.api('PATCH', '/switch/dnc/honor', op.token, {
      customers: [{ customerId: w.seller.accountId, honor: true }],
    });
    t.equal(foreign.status, 404, 'only the account’s own customers');
  });
});
