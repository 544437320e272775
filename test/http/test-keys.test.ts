import t from 'tap';
import { newId } from '../../src/platform/ids.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

// The writes a test key may make, each simulated or changing nothing live. Adding one here is a
// decision to review: every other write must refuse test keys.
const SIMULATED = new Set([
  'POST /comms/calls',
  'POST /comms/voice-otp',
  'POST /comms/sms',
  'POST /comms/sms/bulk',
  'POST /application/sub-accounts',
  'POST /application/sub-accounts/bulk',
  'POST /verify/start',
  // A test key's campaigns are test campaigns (simulated, test credit); it cannot change a live one.
  'POST /dialer/campaigns',
  'PUT /dialer/campaigns/{id}',
  'DELETE /dialer/campaigns/{id}',
  'POST /dialer/campaigns/{id}/control',
  'POST /dialer/campaigns/{id}/numbers',
  'POST /dialer/campaigns/{id}/contacts/import',
  'POST /dialer/campaigns/{id}/clone',
  'POST /dialer/campaigns/{id}/test-call',
  'POST /dialer/campaigns/{id}/numbers/remove',
  'POST /dialer/campaigns/{id}/numbers/reset',
  'PUT /dialer/campaigns/{id}/results/{attemptId}/disposition',
  // A test key's number orders are priced against test credit and keep nothing (docs/numbers.md).
  'POST /dids/buy',
  'POST /dids/bulk-buy',
  // Route checks and caller-ID tests of a test key: an instant simulated result, test credit only.
  'POST /routes/check',
  'POST /routes/check/sms',
  'POST /cli-tests',
  'POST /cli-tests/batches',
  'POST /cli-tests/{id}/retry',
]);
// Checking unsaved SMS delivery stores nothing; an invite code grants test credit only.
// A test key checks and cancels only the simulated verifications it started.
const SERVED = new Set([
  'POST /switch/suppliers/test-sms',
  // A saved trunk's SMS check binds and sends nothing; an invoice preview allocates and claims nothing;
  // a records export is a read of the records into a file (docs/switch.md).
  'POST /switch/suppliers/{id}/test-sms',
  'POST /switch/invoices/preview',
  'POST /switch/cdrs/exports',
  'POST /topups/invite-codes/redeem',
  'POST /verify/check',
  'POST /verify/{id}/cancel',
  // AI agent drafts, voice previews and one-turn simulations save nothing and bill nothing.
  'POST /ai-agents/draft',
  'POST /ai-agents/voices/preview',
  'POST /ai-agents/{id}/simulate',
  // Previews read; they change nothing live.
  'POST /routes/{id}/rates/validate',
  'POST /cli-tests/batches/preview',
  // Checks numbers against a campaign's; writes nothing.
  'POST /dialer/campaigns/{id}/duplicate-check',
]);

async function account(d: TestDaemon, email: string) {
  const a = await d.modules.services.accounts.createAccount({ email, password: 'correct horse battery' });
  const { keys } = d.modules.services;
  // Full access plus webhooks:write: no scope stands between the request and the test-key rule.
  const test = (await keys.create(a.id, { mode: 'test', scopes: ['webhooks:write'] })).secret;
  const live = (await keys.create(a.id, { mode: 'live', scopes: ['webhooks:write'] })).secret;
  const { accessToken } = await d.modules.services.accounts.login(email, 'correct horse battery', {});
  return { id: a.id, test, live, session: accessToken };
}

t.test('every served write is either simulated for a test key or refused with 403 TEST_KEY_NOT_ALLOWED', async (t) => {
  const d = await startTestDaemon(t);
  const acct = await account(d, 'enumerate@example.com');
  const doc = (await d.https('GET', '/docs/json')).json;
  const writes: string[] = [];
  for (const [path, ops] of Object.entries(
    doc.paths as Record<string, Record<string, { 'x-access': { auth: string }; 'x-test-keys'?: string }>>,
  )) {
    for (const [method, op] of Object.entries(ops)) {
      if (!['post', 'put', 'patch', 'delete'].includes(method)) continue;
      const auth = op['x-access'].auth;
      if (auth === 'public' || auth === 'session') continue; // no API key reaches them
      const name = `${method.toUpperCase()} ${path}`;
      writes.push(name);
      const policy = op['x-test-keys'];
      if (SIMULATED.has(name)) {
        t.equal(policy, 'simulated', `${name} is simulated for test keys`);
        continue;
      }
      if (SERVED.has(name)) {
        t.equal(policy, 'served', `${name} changes nothing live`);
        continue;
      }
      t.equal(policy, 'refused', `${name} is described as refusing test keys`);
      const url = path.replace(/\{[^}]+\}/g, () => newId());
      const res = await d.https(method.toUpperCase(), url, {
        token: acct.test,
        ...(method === 'delete' ? {} : { body: {} }),
      });
      t.equal(res.status, 403, `${name} refuses a test key (${res.text.slice(0, 200)})`);
      t.equal(res.json?.error?.code, 'TEST_KEY_NOT_ALLOWED', `${name} answers TEST_KEY_NOT_ALLOWED`);
    }
  }
  t.ok(writes.length >= 30, `the description lists the writes (${writes.length})`);
  for (const name of [...SIMULATED, ...SERVED]) t.ok(writes.includes(name), `${name} is still served`);
});

