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

  const topup = run(['topup', '--email', 'ops@example.test', '--amount', '150.250000', '--reference', 'BANK-1', '--json'], env);
  t.equal(topup.status, 0, topup.stderr);
  t.match(JSON.parse(topup.stdout), { ok: true, amount: '150.250000', replayed: false });
  const again = run(['topup', '--email', 'ops@example.test', '--amount', '150.250000', '--reference', 'BANK-1', '--json'], env);
  t.match(JSON.parse(again.stdout), { ok: true, replayed: true }, 'the same bank reference credits once');
  const small = run(['topup', '--email', 'ops@example.test', '--amount', '50.000000', '--json'], env);
  t.equal(small.status, 1, 'wire minimum is 100');
  t.match(JSON.parse(small.stderr).error, /100|minimum/i);
  const [bal] = await db.sql<{ sum: string }[]>`select coalesce(sum(amount), 0)::text as sum from entries`;
  t.equal(Number(bal!.sum), 0, 'the ledger still balances');

  const invite = run(['invite', 'create', '--amount', '5.000000', '--uses', '3', '--json'], env);
  t.equal(invite.status, 0, invite.stderr);
  t.match(JSON.parse(invite.stdout), { ok: true, code: /\S+/ });

  const ip = run(['trunk-ip', 'add', '--email', 'ops@example.test', '--ip', '198.51.100.7', '--json'], env);
  t.equal(ip.status, 0, ip.stderr);
  const ips = JSON.parse(run(['trunk-ip', 'list', '--email', 'ops@example.test', '--json'], env).stdout);
  t.same(ips.addresses.map((a: { ip: string }) => a.ip), ['198.51.100.7']);

  // A second account's claim of a held address waits for the operator.
  t.equal(run(['account', 'create', '--email', 'other@example.test', '--password', 'a long password', '--json'], env).status, 0);
  const claim = JSON.parse(run(['trunk-ip', 'add', '--email', 'other@example.test', '--ip', '198.51.100.7', '--json'], env).stdout);
  t.match(claim, { ok: true, status: 'pending' });
  const pending = JSON.parse(run(['trunk-ip', 'pending', '--json'], env).stdout);
  t.same(pending.pending.map((p: { id: string }) => p.id), [claim.id]);
  const approved = run(['trunk-ip', 'approve', '--id', claim.id, '--json'], env);
  t.equal(approved.status, 0, approved.stderr);
  const [holder] = await db.sql<{ email: string }[]>`select a.email from trunk_ips t join accounts a on a.id = t.account_id where t.status = 'approved'`;
  t.equal(holder!.email, 'other@example.test', 'the approved claim holds the address');
  const back = JSON.parse(run(['trunk-ip', 'pending', '--json'], env).stdout).pending;
  t.equal(back.length, 1, 'the former holder\'s claim is pending');
  t.equal(run(['trunk-ip', 'reject', '--id', back[0].id, '--json'], env).status, 0);
  t.equal(run(['trunk-ip', 'reject', '--id', back[0].id, '--json'], env).status, 2, 'rejected once: no such pending claim');

  const trial = run(['switch-plan', 'set', '--email', 'ops@example.test', '--trial', '14', '--json'], env);
  t.equal(trial.status, 0, trial.stderr);
  const granted = JSON.parse(trial.stdout);
  t.match(granted, { ok: true, kind: 'trial' });
  t.ok(Math.abs(Date.parse(granted.endsAt) - Date.parse(granted.startedAt) - 14 * 86_400_000) < 1000, 'a 14-day trial');
  t.equal(run(['switch-plan', 'set', '--email', 'ops@example.test', '--until', '2001-01-01', '--json'], env).status, 2, 'an end in the past is refused');
  t.match(JSON.parse(run(['switch-plan', 'set', '--email', 'ops@example.test', '--json'], env).stdout), { ok: true, kind: 'plan', endsAt: null });
  t.match(JSON.parse(run(['switch-plan', 'end', '--email', 'ops@example.test', '--json'], env).stdout), { ok: true, ended: true });
  t.match(JSON.parse(run(['switch-plan', 'end', '--email', 'ops@example.test', '--json'], env).stdout), { ok: true, ended: false });

  const dup = run(['account', 'create', '--email', 'ops@example.test', '--password', 'a long password', '--json'], env);
  t.equal(dup.status, 1);
  t.match(JSON.parse(dup.stderr), { ok: false, error: /already exists/ });

  const missing = run(['key', 'create', '--json'], env);
  t.equal(missing.status, 2, 'usage errors exit 2');
  const bad = run(['status'], { SVC_DATABASE_URL: db.url, SVC_HTTP_PORT: 'x' });
  t.equal(bad.status, 1);
  t.match(bad.stderr, /http\.port/);
});
