import postgres from 'postgres';
import t, { type Test } from 'tap';
import { ACCOUNTS_CHANNEL } from '../../src/modules/accounts/service.js';
import { API_KEYS_CHANNEL } from '../../src/modules/keys/service.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

// The authentication path keeps keys and accounts cached (credential_cache_seconds is long here);
// a change written by anyone else (another daemon, svcctl, SQL) reaches it by NOTIFY at commit.

/** Resolves with the payload of the next notification on `channel` that the daemon's listen receives. */
async function nextNotification(t: Test, d: TestDaemon, channel: string): Promise<() => Promise<string>> {
  const payloads: string[] = [];
  const waiting: ((p: string) => void)[] = [];
  // The daemon's pool has one listening connection: its caches' handlers were registered at start,
  // so they have run by the time this one is called.
  const sub = await d.sql.listen(channel, (p) => {
    const w = waiting.shift();
    if (w) w(p);
    else payloads.push(p);
  });
  t.teardown(() => sub.unlisten());
  return () => {
    const p = payloads.shift();
    return p !== undefined ? Promise.resolve(p) : new Promise((resolve) => waiting.push(resolve));
  };
}

/**
 * A daemon whose credentials stay cached for 5 minutes, its test key, a connection of someone
 * else's (that writes as another daemon or SQL would), and the next notification on `channel`.
 */
async function cachingDaemon(t: Test, channel: string) {
  const d = await startTestDaemon(t, { auth: { credential_cache_seconds: 300 } });
  const other = postgres(d.config.database.url, { max: 1, onnotice: () => {} });
  t.teardown(() => other.end({ timeout: 5 }));
  return { d, key: d.firstStart!.testKey, other, next: await nextNotification(t, d, channel) };
}

t.test("a key revoked elsewhere is refused at once; the usage flush's writes do not notify", async (t) => {
  const { d, key, other, next } = await cachingDaemon(t, API_KEYS_CHANNEL);

  t.equal((await d.https('GET', '/account', { token: key })).status, 200);
  const [row] = await other<{ id: string }[]>`select id from api_keys where revoked_at is null limit 1`;
  await other`update api_keys set last_used_at = now() where id = ${row!.id}`;
  await other`update api_keys set revoked_at = now() where id = ${row!.id}`;
  t.equal(await next(), row!.id, 'the first notification is the revocation, not the usage write');

  const refused = await d.https('GET', '/account', { token: key });
  t.equal(refused.status, 401, 'refused within the cache lifetime');
  t.equal(refused.json.error.code, 'UNAUTHORIZED');
});

t.test('an account closed elsewhere loses its API access at once', async (t) => {
  const { d, key, other, next } = await cachingDaemon(t, ACCOUNTS_CHANNEL);

  const before = await d.https('GET', '/account', { token: key });
  t.equal(before.status, 200);
  const id = before.json.data.id as string;
  await other`update accounts set status = 'closed' where id = ${id}`;
  t.equal(await next(), id);
  t.equal((await d.https('GET', '/account', { token: key })).status, 401);
});

t.test('a key narrowed elsewhere loses the scope at its next request', async (t) => {
  const { d, key, other, next } = await cachingDaemon(t, API_KEYS_CHANNEL);

  // Twice: the second is admitted from the cached key and account alone.
  t.equal((await d.https('GET', '/account', { token: key })).status, 200);
  t.equal((await d.https('GET', '/account', { token: key })).status, 200);
  const [row] = await other<{ id: string }[]>`select id from api_keys where revoked_at is null limit 1`;
  await other`update api_keys set scopes = ${['sms:send']} where id = ${row!.id}`;
  t.equal(await next(), row!.id);

  const refused = await d.https('GET', '/account', { token: key });
  t.equal(refused.status, 403);
  t.match(refused.json.error.message, /account:read/);
});
