import t from 'tap';
import { startTestDaemon } from '../../helpers/daemon.js';

/**
 * Password guessing against one e-mail spread over many addresses, each staying under the
 * per-address limit: the e-mail itself is locked after `login_max_failures_per_email` failures,
 * for a time that doubles with each further failure.
 */
t.test('200 wrong passwords from 20 addresses lock the e-mail with a growing delay', async (t) => {
  const d = await startTestDaemon(t);
  const accounts = d.modules.services.accounts;
  const email = 'victim@example.test';
  const password = 'the right password';
  await accounts.createAccount({ email, password });
  const login = async (ip: string, pw: string, who = email) => {
    const r = await d.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      remoteAddress: ip,
      payload: { email: who, password: pw },
    });
    return {
      status: r.statusCode,
      code: r.json().error?.code as string | undefined,
      retryAfter: r.headers['retry-after'],
    };
  };

  const results = [];
  for (let round = 0; round < 10; round++) {
    for (let a = 1; a <= 20; a++) results.push(await login(`10.0.0.${a}`, `guess ${round}-${a}`));
  }
  const failed = results.filter((r) => r.status === 401).length;
  const limited = results.filter((r) => r.status === 429);
  // The first lock lasts 1 s; on a slow machine the loop can outlast it and meet one or two
  // doubled locks, each letting one more guess through.
  const max = d.config.auth.login_max_failures_per_email;
  t.ok(failed >= max && failed <= max + 3, `${failed} guesses reached the password check (limit ${max})`);
  t.equal(limited.length, 200 - failed, 'every later guess refused with 429');
  t.ok(
    limited.every((r) => r.code === 'RATE_LIMITED' && Number(r.retryAfter) >= 1),
    'RATE_LIMITED with Retry-After',
  );

  const locked = await login('10.0.1.1', password);
  t.equal(locked.status, 429, 'even the right password waits for the lock, from a new address');

  // Each failure after the lock lifts doubles it. Polls during the lock are refused before any
  // check; each comes from its own address, under the per-address limit.
  let poller = 0;
  const lockAfterNextFailure = async () => {
    for (;;) {
      const r = await login(`10.0.2.${++poller}`, 'still guessing');
      if (r.status === 401) break;
      t.equal(r.status, 429);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return Number((await login(`10.0.3.${poller}`, 'still guessing')).retryAfter);
  };
  const first = await lockAfterNextFailure();
  const second = await lockAfterNextFailure();
  t.ok(first >= 2 && second > first, `lock grew: ${first} s then ${second} s`);

  const other = await login('10.0.4.1', 'wrong', 'someone-else@example.test');
  t.equal(other.status, 401, 'another e-mail is not locked');
});

t.test('registration answers the same for a free and a taken e-mail', async (t) => {
  const d = await startTestDaemon(t);
  await d.modules.services.accounts.createAccount({ email: 'taken@example.test', password: 'a long password' });
  const free = await d.https('POST', '/auth/register', {
    body: { email: 'free@example.test', password: 'a long password' },
  });
  const taken = await d.https('POST', '/auth/register', {
    body: { email: 'Taken@example.test', password: 'another password' },
  });
  t.equal(free.status, 202);
  t.equal(taken.status, free.status);
  t.same(taken.json, free.json, 'same body');
  const signIn = await d.https('POST', '/auth/login', {
    body: { email: 'free@example.test', password: 'a long password' },
  });
  t.equal(signIn.status, 200, 'the new account signs in');
  const stolen = await d.https('POST', '/auth/login', {
    body: { email: 'taken@example.test', password: 'another password' },
  });
  t.equal(stolen.status, 401, 'the taken account keeps its password');
});
