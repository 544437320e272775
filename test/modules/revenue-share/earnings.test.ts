/**
 * Pricing rules, and the money paths behind the SIP plane on a real daemon: calls recorded through
 * the traffic service (what the SIP handler calls when a call ends), the short-call rule, a cleared
 * flag, and a range released only once its supplier has paid.
 */
import t from 'tap';
import { createManualClock } from '../../../src/platform/clock.js';
import { billedSeconds, effectiveRules, payoutFor } from '../../../src/modules/revenue-share/traffic.js';
import { loadConfig } from '../../../src/config/load.js';
import { startTestDaemon } from '../../helpers/daemon.js';

t.test('billing increments, origin payouts and rule overrides', async (t) => {
  t.equal(billedSeconds(0, 1, 1), 0);
  t.equal(billedSeconds(7, 1, 1), 7);
  t.equal(billedSeconds(7, 60, 60), 60);
  t.equal(billedSeconds(61, 60, 60), 120);
  t.equal(billedSeconds(31, 30, 6), 36);
  const rows = [
    { origin: '', payoutPerMinute: '0.010000' },
    { origin: '44', payoutPerMinute: '0.020000' },
    { origin: '447', payoutPerMinute: '0.030000' },
  ];
  t.equal(payoutFor(rows, '447700900123')?.origin, '447', 'longest origin wins');
  t.equal(payoutFor(rows, '441234567890')?.origin, '44');
  t.equal(payoutFor(rows, '15550001111')?.origin, '');
  t.equal(payoutFor(rows.slice(1), '15550001111'), null, 'no row: no payout');
  const cfg = loadConfig({ overrides: {} }).revenue_share;
  const r = effectiveRules(cfg, { minSample: 3, maxShortCallRatio: 0.5, ignored: 'x' });
  t.equal(r.minSample, 3);
  t.equal(r.maxShortCallRatio, 0.5);
  t.equal(r.maxCallsPerSource, cfg.fraud_max_calls_per_source, 'the rest are the defaults');
});

t.test('short calls flag a number; supplier-payment ranges release once paid', async (t) => {
  const clock = createManualClock(new Date('2026-11-10T12:00:00Z'));
  const d = await startTestDaemon(t, {}, { clock });
  const rs = d.modules.services.revenueShare;
  const mk = async (email: string, role?: 'admin') =>
    (
      await d.modules.services.accounts.createAccount({
        email,
        password: 'correct horse battery',
        ...(role ? { role } : {}),
      })
    ).id;
  const operator = { accountId: await mk('op@rs.test', 'admin'), role: 'admin' as const };
  const supplierId = await mk('sup@rs.test');
  const holderId = await mk('holder@rs.test');

  const range = await rs.ranges.create(operator, {
    supplierId,
    name: 'Premium 99',
    countryCode: 'GB',
    country: 'United Kingdom',
    prefix: '4490',
    numberType: 'premium',
    ratePerMinute: '0.600000',
    payouts: [{ origin: '', payoutPerMinute: '0.300000' }],
    billingIncrement: '60/60',
    holdDays: 0,
    releaseOn: 'supplier_payment',
    sourceIps: ['127.0.0.1'],
  });
  await rs.ranges.addNumbers(operator, range.id, { numbers: ['449012345601', '449012345602'] });
  const [a, b] = await rs.ranges.allocate(holderId, { rangeId: range.id, quantity: 2 });
  await rs.earnings.putRules(operator, range.id, { minSample: 3, shortCallSeconds: 5, maxShortCallRatio: 0.5 });

  let seq = 0;
  const call = (numberId: string, seconds: number, from = `3361234${String(++seq).padStart(4, '0')}`) => {
    const startedAt = clock.now();
    const answeredAt = new Date(startedAt.getTime() + 1000);
    const endedAt = new Date(answeredAt.getTime() + seconds * 1000);
    return rs.traffic.record({
      numberId,
      sipCallId: `call-${seq}-${numberId}`,
      from,
      sourceIp: '127.0.0.1',
      startedAt,
      answeredAt,
      endedAt,
      sipCode: 200,
      hangupCause: 'caller-bye',
    });
  };

  // One 61-second call on a 60/60 range bills 120 s: payout 0.600000, charge 1.200000.
  await call(b!.id, 61);
  const [cdr] = await rs.stats.cdrs({ accountId: holderId, role: 'customer' }, { limit: 5, as: 'holder' });
  t.match(cdr, { billedSeconds: 120, payout: '0.600000', status: 'held' });

  // Three short calls on number a (all under 5 s, minSample 3): short_calls trips on the third.
  await call(a!.id, 2);
  await call(a!.id, 3);
  t.equal(
    (await rs.earnings.flags({ accountId: holderId, role: 'customer' }, { limit: 5 })).length,
    0,
    'two: no flag yet',
  );
  await call(a!.id, 1);
  const [flag] = await rs.earnings.flags({ accountId: holderId, role: 'customer' }, { limit: 5 });
  t.match(flag, { rule: 'short_calls', status: 'open', calls: 3, payout: '0.900000' });
  // A later call on the flagged number joins the flag.
  await call(a!.id, 30);
  t.equal((await rs.earnings.summary(holderId)).flagged, '1.200000');

  // Cleared by the supplier: back to held.
  const cleared = await rs.earnings.resolve({ accountId: supplierId, role: 'customer' }, flag!.id, { action: 'clear' });
  t.match(cleared, { status: 'cleared', calls: 4, transactionId: null });
  const before = await rs.earnings.summary(holderId);
  t.match(before, { held: '1.800000', flagged: '0.000000' });

  // Hold 0 days, but the range waits on the supplier's payment.
  clock.advance(86_400_000);
  t.equal(await rs.earnings.runReleases(), 0, 'unpaid: nothing released');
  t.equal((await rs.earnings.summary(holderId)).schedule[0]?.releaseOn, null, 'scheduled: waiting for the supplier');
  const paid = await rs.earnings.supplierPayment(operator, {
    rangeId: range.id,
    periodEnd: '2026-11-10',
    amount: '3.600000',
  });
  t.match(paid, { charged: '3.600000', paid: '3.600000', outstanding: '0.000000' });
  t.equal(await rs.earnings.runReleases(), 1);
  t.match(await rs.earnings.summary(holderId), { held: '0.000000', released: '1.800000' });
  const [bal] = await d.sql<{ b: string }[]>`
    select balance::text as b from ledger_accounts where owner_id = ${holderId} and kind = 'seller_payable'`;
  t.equal(bal!.b, '1.800000', 'released to the payable balance');
  const [recv] = await d.sql<{ s: string }[]>`
    select coalesce(sum(s.balance), 0)::text as s from ledger_account_shards s
    join ledger_accounts a on a.id = s.account_id where a.kind = 'revshare_receivable'`;
  t.equal(recv!.s, '0.000000', 'the supplier owes nothing after paying');
  const [all] = await d.sql<{ s: string }[]>`select coalesce(sum(amount), 0)::text as s from entries`;
  t.equal(Number(all!.s), 0, 'entries sum to zero');

  // Recording the same SIP call twice changes nothing.
  const again = await rs.traffic.record({
    numberId: b!.id,
    sipCallId: 'call-1-' + b!.id,
    from: '33612340001',
    sourceIp: '127.0.0.1',
    startedAt: clock.now(),
    answeredAt: clock.now(),
    endedAt: clock.now(),
    sipCode: 200,
    hangupCause: 'caller-bye',
  });
  t.equal(again, null, 'a repeated Call-ID is ignored');
});
