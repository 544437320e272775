import { randomUUID } from 'node:crypto';
import t from 'tap';
import { createManualClock } from '../../../src/platform/clock.js';
import { createPayoutsRepo } from '../../../src/modules/payouts/repo.js';
import { createPayoutsService } from '../../../src/modules/payouts/service.js';
import { startTestDaemon, type TestDaemon } from '../../helpers/daemon.js';

const DESTINATION = { accountName: 'Seller Telecom Ltd', bankName: 'Example Bank', iban: 'GB33BUKB20201555555555' };

async function signUp(d: TestDaemon, email: string) {
  const { accounts } = d.modules.services;
  const a = await accounts.createAccount({ email, password: 'correct horse battery' });
  return { id: a.id, token: async () => (await accounts.login(email, 'correct horse battery', {})).accessToken };
}

t.test('payouts: session only, KYC, hold period, minimum, availableBalance, operator approval', async (t) => {
  const clock = createManualClock(new Date());
  const d = await startTestDaemon(t, {}, { clock });
  const svc = d.modules.services;
  const seller = await signUp(d, 'payout-seller@example.test');
  const buyer = await signUp(d, 'payout-buyer@example.test');
  await svc.topups.topup({ accountId: buyer.id, amount: '500', source: 'wire', postingKey: 'p-topup' });
  await svc.ledger.charge({ postingKey: 'p-sale-1', accountId: buyer.id, sellerId: seller.id, amount: '120.000000' });

  const list0 = await d.https('GET', '/payouts', { token: await seller.token() });
  t.equal(list0.status, 200, list0.text);
  t.match(list0.json, { data: [], availableBalance: '0.000000', minimum: '50.000000', holdDays: 14 });
  const summary0 = await d.https('GET', '/billing/summary', { token: await seller.token() });
  t.match(summary0.json.data, { totalEarnings: '120.000000', availableBalance: '0.000000' }, 'fresh earnings are held');

  const key = (await svc.keys.create(seller.id, { mode: 'live' })).secret;
  const body = { amount: '60', destination: DESTINATION };
  const byKey = await d.https('POST', '/payouts', { token: key, body });
  t.equal(byKey.status, 403, 'an API key cannot request a payout');
  t.equal(byKey.json.error.code, 'FORBIDDEN');
  const noKyc = await d.https('POST', '/payouts', {
    token: await seller.token(),
    body,
    headers: { 'x-idempotency-key': randomUUID() },
  });
  t.equal(noKyc.status, 403);
  t.equal(noKyc.json.error.code, 'KYC_REQUIRED', 'identity verification comes first');

  // Past the hold period, with a fresh sale that is still held.
  clock.advance(15 * 86_400_000);
  await svc.ledger.charge({ postingKey: 'p-sale-2', accountId: buyer.id, sellerId: seller.id, amount: '30.000000' });
  const token = await seller.token();
  t.equal((await d.https('GET', '/payouts', { token })).json.availableBalance, '120.000000');

  // The same rules with a verified identity (Compliance answers this once merged).
  const verified = createPayoutsService({
    sql: d.sql,
    clock,
    log: d.core.log,
    config: d.config,
    ledger: svc.ledger,
    repo: createPayoutsRepo(d.sql),
    kyc: { isVerified: async (id) => id === seller.id },
  });
  await t.rejects(verified.request(seller.id, { amount: '49.99', destination: DESTINATION }), {
    code: 'VALIDATION_ERROR',
  });
  await t.rejects(verified.request(seller.id, { amount: '100', destination: { accountName: 'No account' } }), {
    code: 'VALIDATION_ERROR',
  });
  await t.rejects(
    verified.request(seller.id, { amount: '120.01', destination: DESTINATION }),
    { code: 'VALIDATION_ERROR', message: /^Insufficient balance/ },
    'refused above availableBalance',
  );
  const [p1, p2] = await Promise.allSettled([
    verified.request(seller.id, { amount: '100', destination: DESTINATION, note: 'November' }),
    verified.request(seller.id, { amount: '100', destination: DESTINATION }),
  ]);
  t.equal([p1, p2].filter((p) => p.status === 'fulfilled').length, 1, 'two requests at once cannot both take it');
  const won = [p1, p2].find((p) => p.status === 'fulfilled');
  const paid = won!.value;
  t.match(paid, {
    status: 'pending_approval',
    amount: '100.000000',
    destination: { accountName: 'Seller Telecom Ltd', accountLast4: '5555' },
  });
  t.notOk(JSON.stringify(paid).includes('GB33BUKB20201555555555'), 'the full IBAN never leaves');

  const listed = await d.https('GET', '/payouts', { token });
  t.equal(listed.json.availableBalance, '20.000000', 'a pending request is not withdrawable twice');
  t.equal(listed.json.data[0].id, paid.id);
  t.same(
    (await svc.payouts.pending()).map((p) => p.id),
    [paid.id],
  );

  const approved = await svc.payouts.approve(paid.id, null, 'sent');
  t.match(approved, { status: 'paid', reviewNote: 'sent' });
  t.ok(approved.transactionId);
  await t.rejects(svc.payouts.approve(paid.id, null), { code: 'CONFLICT' }, 'paid once');
  t.equal((await svc.ledger.balanceOf(seller.id)).payable, '50.000000', '150 earned, 100 paid out');
  const tx = await d.https('GET', '/billing/transactions?type=payout', { token });
  t.match(tx.json.data, [{ type: 'payout', ledger: 'earnings', amount: '-100.000000', balanceAfter: '50.000000' }]);

  const second = await verified.request(seller.id, { amount: '20', destination: DESTINATION }).catch((e) => e);
  t.match(second, { code: 'VALIDATION_ERROR' }, '20 is below the minimum');
  clock.advance(15 * 86_400_000);
  const third = await verified.request(seller.id, { amount: '50', destination: DESTINATION });
  const rejected = await svc.payouts.reject(third.id, null, 'bank details do not match the verified name');
  t.match(rejected, { status: 'rejected', reviewNote: 'bank details do not match the verified name' });
  t.equal((await d.https('GET', '/payouts', { token: await seller.token() })).json.availableBalance, '50.000000');

  const evs = await d.sql<{ event: string }[]>`
    select event from events where account_id = ${seller.id} and event like 'payout.%' order by created_at, id`;
  t.same(
    evs.map((e) => e.event),
    ['payout.requested', 'payout.paid', 'payout.requested', 'payout.rejected'],
  );
});
