import { spawnSync } from 'node:child_process';
import t from 'tap';
import { createTestDatabase } from '../helpers/db.js';

const run = (args: string[], env: Record<string, string>) =>
  spawnSync(process.execPath, ['--import', 'tsx', 'src/bin/svcctl.ts', ...args], {
    env: { ...process.env, ...env, SVCCTL_LOG: 'silent' },
    encoding: 'utf8',
    timeout: 60_000,
  });

t.test('svcctl works on the database directly and prints one JSON object with --json', async (t) => {
  const db = await createTestDatabase(t, { migrate: false });
  const env = { SVC_DATABASE_URL: db.url };
  const created = run(['account', 'create', '--email', 'ops@example.test', '--password', 'a long password', '--operator', '--json'], env);
  t.equal(created.status, 0, created.stderr);
  const account = JSON.parse(created.stdout);
  t.match(account, { ok: true, email: 'ops@example.test', role: 'admin' });

  const key = run(['key', 'create', '--email', 'ops@example.test', '--test', '--scopes', 'sms:send,account:read', '--json'], env);
  t.equal(key.status, 0, key.stderr);
  const k = JSON.parse(key.stdout);
  t.match(k.key, /^svc_test_sk_/);
  t.same(k.scopes, ['account:read', 'sms:send']);

  const status = run(['status', '--json'], env);
  t.match(JSON.parse(status.stdout), { ok: true, database: 'ok', accounts: 1 });

  const dup = run(['account', 'create', '--email', 'ops@example.test', '--password', 'a long password', '--json'], env);
  t.equal(dup.status, 1);
  t.match(JSON.parse(dup.stderr), { ok: false, error: /already exists/ });

  const missing = run(['key', 'create', '--json'], env);
  t.equal(missing.status, 2, 'usage errors exit 2');
  const bad = run(['status'], { SVC_DATABASE_URL: db.url, SVC_HTTP_PORT: 'x' });
  t.equal(bad.status, 1);
  t.match(bad.stderr, /http\.port/);
});
