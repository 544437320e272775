import t from 'tap';
import { bearer, buildTestApp } from '../../helpers/app.js';

t.test('register, login, refresh rotation, reuse detection, logout, sessions', async (t) => {
  const h = await buildTestApp(t);
  const post = (url: string, payload?: unknown, token?: string) =>
    h.app.inject({
      method: 'POST',
      url: `/api/v1${url}`,
      ...(payload !== undefined ? { payload: payload as object } : {}),
      headers: token ? bearer(token) : {},
    });

  const reg = await post('/auth/register', { email: 'new@example.test', password: 'long enough pw' });
  t.equal(reg.statusCode, 202);
  t.match(reg.json().data, { message: /sign in with POST \/auth\/login/ });
  const again = await post('/auth/register', { email: 'NEW@example.test', password: 'another password' });
  t.same(
    [again.statusCode, again.json()],
    [reg.statusCode, reg.json()],
    'an e-mail already registered gets the same answer',
  );
  const first = (await post('/auth/login', { email: 'new@example.test', password: 'long enough pw' })).json().data;
  t.match(first, { accessToken: String, refreshToken: /^svc_rt_/, expiresAt: String }, 'the first registration stands');
  t.equal(
    (await post('/auth/register', { email: 'x@example.test', password: 'short' })).json().error.code,
    'VALIDATION_ERROR',
  );

  t.equal((await post('/auth/login', { email: 'new@example.test', password: 'wrong password' })).statusCode, 401);
  t.equal((await post('/auth/login', { email: 'nobody@example.test', password: 'wrong password' })).statusCode, 401);
  const login = (await post('/auth/login', { email: 'new@example.test', password: 'long enough pw' })).json().data;

  const me = await h.app.inject({ method: 'GET', url: '/api/v1/account', headers: bearer(login.accessToken) });
  t.equal(me.json().data.email, 'new@example.test');

  const missing = await post('/auth/refresh', {});
  t.equal(missing.statusCode, 401);
  t.equal(missing.json().error.code, 'MISSING_TOKEN');
  const rotated = (await post('/auth/refresh', { refreshToken: login.refreshToken })).json().data;
  t.not(rotated.refreshToken, login.refreshToken);
  const reuse = await post('/auth/refresh', { refreshToken: login.refreshToken });
  t.equal(reuse.statusCode, 401, 'an already used refresh token is refused');
  const afterTheft = await post('/auth/refresh', { refreshToken: rotated.refreshToken });
  t.equal(afterTheft.statusCode, 401, 'reuse revoked the whole session');
  t.equal(
    (await h.app.inject({ method: 'GET', url: '/api/v1/account', headers: bearer(rotated.accessToken) })).statusCode,
    401,
  );

  const s1 = (await post('/auth/login', { email: 'new@example.test', password: 'long enough pw' })).json().data;
  const s2 = (await post('/auth/login', { email: 'new@example.test', password: 'long enough pw' })).json().data;
  const list = await h.app.inject({ method: 'GET', url: '/api/v1/auth/sessions', headers: bearer(s1.accessToken) });
  t.ok(list.json().data.length >= 3);
  t.equal(list.json().data.filter((s: { current: boolean }) => s.current).length, 1);
  const revoked = await post('/auth/sessions/revoke-others', undefined, s1.accessToken);
  t.ok(revoked.json().data.revoked >= 2);
  t.equal(
    (await h.app.inject({ method: 'GET', url: '/api/v1/account', headers: bearer(s2.accessToken) })).statusCode,
    401,
  );
  t.equal((await post('/auth/logout', undefined, s1.accessToken)).statusCode, 200);
  t.equal(
    (await h.app.inject({ method: 'GET', url: '/api/v1/account', headers: bearer(s1.accessToken) })).statusCode,
    401,
  );
});

t.test('revoking other sessions with an API key answers NO_SESSION', async (t) => {
  const h = await buildTestApp(t);
  const u = await h.signUp();
  const { secret } = await h.services.keys.create(u.accountId, {});
  const res = await h.app.inject({
    method: 'POST',
    url: '/api/v1/auth/sessions/revoke-others',
    headers: bearer(secret),
  });
  t.equal(res.statusCode, 400);
  t.equal(res.json().error.code, 'NO_SESSION');
});

t.test('login attempts are rate-limited', async (t) => {
  const h = await buildTestApp(t, { overrides: { auth: { login_attempts_per_minute: 3 } } });
  const codes = [];
  for (let i = 0; i < 4; i++) {
    codes.push(
      (await h.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'a@b.test', password: 'x' } }))
        .statusCode,
    );
  }
  t.same(codes, [401, 401, 401, 429]);
});
