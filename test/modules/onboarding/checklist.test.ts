import { randomUUID } from 'node:crypto';
import t from 'tap';
import { buildCdr } from '../../../src/modules/cdrs/service.js';
import { startTestDaemon } from '../../helpers/daemon.js';
import { signIn } from '../../helpers/sessions.js';
import { startSmtpPeer } from '../../helpers/smtp.js';

t.test('onboarding checklist follows what the account really did', async (t) => {
  const smtp = await startSmtpPeer(t);
  const d = await startTestDaemon(t, { mail: { smtp_host: '127.0.0.1', smtp_port: smtp.port } });
  const user = await signIn(d, 'new@example.test');
  const seller = await signIn(d, 'seller@example.test');
  const get = async () => (await d.https('GET', '/onboarding', { token: user.token })).json.data;

  const first = await get();
  t.same(
    first.steps.map((s: { key: string; done: boolean }) => [s.key, s.done]),
    [
      ['verify_email', false],
      ['top_up', false],
      ['buy_route', false],
      ['create_api_key', false],
      ['first_traffic', false],
    ],
  );
  t.match(first, { completed: 0, total: 5, percent: 0, complete: false, nextStep: 'verify_email', dismissed: false });

  // 1. verify the e-mail through the real e-mail
  await d.https('POST', '/auth/email/verification', { token: user.token });
  const mail = await smtp.next('new@example.test', /verify-email/);
  await d.https('POST', '/auth/email/verify', { body: { token: /token=(svc_ev_\w+)/.exec(mail.text)![1] } });
  // 2. a wire top-up through the ledger
  await d.modules.services.ledger.topup({
    accountId: user.accountId,
    amount: '150.000000',
    source: 'wire',
    postingKey: 'onb-1',
  });
  // 3. buy a route a seller listed over HTTPS
  const route = await d.https('POST', '/routes', {
    token: seller.token,
    body: {
      type: 'voice',
      name: 'UK',
      country: 'GB',
      expectedAsr: 50,
      expectedAcd: 120,
      expectedPdd: 2000,
      billingIncrement: '60/60',
      noticeDays: 7,
      endpoints: [{ host: '192.0.2.10', port: 5060, transport: 'udp' }],
    },
  });
  t.equal(route.status, 201, route.text);
  const rates = await d.https('POST', `/routes/${route.json.data.id}/rates`, {
    token: seller.token,
    body: { format: 'csv', csv: 'prefix,destination,rate,increment\n44,UK,0.010000,60/60\n' },
  });
  t.equal(rates.status, 200, rates.text);
  t.equal(
    (await d.https('POST', '/purchases', { token: user.token, body: { routeId: route.json.data.id } })).status,
    201,
  );

  const mid = await get();
  t.match(mid, { completed: 3, percent: 60, nextStep: 'create_api_key' });

  const skipped = await d.https('POST', '/onboarding/steps/create_api_key/skip', { token: user.token });
  t.match(skipped.json.data, { nextStep: 'first_traffic', complete: false });
  t.equal(skipped.json.data.steps.find((s: { key: string }) => s.key === 'create_api_key').skipped, true);
  t.equal((await d.https('POST', '/onboarding/steps/nonsense/skip', { token: user.token })).status, 400);

  // 4. a key made anyway, and 5. a first call record
  const key = await d.modules.services.keys.create(user.accountId, { mode: 'live' });
  const at = new Date();
  const callId = randomUUID();
  await d.sql.begin((tx) =>
    d.modules.services.cdrs.insertCdrs(tx, [
      buildCdr({
        accountId: user.accountId,
        operatorId: null,
        sellerId: seller.accountId,
        callUuid: callId,
        callGroupId: callId,
        kind: 'voice',
        source: 'api',
        routeId: route.json.data.id,
        fromNumber: '442079460000',
        toNumber: '442079460001',
        cli: '442079460000',
        status: 'completed',
        sipCode: 200,
        hangupCause: 'NORMAL_CLEARING',
        durationSeconds: 7,
        segments: null,
        pddMs: null,
        mediaMode: null,
        answeredAt: at,
        endedAt: at,
        createdAt: at,
        billed: { total: '0.010000', seller: '0.008000', ratePerUnit: '0.010000', billableSeconds: 60 },
      }),
    ]),
  );
  const done = (await d.https('GET', '/onboarding', { token: key.secret })).json.data;
  t.match(done, { completed: 5, percent: 100, complete: true, nextStep: null });
  t.equal(done.steps.find((s: { key: string }) => s.key === 'create_api_key').skipped, false, 'done wins over skipped');

  const dismissed = await d.https('POST', '/onboarding/dismiss', { token: user.token });
  t.match(dismissed.json.data, { dismissed: true, dismissedAt: String });
  const reset = await d.https('POST', '/onboarding/reset', { token: user.token });
  t.match(reset.json.data, { dismissed: false, dismissedAt: null });

  const readOnly = await d.modules.services.keys.create(user.accountId, { mode: 'live', scopes: ['account:read'] });
  t.equal(
    (await d.https('POST', '/onboarding/dismiss', { token: readOnly.secret })).status,
    403,
    'account:write to change',
  );
  t.equal((await d.https('GET', '/onboarding', { token: readOnly.secret })).status, 200);
});
