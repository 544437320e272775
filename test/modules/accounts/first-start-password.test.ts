import t from 'tap';
import { createManualClock } from '../../../src/platform/clock.js';
import { startTestDaemon } from '../../helpers/daemon.js';

/**
 * The operator's first-start password: one sign-in, within `one_time_password_hours`; that
 * session can only change the password (403 PASSWORD_CHANGE_REQUIRED elsewhere); changing it
 * ends the account's other sessions and their refresh tokens.
 */
t.test('one-time password: single use, enforced change, change-password revokes other sessions', async (t) => {
  const d = await startTestDaemon(t);
  const { email, password } = d.firstStart!;
  const login = (pw: string) => d.https('POST', '/auth/login', { body: { email, password: pw } });

  const first = await login(password);
  t.equal(first.status, 200, first.text);
  const session = first.json.data;
  const again = await login(password);
  t.equal(again.status, 401, 'the one-time password signs in only once');

  const account = await d.https('GET', '/account', { token: session.accessToken });
  t.equal(account.status, 403);
  t.equal(account.json.error.code, 'PASSWORD_CHANGE_REQUIRED');
  const keys = await d.https('POST', '/account/api-keys', { token: session.accessToken, body: { name: 'x' } });
  t.equal(keys.json.error?.code, 'PASSWORD_CHANGE_REQUIRED', 'no key can be minted before the change');
  const testKey = await d.https('GET', '/account', { token: d.firstStart!.testKey });
  t.equal(testKey.status, 200, 'the printed test key is not a session: it keeps working');

  const wrong = await d.https('POST', '/auth/change-password', {
    token: session.accessToken,
    body: { currentPassword: 'not it', newPassword: 'a brand new password' },
  });
  t.equal(wrong.status, 400);
  t.equal(wrong.json.error.code, 'VALIDATION_ERROR');
  const changed = await d.https('POST', '/auth/change-password', {
    token: session.accessToken,
    body: { currentPassword: password, newPassword: 'a brand new password' },
  });
  t.equal(changed.status, 200, changed.text);
  t.same(changed.json.data, { changed: true, revokedSessions: 0 });
  const me = await d.https('GET', '/account', { token: session.accessToken });
  t.equal(me.status, 200, 'the session that changed it goes on');
  t.equal(me.json.data.mustChangePassword, false);
  t.equal((await login(password)).status, 401, 'the old password is gone');

  const other = (await login('a brand new password')).json.data;
  t.equal((await d.https('GET', '/account', { token: other.accessToken })).status, 200);
  const second = await d.https('POST', '/auth/change-password', {
    token: session.accessToken,
    body: { currentPassword: 'a brand new password', newPassword: 'yet another password' },
  });
  t.same(second.json.data, { changed: true, revokedSessions: 1 });
  t.equal((await d.https('GET', '/account', { token: other.accessToken })).status, 401, 'the other session ended');
  const refresh = await d.https('POST', '/auth/refresh', { body: { refreshToken: other.refreshToken } });
  t.equal(refresh.status, 401, 'and its refresh token with it');
  t.equal(
    (await d.https('POST', '/auth/refresh', { body: { refreshToken: session.refreshToken } })).status,
    200,
    'the current session still refreshes',
  );
});

t.test('the one-time password expires after one_time_password_hours', async (t) => {
  const clock = createManualClock(new Date());
  const d = await startTestDaemon(t, {}, { clock });
  clock.advance(d.config.auth.one_time_password_hours * 3600_000 + 1000);
  const res = await d.https('POST', '/auth/login', {
    body: { email: d.firstStart!.email, password: d.firstStart!.password },
  });
  t.equal(res.status, 401);
  t.equal(res.json.error.code, 'UNAUTHORIZED');
});

t.test('within its lifetime the one-time password signs in', async (t) => {
  const clock = createManualClock(new Date());
  const d = await startTestDaemon(t, {}, { clock });
  clock.advance(d.config.auth.one_time_password_hours * 3600_000 - 60_000);
  const res = await d.https('POST', '/auth/login', {
    body: { email: d.firstStart!.email, password: d.firstStart!.password },
  });
  t.equal(res.status, 200, 'signed in');
});