t.test('a test key cannot change a live route, rotate SIP passwords or probe endpoints', async (t) => {
  const d = await startTestDaemon(t, { billing: { require_route_for_sub_accounts: false } });
  const seller = await account(d, 'seller@example.com');
  const endpoints = [{ host: '127.0.0.1', port: 9, transport: 'udp' }];
  const created = await d.https('POST', '/routes', {
    token: seller.session,
    body: { type: 'voice', name: 'Live voice', endpoints },
  });
  t.equal(created.status, 201, created.text);
  const routeId = created.json.data.id as string;

  const cap = await d.https('PATCH', `/routes/${routeId}`, { token: seller.test, body: { capacity: 1 } });
  t.equal(cap.status, 403);
  t.equal(cap.json.error.code, 'TEST_KEY_NOT_ALLOWED');
  t.equal(
    (await d.https('GET', `/routes/${routeId}`, { token: seller.test })).json.data.capacity ?? null,
    null,
    'the live route keeps its capacity (test keys still read)',
  );

  const publicRoute = await d.https('POST', '/routes', {
    token: seller.test,
    body: { type: 'voice', name: 'From a test key', endpoints },
  });
  t.equal(publicRoute.json.error.code, 'TEST_KEY_NOT_ALLOWED');
  const [count] = await d.sql<{ n: number }[]>`select count(*)::int as n from routes where seller_id = ${seller.id}`;
  t.equal(count!.n, 1, 'no route was listed by the test key');

  const probe = await d.https('POST', `/routes/${routeId}/test`, { token: seller.test });
  t.equal(probe.json.error.code, 'TEST_KEY_NOT_ALLOWED', 'no real SIP probe from a test key');

  const sub = await d.https('POST', '/application/sub-accounts', {
    token: seller.live,
    body: { label: 'live customer' },
  });
  t.equal(sub.status, 201, sub.text);
  const before = await d.modules.services.application.lookupSipUser(sub.json.data.sipUsername);
  const rotate = await d.https('POST', `/application/sub-accounts/${sub.json.data.id}/sip-password`, {
    token: seller.test,
  });
  t.equal(rotate.status, 403);
  t.equal(rotate.json.error.code, 'TEST_KEY_NOT_ALLOWED');
  t.same(
    await d.modules.services.application.lookupSipUser(sub.json.data.sipUsername),
    before,
    'the SIP password is unchanged',
  );

  const live = await d.https('POST', `/application/sub-accounts/${sub.json.data.id}/sip-password`, {
    token: seller.live,
  });
  t.equal(live.status, 200, 'a live key still rotates');
});

t.test('a write that makes a credential needs, from a scoped key, every scope that credential carries', async (t) => {
  const d = await startTestDaemon(t);
  const a = await d.modules.services.accounts.createAccount({
    email: 'grants@example.com',
    password: 'correct horse battery',
  });
  const doc = (await d.https('GET', '/docs/json')).json;
  const granting: string[] = [];
  for (const [path, ops] of Object.entries(
    doc.paths as Record<string, Record<string, { 'x-access': { scope?: string; grants?: string[] } }>>,
  )) {
    for (const [method, op] of Object.entries(ops)) {
      const { scope, grants } = op['x-access'];
      if (!grants?.length) continue;
      granting.push(`${method.toUpperCase()} ${path}`);
      // The route's own scope and nothing else: narrower than the credential the route would make.
      const key = (
        await d.modules.services.keys.create(a.id, { mode: 'live', scopes: scope ? [scope] : ['account:read'] })
      ).secret;
      const url = path.replace(/\{[^}]+\}/g, () => newId());
      const res = await d.https(method.toUpperCase(), url, {
        token: key,
        ...(method === 'delete' ? {} : { body: {} }),
      });
      t.equal(res.status, 403, `${method.toUpperCase()} ${path} refuses a key without ${grants.join(', ')}`);
      t.equal(res.json?.error?.code, 'FORBIDDEN');
    }
  }
  for (const name of [
    'POST /application/sub-accounts',
    'POST /application/sub-accounts/{id}/sip-password',
    'POST /account/smpp-credentials',
    'POST /purchases/{id}/sip-credentials',
    'POST /sip/trunk-ips',
  ]) {
    t.ok(granting.includes(name), `${name} declares the scopes its credential carries`);
  }
});
