import { randomBytes } from 'node:crypto';
import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';

const badKey = () => `svc_live_sk_${randomBytes(36).toString('base64url').slice(0, 48)}`;

/**
 * Guessing API keys from one address: after `failed_auth_per_source` failures in the window the
 * address gets 429 before any key is looked up; other addresses are unaffected.
 */
t.test('bad API keys from one address are rate-limited', async (t) => {
  const d = await startTestDaemon(t, { auth: { failed_auth_per_source: 30 } });
  const statuses: number[] = [];
  for (let i = 0; i < 40; i++) statuses.push((await d.https('GET', '/account', { token: badKey() })).status);
  t.same(statuses.slice(0, 30), Array(30).fill(401), 'the first 30 are checked');
  t.same(statuses.slice(30), Array(10).fill(429), 'then refused');
  const refused = await d.https('GET', '/account', { token: badKey() });
  t.equal(refused.json.error.code, 'RATE_LIMITED');
  t.ok(Number(refused.headers['retry-after']) >= 1);
  const elsewhere = await d.app.inject({
    method: 'GET',
    url: '/api/v1/account',
    remoteAddress: '10.9.9.9',
    headers: { authorization: `Bearer ${badKey()}` },
  });
  t.equal(elsewhere.statusCode, 401, 'another address is still checked');
  const bogusSession = await d.https('GET', '/account', { token: 'not-a-jwt' });
  t.equal(bogusSession.status, 429, 'bad session tokens count the same');
});

t.test('two daemons sharing Redis share the count', async (t) => {
  const redis = { url: 'redis://127.0.0.1:6379' };
  const a = await startTestDaemon(t, { redis, auth: { failed_auth_per_source: 5 } });
  const b = await startTestDaemon(t, { redis, auth: { failed_auth_per_source: 5 } });
  // An address of this run only: Redis is shared with other test files.
  const source = `10.${randomBytes(1)[0]}.${randomBytes(1)[0]}.${1 + (randomBytes(1)[0]! % 250)}`;
  const call = (d: typeof a) =>
    d.app.inject({
      method: 'GET',
      url: '/api/v1/account',
      remoteAddress: source,
      headers: { authorization: `Bearer ${badKey()}` },
    });
  const onA = [];
  for (let i = 0; i < 5; i++) onA.push((await call(a)).statusCode);
  t.same(onA, [401, 401, 401, 401, 401]);
  t.equal((await call(b)).statusCode, 429, 'the other daemon refuses the same address');
});
