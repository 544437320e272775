import t from 'tap';
import type { ApiModule, App } from '../../../src/http/app.js';
import { ok } from '../../../src/http/envelope.js';
import { bearer, buildTestApp } from '../../helpers/app.js';

const probe: ApiModule = {
  routes(app: App) {
    app.get('/probe/webhooks', { config: { access: { auth: 'required', scope: 'webhooks:write' } } }, async () =>
      ok({ ok: true }),
    );
    app.get('/probe/history', { config: { access: { auth: 'required', fullAccessOnly: true } } }, async () =>
      ok({ ok: true }),
    );
    app.get(
      '/probe/switch',
      { config: { access: { auth: 'required', scope: 'switch:manage', denyTestKeys: true } } },
      async () => ok({ ok: true }),
    );
  },
};

t.test('the scope matrix', async (t) => {
  const h = await buildTestApp(t, { extra: [probe] });
  const u = await h.signUp();
  const get = (url: string, token: string) =>
    h.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: bearer(token) });
  const create = async (body: object) => {
    const r = await h.app.inject({
      method: 'POST',
      url: '/api/v1/account/api-keys',
      headers: bearer(u.session),
      payload: body,
    });
    t.equal(r.statusCode, 201, r.body);
    return r.json().data;
  };

  const full = await create({ name: 'full' });
  t.match(full.key, /^svc_live_sk_[A-Za-z0-9]{48}$/);
  t.equal(full.keyPrefix, full.prefix, 'keyPrefix and the older prefix');
  t.ok(full.key.startsWith(full.keyPrefix));
  t.equal(full.fullAccess, true);
  const scoped = await create({ scopes: ['sms:send'] });
  const hooks = await create({ scopes: ['webhooks:write'] });
  const test = await create({ mode: 'test' });
  t.match(test.key, /^svc_test_sk_/);

  t.equal((await get('/account', full.key)).statusCode, 200, 'full access reads the account');
  const denied = await get('/account', scoped.key);
  t.equal(denied.statusCode, 403);
  t.equal(denied.json().error.code, 'FORBIDDEN');
  t.match(denied.json().error.message, /account:read/, 'the message names the missing scope');

  t.equal((await get('/probe/webhooks', full.key)).statusCode, 403, 'webhooks:write is not part of full access');
  t.equal((await get('/probe/webhooks', hooks.key)).statusCode, 200, 'chosen at creation');
  t.equal((await get('/probe/webhooks', u.session)).statusCode, 200, 'sessions may');
  t.equal((await get('/account', hooks.key)).statusCode, 200, 'only webhooks:write keeps full access');

  t.equal((await get('/probe/history', scoped.key)).statusCode, 403, 'full-access only refuses scoped keys');
  t.equal((await get('/probe/history', full.key)).statusCode, 200);

  const tk = await get('/probe/switch', test.key);
  t.equal(tk.statusCode, 403);
  t.equal(tk.json().error.code, 'TEST_KEY_NOT_ALLOWED');
  t.equal((await get('/probe/switch', full.key)).statusCode, 200);

  const listByKey = await get('/account/api-keys', full.key);
  t.equal(listByKey.statusCode, 403, 'keys are managed with a session only');
  const mint = await h.app.inject({
    method: 'POST',
    url: '/api/v1/account/api-keys',
    headers: bearer(full.key),
    payload: {},
  });
  t.equal(mint.statusCode, 403, 'a leaked key cannot mint keys');

  const list = await get('/account/api-keys', u.session);
  t.equal(list.json().data.length, 4);
  t.notMatch(list.body, new RegExp(full.key), 'secrets are never listed');

  const narrow = await h.app.inject({
    method: 'PATCH',
    url: `/api/v1/account/api-keys/${full.id}`,
    headers: bearer(u.session),
    payload: { scopes: ['account:read'] },
  });
  t.equal(narrow.statusCode, 200);
  t.same(narrow.json().data.scopes, ['account:read']);
  t.equal((await get('/probe/history', full.key)).statusCode, 403, 'narrowed at once');
  const widen = await h.app.inject({
    method: 'PATCH',
    url: `/api/v1/account/api-keys/${full.id}`,
    headers: bearer(u.session),
    payload: { scopes: ['account:read', 'sms:send'] },
  });
  t.equal(widen.statusCode, 400);
  t.match(widen.json().error.details[0].message, /sms:send/);
  const widenHooks = await h.app.inject({
    method: 'PATCH',
    url: `/api/v1/account/api-keys/${scoped.id}`,
    headers: bearer(u.session),
    payload: { scopes: ['sms:send', 'webhooks:write'] },
  });
  t.equal(widenHooks.statusCode, 400, 'webhooks:write cannot be added later');

  const revoke = await h.app.inject({
    method: 'DELETE',
    url: `/api/v1/account/api-keys/${scoped.id}`,
    headers: bearer(u.session),
  });
  t.equal(revoke.statusCode, 200);
  t.equal((await get('/probe/history', scoped.key)).statusCode, 401, 'revoked at once');

  const usage = await get(`/account/api-usage?keyId=${full.id}`, u.session);
  t.equal(usage.statusCode, 200);
  t.ok(usage.json().data[0].requests >= 3, 'requests counted per key');

  const unknownScope = await h.app.inject({
    method: 'POST',
    url: '/api/v1/account/api-keys',
    headers: bearer(u.session),
    payload: { scopes: ['nope:x'] },
  });
  t.equal(unknownScope.statusCode, 400);
});

// Requests are counted in memory and written for every key of the interval at once; a second
// flush adds to the day's count rather than replacing it, and last use is recorded per key.
t.test('API usage per key: counted, flushed together, added up', async (t) => {
  const h = await buildTestApp(t);
  const u = await h.signUp();
  const create = async (name: string) => {
    const r = await h.app.inject({
      method: 'POST',
      url: '/api/v1/account/api-keys',
      headers: bearer(u.session),
      payload: { name },
    });
    return r.json().data as { id: string; key: string };
  };
  const a = await create('a');
  const b = await create('b');
  const hit = (key: string) => h.app.inject({ method: 'GET', url: '/api/v1/account', headers: bearer(key) });
  for (const k of [a.key, a.key, b.key]) t.equal((await hit(k)).statusCode, 200);
  const report = async () => {
    const r = await h.app.inject({ method: 'GET', url: '/api/v1/account/api-usage', headers: bearer(a.key) });
    t.equal(r.statusCode, 200, r.body);
    return Object.fromEntries(
      (r.json().data as { keyId: string; requests: number }[]).map((x) => [x.keyId, x.requests]),
    );
  };
  // The report's own request is counted before its flush.
  t.same(await report(), { [a.id]: 3, [b.id]: 1 });
  await hit(b.key);
  t.same(await report(), { [a.id]: 4, [b.id]: 2 }, 'the second flush adds to the first');
  const used = await h.sql<
    { n: number }[]
  >`select count(*)::int as n from api_keys where id in (${a.id}, ${b.id}) and last_used_at is not null`;
  t.equal(used[0]!.n, 2, 'last use recorded for both keys');
});
