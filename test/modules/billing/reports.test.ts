import { randomUUID } from 'node:crypto';
import t from 'tap';
import { startTestDaemon, type TestDaemon } from '../../helpers/daemon.js';

async function signUp(d: TestDaemon, email: string) {
  const { accounts } = d.modules.services;
  const a = await accounts.createAccount({ email, password: 'correct horse battery' });
  return { id: a.id, token: (await accounts.login(email, 'correct horse battery', {})).accessToken };
}

t.test('billing reports, statements, invoices, exports and spending alerts', async (t) => {
  const d = await startTestDaemon(t);
  const svc = d.modules.services;
  const buyer = await signUp(d, 'reports-buyer@example.test');
  const seller = await signUp(d, 'reports-seller@example.test');
  const get = (path: string, token: string) => d.https('GET', path, { token });

  await svc.topups.topup({
    accountId: buyer.id,
    amount: '100',
    source: 'wire',
    reference: 'r1',
    postingKey: 'rep-topup',
  });
  await svc.ledger.charge({
    postingKey: 'rep-c1',
    accountId: buyer.id,
    sellerId: seller.id,
    amount: '1.000000',
    fee: '0.200000',
  });
  await svc.ledger.charge({ postingKey: 'rep-c2', accountId: buyer.id, sellerId: seller.id, amount: '0.500000' });
  const routeId = randomUUID();
  await d.sql`insert into routes (id, seller_id, type, name, country) values (${routeId}, ${seller.id}, 'voice', 'UK Mobile', 'GB')`;
  const cdr = (o: Record<string, unknown>) => ({
    id: randomUUID(),
    account_id: buyer.id,
    seller_id: seller.id,
    call_uuid: randomUUID(),
    direction: 'outbound',
    kind: 'voice',
    route_id: routeId,
    to_number: null,
    status: 'completed',
    answered_at: null,
    duration_seconds: null,
    billed_seconds: null,
    segments: null,
    buyer_cost: null,
    seller_credit: null,
    is_probe: false,
    created_at: new Date(),
    ...o,
  });
  const rows = [
    cdr({
      to_number: '447700900123',
      answered_at: new Date(),
      duration_seconds: 60,
      billed_seconds: 60,
      buyer_cost: '1.200000',
      seller_credit: '1.000000',
    }),
    cdr({ to_number: '447700900456', status: 'failed', billed_seconds: 0, buyer_cost: '0', seller_credit: '0' }),
    cdr({
      to_number: '447700900789',
      route_id: null,
      answered_at: new Date(),
      duration_seconds: 30,
      billed_seconds: 30,
      buyer_cost: '0.500000',
      seller_credit: '0.500000',
    }),
    cdr({ to_number: '12025550123', kind: 'sms', segments: 2, buyer_cost: '0.010000', seller_credit: null }),
    cdr({ to_number: '12025550124', is_probe: true, buyer_cost: '9.000000', seller_credit: '9.000000' }),
  ];
  await d.sql`insert into cdrs ${d.sql(rows as never)}`;

  const earnings = await get('/billing/earnings-by-route?days=7', seller.token);
  t.equal(earnings.status, 200, earnings.text);
  t.same(earnings.json.data, {
    items: [
      { routeId, destinationName: 'UK Mobile', credits: '1.000000', count: 2 },
      { routeId: null, destinationName: 'Unattributed', credits: '0.500000', count: 1 },
    ],
    days: 7,
    attribution: 'partial',
  });

  const usage = await get('/billing/usage-by-country', buyer.token);
  t.equal(usage.status, 200, usage.text);
  t.same(usage.json.data.items, [
    {
      country: 'United Kingdom',
      countryCode: 'GB',
      attempts: 3,
      records: 3,
      voiceSessions: 3,
      answered: 2,
      minutes: 1.5,
      segments: 0,
      asr: 66.67,
      asrBasis: 'voice_sessions',
      acd: 45,
      cost: '1.700000',
    },
    {
      country: 'United States',
      countryCode: 'US',
      attempts: 1,
      records: 1,
      voiceSessions: 0,
      answered: 0,
      minutes: 0,
      segments: 2,
      asr: null,
      asrBasis: null,
      acd: null,
      cost: '0.010000',
    },
  ]);
  t.match(usage.json.data.basis.window, { from: String, to: String });
  const csv = await get('/billing/usage-by-country?format=csv', buyer.token);
  t.match(csv.headers['content-type'], /text\/csv/);
  t.equal(csv.text.trim().split('\n').length, 3, 'header and two countries');
  const badWindow = await get(
    '/billing/usage-by-country?from=2026-01-01T00:00:00Z&to=2025-01-01T00:00:00Z',
    buyer.token,
  );
  t.equal(badWindow.status, 400);

  const month = new Date().toISOString().slice(0, 7);
  const months = await get('/billing/statements', buyer.token);
  t.match(months.json.data[0], {
    month,
    final: false,
    openingBalance: '0.000000',
    closingBalance: '98.300000',
    topups: '100.000000',
    spend: '1.700000',
  });
  const st = await get(`/billing/statements/${month}`, buyer.token);
  t.match(st.json.data.balance, { opening: '0.000000', closing: '98.300000', topups: '100.000000', spend: '1.700000' });
  t.same(
    st.json.data.balance.lines.map((l: { type: string; amount: string }) => [l.type, l.amount]),
    [
      ['charge', '-1.500000'],
      ['platform_fee', '-0.200000'],
      ['topup', '100.000000'],
    ],
  );
  const sellerSt = await get(`/billing/statements/${month}`, seller.token);
  t.match(sellerSt.json.data.earnings, {
    opening: '0.000000',
    closing: '1.500000',
    credited: '1.500000',
    paidOut: '0.000000',
  });
  const pdf = await get(`/billing/statements/${month}/pdf`, buyer.token);
  t.equal(pdf.status, 200);
  t.match(pdf.headers['content-type'], /application\/pdf/);
  t.ok(pdf.text.startsWith('%PDF-'), 'a PDF document');
  t.equal((await get('/billing/statements/2026-13', buyer.token)).status, 400);

  const invoices = await get('/billing/invoices', buyer.token);
  t.equal(invoices.json.data.length, 1);
  const inv = invoices.json.data[0];
  t.match(inv, {
    invoiceNumber: /^INV-\d{8}$/,
    status: 'paid',
    total: '100.000000',
    tax: '0.000000',
    currency: 'USD',
    paymentMethod: 'wire',
    billedTo: { email: 'reports-buyer@example.test' },
    identityFrozen: true,
  });
  const invPdf = await get(`/billing/invoices/${inv.id}/pdf`, buyer.token);
  t.ok(invPdf.text.startsWith('%PDF-'));
  t.equal((await get(`/billing/invoices/${inv.id}`, seller.token)).status, 404, "another account's invoice");

  const exp = await d.https('POST', '/billing/exports', { token: buyer.token, body: { kind: 'transactions' } });
  t.equal(exp.status, 202, exp.text);
  const cdrExp = await d.https('POST', '/billing/exports', {
    token: seller.token,
    body: { kind: 'cdrs', type: 'voice' },
  });
  t.equal(cdrExp.status, 202);
  await svc.billing.exports.stop(); // waits for the exports in flight
  const done = await get(`/billing/exports/${exp.json.data.id}`, buyer.token);
  t.match(done.json.data, { phase: 'completed', recordCount: 4, downloadable: true, truncated: false });
  const file = await get(done.json.data.downloadUrl, buyer.token);
  t.equal(file.status, 200);
  const lines = file.text.trim().split('\n');
  t.equal(lines.length, 5, 'header and the four entries');
  t.match(lines[0], /^id,userId,type,ledger,amount,balanceAfter/);
  const sellerFile = await get(`/billing/exports/${cdrExp.json.data.id}/download`, seller.token);
  t.equal(sellerFile.text.trim().split('\n').length, 4, 'the three voice records the seller sold, probes excluded');
  t.equal((await get(`/billing/exports/${exp.json.data.id}/download`, seller.token)).status, 404);
  t.equal((await get('/billing/exports', buyer.token)).json.data.length, 1);
  for (let i = 0; i < 3; i++)
    await d.sql`insert into billing_exports (id, account_id, kind, params, phase, expires_at, created_at)
                values (${randomUUID()}, ${buyer.id}, 'transactions', '{}', 'running', now() + interval '1 day', now())`;
  const fourth = await d.https('POST', '/billing/exports', { token: buyer.token, body: { kind: 'transactions' } });
  t.equal(fourth.status, 429);
  t.equal(fourth.json.error.code, 'TOO_MANY_EXPORTS');

  const alert = await d.https('POST', '/billing/alerts', {
    token: buyer.token,
    body: { period: 'day', threshold: '5' },
  });
  t.equal(alert.status, 201, alert.text);
  t.match(alert.json.data, { period: 'day', threshold: '5.000000', enabled: true, lastFiredPeriod: null });
  t.equal(await svc.billing.alerts.check(), 0, 'spend 1.70 is below 5');
  const lowered = await d.https('PATCH', `/billing/alerts/${alert.json.data.id}`, {
    token: buyer.token,
    body: { threshold: '1.5' },
  });
  t.equal(lowered.json.data.threshold, '1.500000');
  t.equal(await svc.billing.alerts.check(), 1);
  t.equal(await svc.billing.alerts.check(), 0, 'once per period');
  const [ev] = await d.sql<{ data: Record<string, unknown> }[]>`
    select data from events where account_id = ${buyer.id} and event = 'billing.spending_alert'`;
  t.match(ev!.data, { period: 'day', threshold: '1.500000', spend: '1.700000' });
  const del = await d.https('DELETE', `/billing/alerts/${alert.json.data.id}`, { token: buyer.token });
  t.equal(del.status, 200);
  t.same((await get('/billing/alerts', buyer.token)).json.data, []);
  t.equal((await d.https('DELETE', `/billing/alerts/${alert.json.data.id}`, { token: buyer.token })).status, 404);
});
