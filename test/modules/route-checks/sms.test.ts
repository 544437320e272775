import { Decimal } from 'decimal.js';
import pino from 'pino';
import t from 'tap';
import { buildModules } from '../../../src/modules/index.js';
import { systemClock } from '../../../src/platform/clock.js';
import { createHealthRegistry } from '../../../src/platform/health.js';
import { createSmsWorld, eventually, type SmsWorld } from '../sms/world.js';

/**
 * Test SMS over exactly one listing to the Net::SMPP supplier SMSC: the fixed text with its
 * reference, the receipt updating the check, billing to the sixth decimal, a failed receipt
 * refunded, the limits, and nothing in the message ledger.
 */

async function waitResult(w: SmsWorld, checkId: string, results: string[], session = w.buyer.session) {
  return eventually(async () => {
    const r = await w.api('GET', `/routes/check/${checkId}`, session);
    return r.status === 200 && r.body.data.status === 'done' && results.includes(r.body.data.routes[0].result)
      ? r.body.data
      : null;
  }, 10_000);
}

// One world for the file: a database, app and SMSC cost more than the checks themselves.
const w = await createSmsWorld(t);

t.test('test SMS: delivered and billed, failed receipt refunded, limits', async (t) => {
  const { api, buyer, smsc } = w;
  const before = await w.balance(buyer.accountId);

  const started = await api('POST', '/routes/check/sms', buyer.session, {
    routeId: w.routeId,
    number: '+12125550001',
  });
  t.equal(started.status, 202, JSON.stringify(started.body));
  const check = await waitResult(w, started.body.data.checkId, ['delivered']);
  t.match(check, { mode: 'sms', number: '+12125550001', simulated: false, totalCost: '0.010500' });
  const leg = check.routes[0];
  t.match(leg, {
    routeId: w.routeId,
    result: 'delivered',
    checkType: 'sms',
    cost: '0.010500',
    paidFrom: 'balance',
    sender: 'RouteCheck',
    carrierStatus: 'DELIVRD',
    routeReturnsReceipts: true,
    errorCode: null,
  });
  t.match(leg.messageRef, /^[A-Z2-9]{4}$/);
  const submit = await smsc.waitFor(/^SUBMIT 12125550001 /);
  const text = Buffer.from(/hex=([0-9a-f]+)/.exec(submit)![1]!, 'hex').toString('latin1');
  t.ok(text.endsWith(`Ref ${leg.messageRef}`), `the fixed text ends with the reference: ${text}`);
  const afterOne = await w.balance(buyer.accountId);
  t.equal(new Decimal(before.balance).minus(afterOne.balance).toFixed(6), '0.010500', 'one message price plus fee');

  // 1555…: the receipt arrives before the submit response; it still finds the check.
  const early = await api('POST', '/routes/check/sms', buyer.session, { routeId: w.routeId, number: '+15551230001' });
  t.match((await waitResult(w, early.body.data.checkId, ['delivered'])).routes[0], { carrierStatus: 'DELIVRD' });
  const afterEarly = await w.balance(buyer.accountId);

  // 1444…: the SMSC takes it, then its receipt says UNDELIV: refunded.
  const failing = await api('POST', '/routes/check/sms', buyer.session, { routeId: w.routeId, number: '+14445550001' });
  const failed = await waitResult(w, failing.body.data.checkId, ['refused']);
  t.match(failed.routes[0], {
    result: 'refused',
    errorCode: 'UNDELIVERABLE',
    carrierStatus: 'UNDELIV',
    carrierError: '034',
    cost: '0.000000',
    paidFrom: null,
  });
  t.equal(failed.totalCost, '0.000000');
  const afterTwo = await w.balance(buyer.accountId);
  t.equal(afterTwo.balance, afterEarly.balance, 'the failed message was refunded');

  // 1999…: the route refuses at submit: not charged.
  const refusedAtSubmit = await api('POST', '/routes/check/sms', buyer.session, {
    routeId: w.routeId,
    number: '+19995550001',
  });
  const r3 = await waitResult(w, refusedAtSubmit.body.data.checkId, ['refused']);
  t.match(r3.routes[0], { errorCode: 'SELLER_REJECTED', cost: '0.000000' });

  const premium = await api('POST', '/routes/check/sms', buyer.session, { routeId: w.routeId, number: '+19005551234' });
  t.equal(premium.status, 400);
  const uncovered = await api('POST', '/routes/check/sms', buyer.session, {
    routeId: w.routeId,
    number: '+33612345678',
  });
  t.equal(uncovered.status, 400);
  t.match(uncovered.body.error.message, /does not cover/);
  await w.h.services.dnc.add(buyer.accountId, { numbers: ['+12125550002'] });
  const dnc = await api('POST', '/routes/check/sms', buyer.session, { routeId: w.routeId, number: '+12125550002' });
  t.equal(dnc.status, 400, "a number on the caller's Do-Not-Contact list is refused");
  t.match(dnc.body.error.message, /Do-Not-Contact/);

  // Three test messages to one number an hour.
  for (let i = 0; i < 2; i++) {
    const again = await api('POST', '/routes/check/sms', buyer.session, { routeId: w.routeId, number: '+12125550001' });
    t.equal(again.status, 202);
    await waitResult(w, again.body.data.checkId, ['delivered']);
  }
  const fourth = await api('POST', '/routes/check/sms', buyer.session, { routeId: w.routeId, number: '+12125550001' });
  t.equal(fourth.status, 429);
  t.equal(fourth.body.error.details.limit, 'test_sms_number');

  const list = await api('GET', '/routes/checks?mode=sms', buyer.session);
  t.equal(list.body.data.length, 6, 'test SMS appear in the checks list');
  const [messages] = await w.h.sql<{ n: string }[]>`select count(*) as n from messages`;
  t.equal(Number(messages!.n), 0, 'test messages never enter the message ledger');
  const [cdrs] = await w.h.sql<{ n: string }[]>`select count(*) as n from cdrs`;
  t.equal(Number(cdrs!.n), 0, 'nor the CDRs');
  const [sum] = await w.h.sql<{ s: string }[]>`select coalesce(sum(amount), 0)::text as s from entries`;
  t.equal(Number(sum!.s), 0, 'the ledger balances');
  const [health] = await w.h.sql<{ checks: number; passed: number }[]>`
    select sum(checks)::int as checks, sum(passed)::int as passed from route_check_results_daily
    where route_id = ${w.routeId} and kind = 'sms'`;
  t.same(health, { checks: 6, passed: 4 }, 'receipts and refusals counted in the listing health');
  const listing = await w.h.services.routes.listingHealth(
    (await w.h.services.routes.visibleRoute(w.routeId, buyer.accountId))!.sellerId,
  );
  t.match(listing.listings[0]!.checks, { checks: 6, passed: 4, sms: { checks: 6, passed: 4 } });
});

