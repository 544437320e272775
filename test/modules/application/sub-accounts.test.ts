import { createHash } from 'node:crypto';
import t from 'tap';
import { createManualClock } from '../../../src/platform/clock.js';
import { newId } from '../../../src/platform/ids.js';
import { startTestDaemon, type TestDaemon } from '../../helpers/daemon.js';

async function operator(d: TestDaemon, email: string) {
  const a = await d.modules.services.accounts.createAccount({ email, password: 'correct horse battery' });
  return { id: a.id, key: (await d.modules.services.keys.create(a.id, { mode: 'live' })).secret };
}

async function call(
  d: TestDaemon,
  method: 'GET' | 'POST' | 'PUT',
  url: string,
  key: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const res = await d.app.inject({
    method,
    url: `/api/v1${url}`,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
  return { status: res.statusCode, json: res.json() };
}

t.test('create, SIP digest, rotation, key isolation, credit', async (t) => {
  const d = await startTestDaemon(t, {
    billing: { require_route_for_sub_accounts: false },
    sip: { primary_host: 'sip.example.test' },
  });
  const { ledger, application } = d.modules.services;
  const op = await operator(d, 'reseller@example.com');
  const other = await operator(d, 'other@example.com');

  // The credit limit is held on the operator's balance.
  await ledger.topup({ accountId: op.id, amount: '100', source: 'wire', postingKey: 'op-wire' });
  const created = await call(d, 'POST', '/application/sub-accounts', op.key, {
    label: 'Customer A',
    externalRef: 'crm-1',
    creditLimit: '2.5',
    markupPct: 12.5,
  });
  t.equal(created.status, 201, JSON.stringify(created.json));
  const sub = created.json.data;
  t.match(sub, {
    label: 'Customer A',
    externalRef: 'crm-1',
    balance: '0.000000',
    status: 'active',
    creditLimit: '2.50',
    markupPct: '12.500',
    currency: 'USD',
    autoSuspended: false,
  });
  t.match(sub.apiKey, /^svc_live_sk_/);
  t.ok(sub.apiKey.startsWith(sub.apiKeyPrefix));
  t.match(sub.sipUsername, /^sub_[a-z0-9]{12}$/);
  t.ok(sub.sipPassword.length >= 20);

  const [cred] = await d.sql<{ ha1: string }[]>`select * from sip_credentials where account_id = ${sub.id}`;
  const ha1 = createHash('md5').update(`${sub.sipUsername}:sip.example.test:${sub.sipPassword}`).digest('hex');
  t.equal(cred!.ha1, ha1, 'HA1 of username:primary_host:password');
  t.notOk(JSON.stringify(cred).includes(sub.sipPassword), 'password never stored in clear');
  t.same(await application.lookupSipUser(sub.sipUsername), { ha1, accountId: sub.id, parentId: op.id });
  t.equal(await application.lookupSipUser('sub_unknown'), null);

  const rot = await call(d, 'POST', `/application/sub-accounts/${sub.id}/sip-password`, op.key);
  t.equal(rot.status, 200);
  t.not(rot.json.data.sipPassword, sub.sipPassword);
  const after = await application.lookupSipUser(sub.sipUsername);
  t.equal(
    after!.ha1,
    createHash('md5').update(`${sub.sipUsername}:sip.example.test:${rot.json.data.sipPassword}`).digest('hex'),
  );
  t.not(after!.ha1, ha1, 'the old password stops at once');

  // Key isolation: the sub-account sees itself, never its siblings; other operators see nothing.
  const sib = (await call(d, 'POST', '/application/sub-accounts', op.key, { label: 'Customer B' })).json.data;
  t.equal((await call(d, 'GET', `/application/sub-accounts/${sub.id}`, sub.apiKey)).status, 200);
  t.equal((await call(d, 'GET', `/application/sub-accounts/${sib.id}`, sub.apiKey)).status, 404);
  t.equal((await call(d, 'GET', `/application/sub-accounts/${sub.id}`, other.key)).status, 404);
  t.equal((await call(d, 'GET', '/application/sub-accounts', sub.apiKey)).json.data.length, 0);
  t.equal(
    (await call(d, 'POST', '/application/sub-accounts', sub.apiKey, { label: 'nested' })).status,
    403,
    'a sub-account cannot resell',
  );

  const cr = await call(
    d,
    'POST',
    `/application/sub-accounts/${sub.id}/credit`,
    op.key,
    { amount: '30', reference: 'invoice 7' },
    { 'x-idempotency-key': 'credit-1' },
  );
  t.equal(cr.status, 200, JSON.stringify(cr.json));
  t.match(cr.json.data, { amount: '30.000000', balance: '30.000000', operatorBalance: '70.000000' });
  const replay = await call(
    d,
    'POST',
    `/application/sub-accounts/${sub.id}/credit`,
    op.key,
    { amount: '30', reference: 'invoice 7' },
    { 'x-idempotency-key': 'credit-1' },
  );
  t.same(replay.json.data.transactionId, cr.json.data.transactionId, 'idempotent');
  t.equal((await ledger.balanceOf(op.id)).balance, '70.000000');
  const broke = await call(d, 'POST', `/application/sub-accounts/${sub.id}/credit`, op.key, { amount: '70.000001' });
  t.equal(broke.status, 400);
  t.equal(broke.json.error.code, 'VALIDATION_ERROR');
  t.match(broke.json.error.message, /^Insufficient balance/);
  t.equal(
    (await call(d, 'POST', `/application/sub-accounts/${sub.id}/credit`, other.key, { amount: '1' })).status,
    404,
  );
  t.equal(
    (await call(d, 'POST', `/application/sub-accounts/${sub.id}/credit`, op.key, { amount: '1.0000001' })).status,
    400,
  );

  const subBal = await call(d, 'GET', '/account/balance', sub.apiKey);
  t.match(subBal.json.data, { balance: '30.000000', creditLimit: '2.500000', available: '32.500000' });
  const subTx = await call(d, 'GET', '/billing/transactions', sub.apiKey);
  t.same(
    subTx.json.data.map((x: { type: string; amount: string }) => `${x.type} ${x.amount}`),
    ['credit 30.000000'],
  );
  const opTx = await call(d, 'GET', '/billing/transactions?type=transfer', op.key);
  t.same(
    opTx.json.data.map((x: { amount: string; relatedEntityId: string }) => [x.amount, x.relatedEntityId]),
    [['-30.000000', sub.id]],
  );
});

t.test('list filters, bulk create, totals, settings, daily cap suspension and analytics', async (t) => {
  const clock = createManualClock(new Date('2026-06-01T09:00:00Z'));
  const d = await startTestDaemon(t, { billing: { require_route_for_sub_accounts: false } }, { clock });
  const { ledger, application } = d.modules.services;
  const op = await operator(d, 'op@example.com');

  const settings0 = await call(d, 'GET', '/application/settings', op.key);
  t.match(settings0.json.data, {
    operatorId: op.id,
    subLowBalanceThreshold: '5.00',
    defaultDailySpendCap: null,
    defaultMarkupPct: '0.000',
  });
  const put = await call(d, 'PUT', '/application/settings', op.key, {
    subLowBalanceThreshold: '10',
    brandName: 'Acme Voice',
    defaultDailySpendCap: 4,
  });
  t.match(put.json.data, { subLowBalanceThreshold: '10.00', brandName: 'Acme Voice', defaultDailySpendCap: '4.00' });
  t.equal((await call(d, 'PUT', '/application/settings', op.key, { subLowBalanceThreshold: '1000001' })).status, 400);

  const bulk = await call(d, 'POST', '/application/sub-accounts/bulk', op.key, {
    subAccounts: [
      { label: 'Alpha', externalRef: 'ext-alpha' },
      { label: 'Beta' },
      { label: 'Gamma', dailySpendCap: '0' },
    ],
  });
  t.equal(bulk.status, 201);
  t.match(bulk.json.data, { requested: 3, createdCount: 3, failed: [] });
  t.ok(bulk.json.data.created.every((c: { apiKey: string; sipPassword: string }) => c.apiKey && c.sipPassword));
  const [alpha, beta, gamma] = bulk.json.data.created as { id: string; apiKey: string }[];
  const partial = await application.bulkCreate(op.id, [
    { label: 'Good' },
    { label: 'Bad', creditLimit: 'not a number' },
  ]);
  t.match(partial, { requested: 2, createdCount: 1, failed: [{ label: 'Bad' }] }, 'each item independent');
  const tooMany = await call(d, 'POST', '/application/sub-accounts/bulk', op.key, {
    subAccounts: Array.from({ length: 101 }, (_, i) => ({ label: `x${i}` })),
  });
  t.equal(tooMany.status, 400);

  await ledger.topup({ accountId: op.id, amount: '100', source: 'wire', postingKey: 'w' });
  await ledger.transfer({ postingKey: 't1', fromAccountId: op.id, toAccountId: alpha!.id, amount: '20' });
  await ledger.transfer({ postingKey: 't2', fromAccountId: op.id, toAccountId: gamma!.id, amount: '20' });

  const page1 = await call(d, 'GET', '/application/sub-accounts?limit=2', op.key);
  t.equal(page1.json.data.length, 2);
  t.equal(page1.json.total, 4);
  t.equal(page1.json.hasMore, true);
  t.equal(page1.json.lowBalanceThreshold, '10.000000');
  const page2 = await call(d, 'GET', `/application/sub-accounts?limit=2&cursor=${page1.json.nextCursor}`, op.key);
  t.equal(page2.json.data.length, 2);
  t.equal(page2.json.hasMore, false);
  const found = await call(d, 'GET', '/application/sub-accounts?search=ext-al', op.key);
  t.same(
    found.json.data.map((s: { label: string }) => s.label),
    ['Alpha'],
  );
  t.equal(found.json.total, 1);
  const low = await call(d, 'GET', '/application/sub-accounts?lowBalanceOnly=true', op.key);
  t.same(low.json.data.map((s: { label: string }) => s.label).sort(), ['Beta', 'Good']);
  t.ok(low.json.data.every((s: { lowBalance: boolean }) => s.lowBalance));

  // Alpha follows the operator's default cap of 4; Gamma's own 0 means unlimited.
  const c1 = await ledger.charge({
    postingKey: 'a1',
    accountId: alpha!.id,
    sellerId: op.id,
    amount: '3.000000',
    fee: '0.100000',
    relatedEntityType: 'call',
  });
  t.equal(c1.capReached, false);
  const c2 = await ledger.charge({
    postingKey: 'a2',
    accountId: alpha!.id,
    amount: '1.000000',
    relatedEntityType: 'sms',
  });
  t.equal(c2.capReached, true);
  await ledger.charge({ postingKey: 'g1', accountId: gamma!.id, amount: '6.000000', relatedEntityType: 'call' });
  const blocked = await ledger
    .charge({ postingKey: 'a3', accountId: alpha!.id, amount: '0.100000' })
    .catch((e: { code: string }) => e.code);
  t.equal(blocked, 'SVC04', 'suspended for the rest of the day');
  const a = await call(d, 'GET', `/application/sub-accounts/${alpha!.id}`, op.key);
  t.match(a.json.data, { status: 'suspended', autoSuspended: true, balance: '15.900000' });
  t.equal((await call(d, 'GET', '/application/sub-accounts?status=suspended', op.key)).json.total, 1);
  await application.reconcileDailyCaps();
  clock.advance(86400_000);
  t.same(await application.reconcileDailyCaps(), { suspended: 0, resumed: 1 });
  const a2 = await call(d, 'GET', `/application/sub-accounts/${alpha!.id}`, op.key);
  t.match(a2.json.data, { status: 'active', autoSuspended: false }, 'lifted at the next UTC day');
  const evs = await d.sql<
    { event: string; accountId: string }[]
  >`select event, account_id from events where event like 'sub_account.%' order by created_at`;
  t.same(
    evs.map((e) => e.event),
    ['sub_account.suspended', 'sub_account.resumed'],
    'events written to the outbox',
  );
  t.ok(
    evs.every((e) => e.accountId === op.id),
    'delivered to the operator',
  );

  const totals = await call(d, 'GET', '/application/sub-accounts/totals', op.key);
  t.same(totals.json.data, { subCount: 4, activeSubCount: 4, aggregateBalance: 29.9 });
  const an = await call(d, 'GET', '/application/analytics?days=2', op.key);
  t.match(an.json.data.summary, {
    calls: 2,
    sms: 1,
    revenue: 10.1,
    margin: 3,
    carrierCost: 7.1,
    activeSubs: 4,
    minutes: 0,
  });
  t.same(an.json.data.timeseries, [
    { date: '2026-06-01', calls: 2, sms: 1, revenue: 10.1, margin: 3 },
    { date: '2026-06-02', calls: 0, sms: 0, revenue: 0, margin: 0 },
  ]);
  t.same(
    an.json.data.bySubAccount.map((s: { label: string; revenue: number }) => [s.label, s.revenue]),
    [
      ['Gamma', 6],
      ['Alpha', 4.1],
    ],
  );
  t.equal(beta!.id.length, 36);
});

t.test('creation needs an active purchase or own active route while the switch is on', async (t) => {
  const d = await startTestDaemon(t);
  const op = await operator(d, 'noroute@example.com');
  const r = await call(d, 'POST', '/application/sub-accounts', op.key, { label: 'x' });
  t.equal(r.status, 400);
  t.match(r.json.error.message, /requires an active route purchase or an active own route/);
  // An own active route listed by the operator (arranged in SQL: the marketplace is not under test).
  await d.sql`insert into routes (id, seller_id, type, name) values (${newId()}, ${op.id}, 'voice', 'own carrier')`;
  const ok = await call(d, 'POST', '/application/sub-accounts', op.key, { label: 'x' });
  t.equal(ok.status, 201, JSON.stringify(ok.json));
});
