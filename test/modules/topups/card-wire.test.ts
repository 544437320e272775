import { randomUUID } from 'node:crypto';
import t from 'tap';
import { startTestDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { startStripeServer } from './stripe-server.js';

const WHSEC = 'whsec_test_0123456789abcdef';

async function signUp(d: TestDaemon, email: string, role: 'customer' | 'admin' = 'customer') {
  const { accounts } = d.modules.services;
  const a = await accounts.createAccount({ email, password: 'correct horse battery', role });
  return { id: a.id, token: (await accounts.login(email, 'correct horse battery', {})).accessToken };
}

async function startWithStripe(t: { teardown(fn: () => unknown): void }) {
  const stripe = await startStripeServer(t, WHSEC);
  const d = await startTestDaemon(t, {
    billing: {
      stripe_secret_key: 'sk_test_svc',
      stripe_webhook_secret: WHSEC,
      stripe_api_url: stripe.url,
      stripe_ca_file: stripe.caFile,
      wire_bank_name: 'Example Bank',
      wire_account_name: 'Exchange Ltd',
      wire_iban: 'GB33BUKB20201555555555',
      wire_swift: 'BUKBGB22',
      // The housekeeping loop is driven by hand in these tests.
      auto_recharge_check_seconds: 3600,
    },
  });
  const post = (path: string, token: string, body: unknown) =>
    d.https('POST', path, { token, body, headers: { 'x-idempotency-key': randomUUID() } });
  const webhook = (e: { payload: string; signature: string }) =>
    d.https('POST', '/topups/stripe/webhook', { rawBody: e.payload, headers: { 'stripe-signature': e.signature } });
  return { stripe, d, post, webhook };
}

/** The outbox events of an account, oldest first. */
const events = (d: TestDaemon, accountId: string) =>
  d.sql<{ event: string; data: Record<string, unknown> }[]>`
    select event, data from events where account_id = ${accountId} order by created_at, id`;

t.test('card top-up: PaymentIntent, signed webhook credits once, receipt, held balance, dispute', async (t) => {
  const { stripe, d, post, webhook } = await startWithStripe(t);
  const { ledger } = d.modules.services;
  const buyer = await signUp(d, 'card-buyer@example.test');

  const small = await post('/topups/card', buyer.token, { amount: '4.99' });
  t.equal(small.status, 400, 'below the 5 USD card minimum');
  t.equal(small.json.error.code, 'VALIDATION_ERROR');
  const fractional = await post('/topups/card', buyer.token, { amount: '10.001' });
  t.equal(fractional.status, 400, 'cards take cents, not six places');

  const created = await post('/topups/card', buyer.token, { amount: '25.50', saveCard: true });
  t.equal(created.status, 201, created.text);
  const topup = created.json.data;
  t.match(topup, { method: 'card', status: 'pending', amount: '25.500000', creditedAmount: null, currency: 'USD' });
  t.match(topup.clientSecret, /^pi_.*_secret_/);
  const piReq = stripe.requests.find((r) => r.path === '/v1/payment_intents')!;
  t.equal(piReq.body['amount'], '2550', 'Stripe is asked for cents');
  t.equal(piReq.body['currency'], 'usd');
  t.equal((piReq.body['metadata'] as Record<string, string>)['topupId'], topup.id);
  t.equal(piReq.body['setup_future_usage'], 'off_session', 'saveCard keeps the card for later');
  t.match(String(piReq.body['customer']), /^cus_/);
  t.equal(piReq.auth, 'Bearer sk_test_svc');
  t.equal(piReq.key, `topup:${topup.id}`, "Stripe's idempotency key is the top-up");
  const intentId = [...stripe.intents.keys()][0]!;
  t.equal((await ledger.balanceOf(buyer.id)).balance, '0.000000', 'nothing credited before Stripe says so');

  const pi = stripe.confirm(intentId);
  const ev = stripe.event('payment_intent.succeeded', pi);
  const forged = await webhook({ payload: ev.payload, signature: stripe.sign(ev.payload, 'whsec_wrong') });
  t.equal(forged.status, 401, 'a signature with another secret is refused');
  const unsigned = await d.https('POST', '/topups/stripe/webhook', { rawBody: ev.payload });
  t.equal(unsigned.status, 401);
  const stale = await webhook({
    payload: ev.payload,
    signature: stripe.sign(ev.payload, WHSEC, Math.floor(Date.now() / 1000) - 3600),
  });
  t.equal(stale.status, 401, 'an old timestamp is refused');
  t.equal((await ledger.balanceOf(buyer.id)).balance, '0.000000');

  const ok = await webhook(ev);
  t.equal(ok.status, 200, ok.text);
  t.match(ok.json.data, { received: true, type: 'payment_intent.succeeded', applied: true });
  const again = await webhook(ev);
  t.equal(again.json.data.applied, false, 'a redelivered event is applied once');
  const sameIntent = await webhook(stripe.event('payment_intent.succeeded', pi));
  t.equal(sameIntent.status, 200);
  t.equal((await ledger.balanceOf(buyer.id)).balance, '25.500000', 'credited once, to the cent');

  const one = await d.https('GET', `/topups/${topup.id}`, { token: buyer.token });
  t.match(one.json.data, {
    status: 'succeeded',
    creditedAmount: '25.500000',
    card: { brand: 'visa', last4: '4242' },
    clientSecret: null,
    receiptNumber: /^R-\d{8}$/,
  });
  const receipt = await d.https('GET', `/topups/${topup.id}/receipt`, { token: buyer.token });
  t.equal(receipt.status, 200, receipt.text);
  t.match(receipt.json.data, {
    topupId: topup.id,
    amount: '25.500000',
    currency: 'USD',
    method: 'card',
    card: { brand: 'visa', last4: '4242' },
    billedTo: { email: 'card-buyer@example.test' },
    transactionId: one.json.data.transactionId,
  });
  const summary = await d.https('GET', '/billing/summary', { token: buyer.token });
  t.equal(summary.json.data.heldBalance, '25.500000', 'a fresh card top-up sits inside the chargeback hold');
  const txs = await d.https('GET', '/billing/transactions?type=topup', { token: buyer.token });
  t.match(txs.json.data[0], { type: 'topup', amount: '25.500000', balanceAfter: '25.500000' });
  t.match(
    (await events(d, buyer.id)).map((e) => e.event),
    ['topup.confirmed'],
  );

  const methods = await d.https('GET', '/topups/methods', { token: buyer.token });
  t.match(methods.json.data, {
    methods: [
      { method: 'card', enabled: true, minimum: '5.000000' },
      { method: 'wire', enabled: true, minimum: '100.000000' },
      { method: 'x402', enabled: false },
    ],
    savedCard: { brand: 'visa', last4: '4242' },
  });

  // Spent most of it, then the card holder disputes the payment: the network takes it back anyway.
  await ledger.charge({ postingKey: 'spend-1', accountId: buyer.id, amount: '20.000000' });
  const dispute = {
    id: 'dp_1',
    object: 'dispute',
    amount: 2550,
    currency: 'usd',
    payment_intent: intentId,
    reason: 'fraudulent',
    status: 'needs_response',
  };
  const opened = await webhook(stripe.event('charge.dispute.created', dispute));
  t.equal(opened.json.data?.applied, true, opened.text);
  t.equal((await ledger.balanceOf(buyer.id)).balance, '0.000000', 'the chargeback takes all the balance has');
  const disputed = (await d.https('GET', `/topups/${topup.id}`, { token: buyer.token })).json.data;
  t.match(disputed, { status: 'disputed', chargebackOutstanding: '20.000000' });
  const cb = (await events(d, buyer.id)).find((e) => e.event === 'topup.chargeback')!;
  t.match(cb.data, { topupId: topup.id, amount: '25.500000', taken: '5.500000', outstanding: '20.000000' });
  t.match(cb.data, { reason: 'fraudulent', balance: '0.000000' });
  // The next credit repays what the chargeback could not take.
  await d.modules.services.topups.topup({
    accountId: buyer.id,
    amount: '100',
    source: 'wire',
    reference: 'after-dispute',
    postingKey: 'svcctl:topup:wire:after-dispute',
  });
  t.equal((await ledger.balanceOf(buyer.id)).balance, '80.000000', '100 credited, 20 outstanding taken');
  const repaid = (await d.https('GET', `/topups/${topup.id}`, { token: buyer.token })).json.data;
  t.equal(repaid.chargebackOutstanding, '0.000000');
  const won = await webhook(stripe.event('charge.dispute.closed', { ...dispute, status: 'won' }));
  t.equal(won.json.data.applied, true);
  t.equal((await ledger.balanceOf(buyer.id)).balance, '105.500000', 'a won dispute returns all that was taken');
  t.equal((await d.https('GET', `/topups/${topup.id}`, { token: buyer.token })).json.data.status, 'succeeded');
  const chargebacks = await d.https('GET', '/billing/transactions?type=chargeback', { token: buyer.token });
  t.same(
    chargebacks.json.data.map((x: { amount: string }) => x.amount),
    ['25.500000', '-20.000000', '-5.500000'],
  );

  const other = await signUp(d, 'card-other@example.test');
  const foreign = await d.https('GET', `/topups/${topup.id}/receipt`, { token: other.token });
  t.equal(foreign.status, 404, "another account's receipt is not found");
});

t.test('card top-up: failure, cancel, listing, test keys', async (t) => {
  const { stripe, d, post, webhook } = await startWithStripe(t);
  const { keys } = d.modules.services;
  const buyer = await signUp(d, 'card-fail@example.test');

  const a = (await post('/topups/card', buyer.token, { amount: '10' })).json.data;
  const piA = [...stripe.intents.values()].find((p) => (p['metadata'] as Record<string, string>)['topupId'] === a.id)!;
  const failed = await webhook(stripe.event('payment_intent.payment_failed', stripe.fail(String(piA['id']))));
  t.equal(failed.json.data.applied, true);
  const afterFail = (await d.https('GET', `/topups/${a.id}`, { token: buyer.token })).json.data;
  t.match(afterFail, { status: 'failed', failureReason: 'Your card has insufficient funds.', creditedAmount: null });
  t.match(
    (await events(d, buyer.id)).map((e) => e.event),
    ['topup.failed'],
  );
  const noReceipt = await d.https('GET', `/topups/${a.id}/receipt`, { token: buyer.token });
  t.equal(noReceipt.status, 404);

  const b = (await post('/topups/card', buyer.token, { amount: '15' })).json.data;
  const canceled = await post(`/topups/${b.id}/cancel`, buyer.token, {});
  t.equal(canceled.status, 200, canceled.text);
  t.equal(canceled.json.data.status, 'canceled');
  t.ok(
    stripe.requests.some((r) => r.path.endsWith('/cancel')),
    'the PaymentIntent is canceled at Stripe',
  );
  const twice = await post(`/topups/${b.id}/cancel`, buyer.token, {});
  t.equal(twice.status, 409);

  const list = await d.https('GET', '/topups?limit=1', { token: buyer.token });
  t.equal(list.json.data.length, 1);
  t.equal(list.json.data[0].id, b.id, 'newest first');
  t.equal(list.json.hasMore, true);
  const next = await d.https('GET', `/topups?limit=1&cursor=${list.json.nextCursor}`, { token: buyer.token });
  t.equal(next.json.data[0].id, a.id);
  t.equal(next.json.hasMore, false);
  const onlyFailed = await d.https('GET', '/topups?status=failed', { token: buyer.token });
  t.same(
    onlyFailed.json.data.map((x: { id: string }) => x.id),
    [a.id],
  );

  const test = (await keys.create(buyer.id, { mode: 'test' })).secret;
  const tk = await post('/topups/card', test, { amount: '10' });
  t.equal(tk.status, 403);
  t.equal(tk.json.error.code, 'TEST_KEY_NOT_ALLOWED', 'a test key never starts a real payment');
  const readOnly = (await keys.create(buyer.id, { mode: 'live', scopes: ['account:read'] })).secret;
  const scoped = await post('/topups/card', readOnly, { amount: '10' });
  t.equal(scoped.status, 403);
  t.match(scoped.json.error.message, /billing:write/);
  t.equal((await d.https('GET', '/topups', { token: readOnly })).status, 200, 'history reads with account:read');
});

t.test('auto-recharge charges the saved card off-session below the threshold', async (t) => {
  const { stripe, d, post, webhook } = await startWithStripe(t);
  const { ledger, topups } = d.modules.services;
  const buyer = await signUp(d, 'auto@example.test');

  const noCard = await d.https('PUT', '/topups/auto-recharge', {
    token: buyer.token,
    body: { enabled: true, threshold: '10', amount: '20' },
  });
  t.equal(noCard.status, 400, 'auto-recharge needs a saved card');

  const first = (await post('/topups/card', buyer.token, { amount: '12', saveCard: true })).json.data;
  const pi = [...stripe.intents.values()].find(
    (p) => (p['metadata'] as Record<string, string>)['topupId'] === first.id,
  )!;
  await webhook(stripe.event('payment_intent.succeeded', stripe.confirm(String(pi['id']), 'pm_saved_1')));

  const put = await d.https('PUT', '/topups/auto-recharge', {
    token: buyer.token,
    body: { enabled: true, threshold: '10', amount: '20', dailyLimit: '40' },
  });
  t.equal(put.status, 200, put.text);
  t.match(put.json.data, {
    enabled: true,
    threshold: '10.000000',
    amount: '20.000000',
    dailyLimit: '40.000000',
    card: { brand: 'visa', last4: '4242' },
  });

  await topups.housekeeping();
  t.equal((await ledger.balanceOf(buyer.id)).balance, '12.000000', 'above the threshold: nothing charged');

  await ledger.charge({ postingKey: 'auto-spend-1', accountId: buyer.id, amount: '5.000000' });
  await topups.housekeeping();
  t.equal((await ledger.balanceOf(buyer.id)).balance, '27.000000', '7 + 20 recharged');
  const offSession = stripe.requests.filter((r) => r.body['off_session'] === 'true');
  t.equal(offSession.length, 1);
  t.match(offSession[0]!.body, { amount: '2000', payment_method: 'pm_saved_1', confirm: 'true' });
  const auto = (await d.https('GET', '/topups?limit=1', { token: buyer.token })).json.data[0];
  t.match(auto, { origin: 'auto', status: 'succeeded', creditedAmount: '20.000000' });

  await ledger.charge({ postingKey: 'auto-spend-2', accountId: buyer.id, amount: '20.000000' });
  await topups.housekeeping();
  t.equal((await ledger.balanceOf(buyer.id)).balance, '7.000000', 'one attempt per retry window');

  // Another account whose saved card is declined off-session.
  const other = await signUp(d, 'auto-declined@example.test');
  const o1 = (await post('/topups/card', other.token, { amount: '6', saveCard: true })).json.data;
  const opi = [...stripe.intents.values()].find((p) => (p['metadata'] as Record<string, string>)['topupId'] === o1.id)!;
  await webhook(stripe.event('payment_intent.succeeded', stripe.confirm(String(opi['id']), 'pm_declines')));
  stripe.declined.add('pm_declines');
  await d.https('PUT', '/topups/auto-recharge', {
    token: other.token,
    body: { enabled: true, threshold: '10', amount: '25' },
  });
  await topups.housekeeping();
  t.equal((await ledger.balanceOf(other.id)).balance, '6.000000');
  const view = (await d.https('GET', '/topups/auto-recharge', { token: other.token })).json.data;
  t.equal(view.lastFailure, 'Your card was declined.');
  t.equal(view.dailyLimit, '75.000000', 'default daily limit: three recharges');
  const declined = (await d.https('GET', '/topups?limit=1', { token: other.token })).json.data[0];
  t.match(declined, { origin: 'auto', status: 'failed' });
  t.ok((await events(d, other.id)).some((e) => e.event === 'auto_recharge.failed'));
});

t.test('bank wire: reference, operator confirm by reference, receipt, expiry', async (t) => {
  const { d, post } = await startWithStripe(t);
  const { ledger, topups } = d.modules.services;
  const buyer = await signUp(d, 'wire-buyer@example.test');
  const operator = await signUp(d, 'wire-operator@example.test', 'admin');

  const small = await post('/topups/wire', buyer.token, { amount: '99.99' });
  t.equal(small.status, 400, 'the wire minimum is 100 USD');
  const created = await post('/topups/wire', buyer.token, { amount: '250' });
  t.equal(created.status, 201, created.text);
  const { topup, instructions } = created.json.data;
  t.match(topup, { method: 'wire', status: 'awaiting_funds', amount: '250.000000' });
  t.match(topup.reference, /^SVC-[0-9A-HJKMNP-TV-Z]{5}-[0-9A-HJKMNP-TV-Z]{5}$/);
  t.match(instructions, { bankName: 'Example Bank', accountName: 'Exchange Ltd', swift: 'BUKBGB22' });

  const asTyped = topup.reference.toLowerCase().replace(/-/g, ' ');
  const byCustomer = await post('/topups/wire/confirm', buyer.token, { reference: asTyped, amount: '249.50' });
  t.equal(byCustomer.status, 403, 'only an operator confirms a wire');
  const unknown = await post('/topups/wire/confirm', operator.token, { reference: 'SVC-00000-00000', amount: '100' });
  t.equal(unknown.status, 404);
  const confirmed = await post('/topups/wire/confirm', operator.token, {
    reference: asTyped,
    amount: '249.50',
    bankReference: 'BANK-TX-7',
  });
  t.equal(confirmed.status, 200, confirmed.text);
  t.match(confirmed.json.data, { status: 'succeeded', creditedAmount: '249.500000', amount: '250.000000' });
  t.equal((await ledger.balanceOf(buyer.id)).balance, '249.500000', 'the amount received is credited');
  const twice = await post('/topups/wire/confirm', operator.token, { reference: topup.reference, amount: '249.50' });
  t.equal(twice.status, 409, 'a wire credits once');
  t.equal((await ledger.balanceOf(buyer.id)).balance, '249.500000');
  const receipt = await d.https('GET', `/topups/${topup.id}/receipt`, { token: buyer.token });
  t.match(receipt.json.data, { method: 'wire', amount: '249.500000', reference: topup.reference });
  const tx = (await d.https('GET', '/billing/transactions', { token: buyer.token })).json.data[0];
  t.match(tx, { type: 'topup', amount: '249.500000', reference: `wire ${topup.reference} (BANK-TX-7)` });

  const second = (await post('/topups/wire', buyer.token, { amount: '100' })).json.data.topup;
  const cancel = await post(`/topups/${second.id}/cancel`, buyer.token, {});
  t.equal(cancel.json.data.status, 'canceled');
  const third = (await post('/topups/wire', buyer.token, { amount: '100' })).json.data.topup;
  await d.sql`update topups set expires_at = now() - interval '1 minute' where id = ${third.id}`;
  await topups.housekeeping();
  t.equal((await d.https('GET', `/topups/${third.id}`, { token: buyer.token })).json.data.status, 'expired');
  const late = await post('/topups/wire/confirm', operator.token, { reference: third.reference, amount: '100' });
  t.equal(late.json.data.status, 'succeeded', 'money that arrives after expiry is still credited');
  t.equal((await ledger.balanceOf(buyer.id)).balance, '349.500000');

  // Operator credits (svcctl topup) join the history too.
  await topups.topup({
    accountId: buyer.id,
    amount: '100',
    source: 'wire',
    reference: 'manual-1',
    postingKey: 'svcctl:topup:wire:manual-1',
  });
  const latest = (await d.https('GET', '/topups?limit=1', { token: buyer.token })).json.data[0];
  t.match(latest, { origin: 'operator', method: 'wire', status: 'succeeded', creditedAmount: '100.000000' });
});
