import { randomUUID } from 'node:crypto';
import t from 'tap';
import { newId } from '../../../src/platform/ids.js';
import { startTestDaemon } from '../../helpers/daemon.js';

t.test('sub-account lifecycle: suspend, resume, transfer back, keys, SIP, usage, records, close', async (t) => {
  const d = await startTestDaemon(t, { billing: { require_route_for_sub_accounts: false } });
  const svc = d.modules.services;
  const op = await svc.accounts.createAccount({ email: 'manage-op@example.test', password: 'correct horse battery' });
  const token = (await svc.accounts.login('manage-op@example.test', 'correct horse battery', {})).accessToken;
  await svc.accounts.createAccount({
    email: 'manage-other@example.test',
    password: 'correct horse battery',
  });
  const otherToken = (await svc.accounts.login('manage-other@example.test', 'correct horse battery', {})).accessToken;
  await svc.topups.topup({ accountId: op.id, amount: '100', source: 'wire', postingKey: 'manage-topup' });
  const call = (method: string, path: string, body?: unknown, as = token) =>
    d.https(method, path, { token: as, body, headers: { 'x-idempotency-key': randomUUID() } });

  const made = await call('POST', '/application/sub-accounts', { label: 'Customer A' });
  t.equal(made.status, 201, made.text);
  const sub = made.json.data;
  const credited = await call('POST', `/application/sub-accounts/${sub.id}/credit`, { amount: '30' });
  t.equal(credited.json.data.balance, '30.000000');

  const foreign = await call('POST', `/application/sub-accounts/${sub.id}/suspend`, {}, otherToken);
  t.equal(foreign.status, 404, "another operator's sub-account is not found");
  const suspended = await call('POST', `/application/sub-accounts/${sub.id}/suspend`, { reason: 'unpaid invoice' });
  t.equal(suspended.status, 200, suspended.text);
  t.equal(suspended.json.data.status, 'suspended');
  const subKey = sub.apiKey as string;
  const sip = await call('GET', `/application/sub-accounts/${sub.id}/sip-credentials`);
  t.match(sip.json.data, {
    sipUsername: sub.sipUsername,
    realm: d.config.sip.primary_host,
    authAlgorithm: 'MD5',
    enabled: false,
  });
  const resumed = await call('POST', `/application/sub-accounts/${sub.id}/resume`);
  t.equal(resumed.json.data.status, 'active');
  const evs = await d.sql<{ event: string; data: Record<string, unknown> }[]>`
    select event, data from events where account_id = ${op.id} and event like 'sub_account.%' order by created_at, id`;
  t.match(evs, [
    { event: 'sub_account.suspended', data: { subAccountId: sub.id, reason: 'unpaid invoice' } },
    { event: 'sub_account.resumed', data: { subAccountId: sub.id } },
  ]);

  const back = await call('POST', `/application/sub-accounts/${sub.id}/transfer-back`, { amount: '10.5' });
  t.equal(back.status, 200, back.text);
  t.match(back.json.data, { amount: '10.500000', balance: '19.500000', operatorBalance: '80.500000' });
  const tooMuch = await call('POST', `/application/sub-accounts/${sub.id}/transfer-back`, { amount: '19.500001' });
  t.equal(tooMuch.status, 400);
  t.match(tooMuch.json.error.message, /^Insufficient balance/);

  const keys0 = await call('GET', `/application/sub-accounts/${sub.id}/api-keys`);
  t.equal(keys0.json.data.length, 1, 'the key made with the sub-account');
  const newKey = await call('POST', `/application/sub-accounts/${sub.id}/api-keys`, {
    name: 'billing system',
    scopes: ['account:read'],
  });
  t.equal(newKey.status, 201, newKey.text);
  t.match(newKey.json.data, { name: 'billing system', scopes: ['account:read'], secret: /^svc_live_sk_/ });
  const asSub = await d.https('GET', '/account/balance', { token: newKey.json.data.secret });
  t.equal(asSub.json.data.balance, '19.500000', 'the new key acts as the sub-account');
  const revoked = await call('DELETE', `/application/sub-accounts/${sub.id}/api-keys/${newKey.json.data.id}`);
  t.ok(revoked.json.data.revokedAt);
  t.equal((await d.https('GET', '/account/balance', { token: newKey.json.data.secret })).status, 401);
  const narrow = (
    await svc.keys.create(op.id, { mode: 'live', scopes: ['application:write', 'voice:send', 'sms:send'] })
  ).secret;
  const broader = await call(
    'POST',
    `/application/sub-accounts/${sub.id}/api-keys`,
    { scopes: ['billing:write'] },
    narrow,
  );
  t.equal(broader.status, 403, 'a scoped key cannot mint a broader sub-account key');

  await d.sql`insert into cdrs ${d.sql([
    {
      id: newId(),
      account_id: sub.id,
      call_uuid: randomUUID(),
      kind: 'voice',
      to_number: '447700900123',
      answered_at: new Date(),
      billed_seconds: 90,
      buyer_cost: '0.300000',
      created_at: new Date(),
    },
    {
      id: newId(),
      account_id: sub.id,
      call_uuid: null,
      kind: 'sms',
      to_number: '447700900124',
      answered_at: null,
      billed_seconds: null,
      buyer_cost: '0.010000',
      created_at: new Date(),
    },
  ] as never)}`;
  const usage = await call('GET', `/application/sub-accounts/${sub.id}/usage?days=7`);
  t.equal(usage.status, 200, usage.text);
  t.same(usage.json.data.totals, { calls: 1, answered: 1, sms: 1, minutes: 1.5, spend: '0.310000' });
  t.equal(usage.json.data.points.length, 7);
  const cdrs = await call('GET', `/application/sub-accounts/${sub.id}/cdrs?limit=1`);
  t.equal(cdrs.json.data.length, 1);
  t.equal(cdrs.json.hasMore, true);
  t.equal(cdrs.json.data[0].kind, 'sms', 'newest first');

  await call('PUT', '/application/settings', { brandName: 'Acme Voice', brandColor: '#112233' });
  const brand = await d.https('GET', '/application/brand', { token: subKey });
  t.same(brand.json.data, { operatorId: op.id, brandName: 'Acme Voice', brandColor: '#112233', brandLogoUrl: null });

  const closed = await call('DELETE', `/application/sub-accounts/${sub.id}`);
  t.equal(closed.status, 200, closed.text);
  t.match(closed.json.data, { status: 'closed', returnedAmount: '19.500000', operatorBalance: '100.000000' });
  t.equal((await svc.ledger.balanceOf(sub.id)).balance, '0.000000');
  t.equal((await d.https('GET', '/account/balance', { token: subKey })).status, 401, 'its keys stop');
  t.equal(await svc.application.lookupSipUser(sub.sipUsername), null, 'its SIP user is refused');
  const again = await call('DELETE', `/application/sub-accounts/${sub.id}`);
  t.equal(again.status, 409);
});
