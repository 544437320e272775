import t from 'tap';
import { startTestDaemon } from '../../helpers/daemon.js';

t.test('profile, billing details frozen into invoices, audit log', async (t) => {
  const d = await startTestDaemon(t);
  const svc = d.modules.services;
  const acc = await svc.accounts.createAccount({ email: 'profile@example.test', password: 'correct horse battery' });
  const token = (await svc.accounts.login('profile@example.test', 'correct horse battery', {})).accessToken;
  const call = (method: string, path: string, body?: unknown, as = token) => d.https(method, path, { token: as, body });

  const p0 = await call('GET', '/account/profile');
  t.same(p0.json.data, { displayName: null, timeZone: 'UTC', currencyDisplay: 'USD', locale: 'en', updatedAt: null });
  const badTz = await call('PATCH', '/account/profile', { timeZone: 'Mars/Olympus_Mons' });
  t.equal(badTz.status, 400);
  t.equal(badTz.json.error.details[0].path, 'timeZone');
  const p1 = await call('PATCH', '/account/profile', { timeZone: 'Europe/Berlin', displayName: 'Ops desk' });
  t.match(p1.json.data, { timeZone: 'Europe/Berlin', displayName: 'Ops desk', currencyDisplay: 'USD' });

  const details = {
    companyName: 'Example Telecom GmbH',
    taxId: 'DE123456789',
    billingEmail: 'billing@example.test',
    address: { line1: 'Hauptstr. 1', city: 'Berlin', postalCode: '10115', country: 'DE' },
  };
  const put = await call('PUT', '/account/billing-details', details);
  t.equal(put.status, 200, put.text);
  t.match(put.json.data, details);

  await svc.topups.topup({
    accountId: acc.id,
    amount: '100',
    source: 'wire',
    reference: 'w1',
    postingKey: 'profile-topup',
  });
  await call('PUT', '/account/billing-details', { ...details, companyName: 'Renamed GmbH' });
  const inv = (await call('GET', '/billing/invoices')).json.data[0];
  t.match(inv.billedTo, { companyName: 'Example Telecom GmbH', taxId: 'DE123456789', email: 'billing@example.test' });
  t.match(inv.billedTo.address, { city: 'Berlin', country: 'DE' }, 'the invoice keeps the details it was issued with');

  const log = await call('GET', '/account/audit-log');
  t.equal(log.status, 200, log.text);
  t.same(
    log.json.data.map((e: { action: string }) => e.action),
    ['billing_details.updated', 'billing_details.updated', 'profile.updated'],
  );
  t.same(log.json.data[0].changes, { companyName: { from: 'Example Telecom GmbH', to: 'Renamed GmbH' } });
  t.match(log.json.data[2], {
    actorId: acc.id,
    credential: 'session',
    changes: { timeZone: { from: 'UTC', to: 'Europe/Berlin' } },
  });
  await call('PATCH', '/account/profile', { timeZone: 'Europe/Berlin' });
  t.equal((await call('GET', '/account/audit-log')).json.data.length, 3, 'an unchanged value is not logged');

  const low = await call('PUT', '/account/low-balance-threshold', { threshold: '50' });
  t.same(low.json.data, { threshold: '50.000000', default: '5.000000', effective: '50.000000' });
  await svc.ledger.charge({ postingKey: 'profile-spend', accountId: acc.id, amount: '60.000000' });
  const [lowEv] = await d.sql<{ data: Record<string, unknown> }[]>`
    select data from events where account_id = ${acc.id} and event = 'balance.low'`;
  t.match(lowEv?.data, { balance: '40.000000' }, "balance.low at the account's own line");
  const reset = await call('PUT', '/account/low-balance-threshold', { threshold: null });
  t.equal(reset.json.data.effective, '5.000000');

  const readKey = (await svc.keys.create(acc.id, { mode: 'live', scopes: ['account:read'] })).secret;
  t.equal((await call('GET', '/account/profile', undefined, readKey)).status, 200);
  const refused = await call('PATCH', '/account/profile', { locale: 'de' }, readKey);
  t.equal(refused.status, 403);
  t.match(refused.json.error.message, /account:write/);
  t.equal((await call('GET', '/account/audit-log', undefined, readKey)).status, 403, 'full access only');
});