t.test('a test SMS receipt arriving after a restart still completes its check', async (t) => {
  const { api, smsc } = w;
  // A second buyer: the first has used its test messages for the day.
  const buyer = await w.h.signUp();
  t.equal((await api('POST', '/purchases', buyer.session, { routeId: w.routeId })).status, 201);
  await w.h.services.ledger.topup({
    accountId: buyer.accountId,
    amount: '5.000000',
    source: 'card',
    postingKey: `fund-${buyer.accountId}`,
  });
  // 1222…: the SMSC takes the message and keeps its receipt until told to send it.
  const started = await api('POST', '/routes/check/sms', buyer.session, { routeId: w.routeId, number: '+12225550001' });
  t.equal(started.status, 202, JSON.stringify(started.body));
  const checkId = started.body.data.checkId as string;
  const accepted = await waitResult(w, checkId, ['accepted'], buyer.session);
  t.match(accepted.routes[0], { result: 'accepted', cost: '0.010500', receiptAt: null });
  await smsc.waitFor(/^HELD /);

  // The daemon stops (its supplier bind closes, its memory of the send is gone) and a new one
  // starts on the same database.
  const closed = smsc.lines.filter((l) => /^CLOSE/.test(l)).length;
  await w.h.services.sms.stop();
  await smsc.waitFor(/^CLOSE/, closed + 1);
  const core = {
    config: w.h.config,
    sql: w.h.sql,
    log: pino({ level: 'silent' }),
    clock: systemClock,
    redis: null,
    health: createHealthRegistry(),
  };
  const restarted = await buildModules(core);
  t.teardown(() => restarted.services.sms.stop());
  const checks = restarted.services.routeChecks;
  const who = { accountId: buyer.accountId, parentId: null, mode: 'live' as const };

  // Its first test message opens a bind; the SMSC then sends the held receipt on it.
  const binds = smsc.lines.filter((l) => /^BIND .* ok/.test(l)).length;
  const next = await checks.startSms(who, { routeId: w.routeId, number: '+12125550002' });
  await smsc.waitFor(/^BIND .* ok/, binds + 1);
  smsc.send('release');
  const done = await eventually(async () => {
    const c = await checks.get(buyer.accountId, checkId);
    return c.routes[0]!.result === 'delivered' ? c : null;
  }, 10_000);
  t.match(done.routes[0], { result: 'delivered', carrierStatus: 'DELIVRD', routeReturnsReceipts: true });
  t.equal(done.totalCost, '0.010500', 'billed once, before the restart');
  const [keys] = await w.h.sql<{ n: number }[]>`
    select count(*)::int as n from route_check_legs where check_id = ${checkId} and supplier_keys is not null`;
  t.equal(keys!.n, 0, 'the receipt keys are cleared once the final receipt applied');
  await eventually(async () => (await checks.get(buyer.accountId, next.checkId)).routes[0]!.result === 'delivered');
});
