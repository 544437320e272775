import type { TestDaemon } from './daemon.js';

/** A new account signed in over HTTPS: its id, a session token, and its e-mail and password. */
export async function signIn(d: TestDaemon, email: string, role: 'customer' | 'admin' = 'customer') {
  const password = 'a long test password';
  const account = await d.modules.services.accounts.createAccount({ email, password, role });
  const res = await d.https('POST', '/auth/login', { body: { email, password } });
  if (res.status !== 200) throw new Error(`sign-in failed: ${res.text}`);
  return { accountId: account.id, email, password, token: res.json.data.accessToken as string };
}
