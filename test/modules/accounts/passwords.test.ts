import t from 'tap';
import { DEFAULT_SCRYPT_COST, hashPassword, verifyPassword } from '../../../src/modules/accounts/passwords.js';
import pino from 'pino';
import { createSmppVerifier } from '../../../src/modules/sms/smpp-verifier.js';
import { buildTestApp } from '../../helpers/app.js';

t.test('a hash records its own scrypt parameters', async (t) => {
  const low = await hashPassword('correct horse battery', 10);
  t.match(low, /^scrypt\$1024\$8\$1\$/);
  t.ok(await verifyPassword('correct horse battery', low));
  t.notOk(await verifyPassword('correct horse batterY', low));
  t.match(await hashPassword('x', DEFAULT_SCRYPT_COST), /^scrypt\$32768\$8\$1\$/, 'the default is production strength');
});

t.test('a password hashed at another cost still signs in', async (t) => {
  const h = await buildTestApp(t, { overrides: { auth: { scrypt_cost: 10 } } });
  t.equal(h.config.auth.scrypt_cost, 10);
  const { email, password, accountId } = await h.signUp();
  const [row] = await h.sql<{ passwordHash: string }[]>`select password_hash from accounts where id = ${accountId}`;
  t.match(row!.passwordHash, /^scrypt\$1024\$/, 'new hashes at the configured cost');
  // As stored by a daemon on the production default before the setting existed.
  await h.sql`update accounts set password_hash = ${await hashPassword(password, DEFAULT_SCRYPT_COST)} where id = ${accountId}`;
  const login = await h.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password } });
  t.equal(login.statusCode, 200, login.body);
  const wrong = await h.app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    payload: { email, password: 'not the password' },
  });
  t.equal(wrong.statusCode, 401);
});

t.test('every new hash is made at [auth] scrypt_cost: a changed password and SMPP credentials too', async (t) => {
  const h = await buildTestApp(t, { overrides: { auth: { scrypt_cost: 11 } } });
  const { accountId, password, session } = await h.signUp();
  const changed = await h.app.inject({
    method: 'POST',
    url: '/api/v1/auth/change-password',
    headers: { authorization: `Bearer ${session}` },
    payload: { currentPassword: password, newPassword: 'another long passphrase' },
  });
  t.equal(changed.statusCode, 200, changed.body);
  const [account] = await h.sql<{ passwordHash: string }[]>`select password_hash from accounts where id = ${accountId}`;
  t.match(account!.passwordHash, /^scrypt\$2048\$8\$1\$/, 'the changed password');

  const creds = await h.services.smppCredentials.issue(accountId);
  const [smpp] = await h.sql<{ passwordHash: string }[]>`
    select password_hash from smpp_accounts where id = ${creds.id}`;
  t.match(smpp!.passwordHash, /^scrypt\$2048\$8\$1\$/, 'the SMPP password');
  t.ok(await verifyPassword(creds.password, smpp!.passwordHash));
  t.same(
    await h.services.smppCredentials.authenticate(creds.systemId, creds.password, '127.0.0.1'),
    { accountId, throughputPerSecond: 50, maxBinds: h.config.smpp.max_binds_per_credential },
    'binds with it',
  );
  t.equal(await h.services.smppCredentials.authenticate('unknown-id', creds.password, '127.0.0.1'), null);
});

t.test('the SMPP bind verifier checks hashes above the default cost', async (t) => {
  const verifier = createSmppVerifier({ log: pino({ level: 'silent' }) });
  t.teardown(() => verifier.close());
  const stored = await hashPassword('bindpw', 16);
  t.equal(await verifier.verify('bindpw', stored), true);
  t.equal(await verifier.verify('bindpX', stored), false);
});
