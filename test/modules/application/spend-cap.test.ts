import t from 'tap';
import { startTestDaemon } from '../../helpers/daemon.js';

/** 0 means "no cap": a positive cap too small to show (1e-7 stored as 0.000000) must be refused, not made unlimited. */
t.test('a positive daily spend cap that would read as 0 is refused', async (t) => {
  const d = await startTestDaemon(t, { billing: { require_route_for_sub_accounts: false } });
  await d.modules.services.accounts.createAccount({ email: 'op@example.test', password: 'a long password' });
  const { accessToken } = await d.modules.services.accounts.login('op@example.test', 'a long password', {});
  const create = (dailySpendCap: unknown) =>
    d.https('POST', '/application/sub-accounts', { token: accessToken, body: { label: 'cap', dailySpendCap } });

  for (const tiny of [1e-7, '0.000001', 0.004]) {
    const r = await create(tiny);
    t.equal(r.status, 400, `${String(tiny)} refused`);
    t.match(r.json.error, {
      code: 'VALIDATION_ERROR',
      details: [{ path: 'dailySpendCap', message: /0 \(no cap\) or at least 0.01/ }],
    });
  }
  // More than 6 places as a string is not a money form at all (bodies are not coerced to numbers).
  const sevenPlaces = await create('0.0000001');
  t.equal(sevenPlaces.status, 400);
  t.match(sevenPlaces.json.error, {
    code: 'VALIDATION_ERROR',
    details: [{ path: 'dailySpendCap', message: /must match pattern/ }],
  });
  const none = await create(0);
  t.equal(none.status, 201, none.text);
  t.equal(none.json.data.dailySpendCap, '0.00', 'an explicit 0 is "no cap"');
  const small = await create('0.01');
  t.equal(small.status, 201);
  t.equal(small.json.data.dailySpendCap, '0.01');
  const [stored] = await d.sql<
    { cap: string }[]
  >`select daily_spend_cap::text as cap from sub_accounts where account_id = ${small.json.data.id as string}`;
  t.equal(stored!.cap, '0.010000');

  const settings = await d.https('PUT', '/application/settings', {
    token: accessToken,
    body: { defaultDailySpendCap: 1e-7 },
  });
  t.equal(settings.status, 400);
  t.match(settings.json.error.details, [{ path: 'defaultDailySpendCap' }]);
});
