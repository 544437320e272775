import t from 'tap';
import { startTestDaemon, type TestDaemon } from '../../helpers/daemon.js';

async function operator(d: TestDaemon, email: string) {
  const a = await d.modules.services.accounts.createAccount({ email, password: 'correct horse battery' });
  const { accessToken } = await d.modules.services.accounts.login(email, 'correct horse battery', {});
  return { id: a.id, session: accessToken };
}

t.test('a test key makes a test sub-account: test key only, no SIP, no live money', async (t) => {
  const d = await startTestDaemon(t, { billing: { require_route_for_sub_accounts: false } });
  const { keys, application, ledger } = d.modules.services;
  const op = await operator(d, 'tester@example.com');
  const testKey = (await keys.create(op.id, { mode: 'test' })).secret;
  await ledger.topup({ accountId: op.id, amount: '50', source: 'card', postingKey: 'op-live-funds' });

  const made = await d.https('POST', '/application/sub-accounts', {
    token: testKey,
    body: { label: 'from a test key' },
  });
  t.equal(made.status, 201, made.text);
  const sub = made.json.data;
  t.match(sub.apiKey, /^svc_test_sk_/, 'never a live key from a test key');
  t.same(
    (await keys.list(sub.id)).map((k) => k.mode),
    ['test'],
  );
  t.equal(await application.lookupSipUser(sub.sipUsername), null, 'its SIP credentials place no live call');

  const subWrite = await d.https('POST', '/sip/trunk-ips', { token: sub.apiKey, body: { ip: '203.0.113.9' } });
  t.equal(subWrite.json.error.code, 'TEST_KEY_NOT_ALLOWED', "the sub-account's key is a test key everywhere");
  const fund = await d.https('POST', `/application/sub-accounts/${sub.id}/credit`, {
    token: op.session,
    body: { amount: '5' },
  });
  t.equal(fund.status, 400, 'live money never goes into a test sub-account');
  t.equal((await ledger.balanceOf(op.id)).balance, '50.000000');

  const credited = await d.https('POST', '/application/sub-accounts', {
    token: testKey,
    body: { label: 'credit', creditLimit: '1' },
  });
  t.equal(credited.status, 400, 'a test credit limit needs the operator test credit');
  t.match(credited.json.error.message, /^Insufficient balance/);
  await ledger.grantTestCredit({ postingKey: 'op-test-credit', accountId: op.id, amount: '2' });
  const bulk = await d.https('POST', '/application/sub-accounts/bulk', {
    token: testKey,
    body: {
      subAccounts: [
        { label: 'b1', creditLimit: '2' },
        { label: 'b2', creditLimit: '0.5' },
      ],
    },
  });
  t.equal(bulk.status, 201, bulk.text);
  t.equal(bulk.json.data.createdCount, 1, 'the second limit is no longer covered');
  t.match(bulk.json.data.created[0].apiKey, /^svc_test_sk_/);
  t.match(await ledger.balanceOf(op.id), {
    balance: '50.000000',
    held: '0.000000',
    testCredit: '2.000000',
    testHeld: '2.000000',
  });
  t.match(await ledger.balanceOf(bulk.json.data.created[0].id), { creditLimit: '0.000000' }, 'no live credit');
});

t.test('a narrow key cannot make a broader key, nor credit its operator does not have', async (t) => {
  // No payout hold: the earnings below count as withdrawable (availableBalance) at once.
  const d = await startTestDaemon(t, { billing: { require_route_for_sub_accounts: false, payout_hold_days: 0 } });
  const { keys, ledger } = d.modules.services;
  const op = await operator(d, 'reseller@example.com');
  const appOnly = (await keys.create(op.id, { mode: 'live', scopes: ['application:write'] })).secret;
  const noVoice = await d.https('POST', '/application/sub-accounts', { token: appOnly, body: { label: 'x' } });
  t.equal(noVoice.status, 403, 'a SIP password places calls: a key without voice:send cannot make one');
  t.equal(noVoice.json.error.code, 'FORBIDDEN');
  t.match(noVoice.json.error.message, /voice:send/);

  const narrow = (await keys.create(op.id, { mode: 'live', scopes: ['application:write', 'voice:send'] })).secret;
  const sms = await d.https('POST', '/comms/sms', { token: narrow, body: { to: '15551230000', message: 'hi' } });
  t.equal(sms.status, 403, 'the key itself cannot send SMS');

  const unbacked = await d.https('POST', '/application/sub-accounts', {
    token: narrow,
    body: { label: 'x', creditLimit: 10000000 },
  });
  t.equal(unbacked.status, 400);
  t.equal(unbacked.json.error.code, 'VALIDATION_ERROR');
  t.match(
    unbacked.json.error.message,
    /^Insufficient balance: a sub-account's credit limit is held on the operator's balance/,
  );
  const [count] = await d.sql<{ n: number }[]>`select count(*)::int as n from sub_accounts where parent_id = ${op.id}`;
  t.equal(count!.n, 0, 'nothing was created');

  await ledger.topup({ accountId: op.id, amount: '20', source: 'card', postingKey: 'op-funds' });
  const made = await d.https('POST', '/application/sub-accounts', {
    token: narrow,
    body: { label: 'customer', creditLimit: '20' },
  });
  t.equal(made.status, 201, made.text);
  const sub = made.json.data;
  t.match(sub.apiKey, /^svc_live_sk_/);
  t.same(
    (await keys.list(sub.id)).map((k) => k.scopes),
    [['application:write', 'voice:send']],
    "the sub-account's key has the creator's scopes",
  );
  const subSms = await d.https('POST', '/comms/sms', { token: sub.apiKey, body: { to: '15551230000', message: 'hi' } });
  t.equal(subSms.status, 403, "the sub-account's key cannot send SMS either");
  t.equal(subSms.json.error.code, 'FORBIDDEN');

  const opBal = await d.https('GET', '/account/balance', { token: op.session });
  t.match(
    opBal.json.data,
    { balance: '20.000000', held: '20.000000', available: '0.000000' },
    'the limit is held on the operator',
  );
  const more = await d.https('POST', `/application/sub-accounts/${sub.id}/credit`, {
    token: op.session,
    body: { amount: '1' },
  });
  t.match(more.json.error.message, /^Insufficient balance/, 'held money is not spent twice');

  // The sub-account's traffic on its operator's own route takes it to the bottom of its limit:
  // the seller's earnings are the operator's own held money, not credit nobody pays.
  await ledger.charge({ postingKey: 'sub-traffic', accountId: sub.id, sellerId: op.id, amount: '20.000000' });
  const summary = (await d.https('GET', '/billing/summary', { token: op.session })).json.data;
  t.equal(summary.availableBalance, '20.000000');
  const [family] = await d.sql<{ net: string }[]>`
    select sum(balance)::text as net from ledger_accounts where kind = 'customer' and owner_id in (${op.id}, ${sub.id})`;
  t.equal(family!.net, '0.000000', 'what the seller may withdraw, the operator paid');
  const over = await ledger
    .charge({ postingKey: 'sub-more', accountId: sub.id, amount: '0.000001' })
    .catch((e: { code: string }) => e.code);
  t.equal(over, 'SVC01', 'never below the backed limit');
});
