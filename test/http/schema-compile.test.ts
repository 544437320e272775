import t from 'tap';
import { bearer, buildTestApp, type TestApp } from '../helpers/app.js';

// The other tests compile a route's schemas when it is first called ([http] schema_compile =
// "first_use"); this one compiles every route's at start, as a daemon does by default, and checks
// that both ways answer alike.

const exchange = async (h: TestApp, token: string) => {
  const call = async (method: 'GET' | 'PATCH', url: string, payload?: unknown) => {
    const r = await h.app.inject({
      method,
      url: `/api/v1${url}`,
      headers: bearer(token),
      ...(payload ? { payload } : {}),
    });
    return { status: r.statusCode, body: r.json() as unknown };
  };
  return [
    await call('GET', '/account/profile'),
    await call('PATCH', '/account/profile', { timeZone: 'Mars/Olympus_Mons' }),
    await call('PATCH', '/account/profile', { displayName: 42 }),
    await call('GET', '/billing/transactions?limit=abc'),
    await call('GET', '/billing/transactions?limit=5'),
    await call('GET', '/billing/transactions?limit=500'),
  ];
};

t.test('every route schema compiles at start, and first use answers the same', async (t) => {
  // The first-use app is probed first, so its validators are compiled when first called: a process
  // keeps compiled schemas for every app it builds, and the app built second reuses them.
  const onFirstUse = await buildTestApp(t);
  t.equal(onFirstUse.config.http.schema_compile, 'first_use', 'the test helpers compile on first use');
  await onFirstUse.app.ready();
  const first = await exchange(onFirstUse, (await onFirstUse.signUp()).session);

  const atStart = await buildTestApp(t, { overrides: { http: { schema_compile: 'at_start' } } });
  await atStart.app.ready();
  t.ok(atStart.app.apiRoutes.length > 400, `${atStart.app.apiRoutes.length} routes compiled at start`);

  const expected = await exchange(atStart, (await atStart.signUp()).session);
  t.same(
    expected.map((r) => r.status),
    [200, 400, 400, 400, 200, 400],
    'the probes pass and fail validation as meant',
  );
  t.match(expected[1]!.body, { success: false, error: { code: 'VALIDATION_ERROR' } });
  t.match(expected[4]!.body, { success: true, data: [], hasMore: false });
  t.same(first, expected, 'the same statuses and bodies, first use');
  const again = await exchange(onFirstUse, (await onFirstUse.signUp()).session);
  t.same(again, expected, 'the same statuses and bodies, later uses');
});
