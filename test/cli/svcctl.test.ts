import { spawn } from 'node:child_process';
import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { runSvcctl } from '../../src/cli/svcctl.js';
import { TEST_SCRYPT_COST } from '../helpers/daemon.js';
import { createTestDatabase } from '../helpers/db.js';
import { nodeScriptArgs } from '../helpers/node-script.js';

// The source under tsx from the sources, as `make test` builds it from its tree: the same program
// without tsx compiling some 3,000 modules at each start.
const SVCCTL = nodeScriptArgs(import.meta.url, '../../src/bin/svcctl');

interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

/** svcctl in this process: the commands and their output, without loading the program again. */
function inProcess(url: string) {
  const config = loadConfig({ overrides: { database: { url }, auth: { scrypt_cost: TEST_SCRYPT_COST } } });
  return async (args: string[]): Promise<Run> => {
    let stdout = '';
    let stderr = '';
    const status = await runSvcctl(args, {
      config,
      env: { SVCCTL_LOG: 'silent' },
      stdout: { write: (s: string) => (stdout += s) },
      stderr: { write: (s: string) => (stderr += s) },
    });
    return { status, stdout, stderr };
  };
}

/** The real program: its settings come from the environment, its status is the process's. */
function binary(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...SVCCTL, ...args], {
      env: { ...process.env, ...env, SVCCTL_LOG: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.once('error', reject);
    child.once('close', (code) => resolve({ status: code ?? -1, stdout, stderr }));
  });
}

t.test('svcctl works on the database directly and prints one JSON object with --json', async (t) => {
  const db = await createTestDatabase(t);
  const run = inProcess(db.url);
  const created = await run([
    'account',
    'create',
    '--email',
    'ops@example.test',
    '--password',
    'a long password',
    '--operator',
    '--json',
  ]);
  t.equal(created.status, 0, created.stderr);
  const account = JSON.parse(created.stdout);
  t.match(account, { ok: true, email: 'ops@example.test', role: 'admin' });

  const key = await run([
    'key',
    'create',
    '--email',
    'ops@example.test',
    '--test',
    '--scopes',
    'sms:send,account:read',
    '--json',
  ]);
  t.equal(key.status, 0, key.stderr);
  const k = JSON.parse(key.stdout);
  t.match(k.key, /^svc_test_sk_/);
  t.same(k.scopes, ['account:read', 'sms:send']);

  t.match(JSON.parse((await run(['status', '--json'])).stdout), { ok: true, database: 'ok', accounts: 1 });

  const topup = await run([
    'topup',
    '--email',
    'ops@example.test',
    '--amount',
    '150.250000',
    '--reference',
    'BANK-1',
    '--json',
  ]);
  t.equal(topup.status, 0, topup.stderr);
  t.match(JSON.parse(topup.stdout), { ok: true, amount: '150.250000', replayed: false });
  const again = await run([
    'topup',
    '--email',
    'ops@example.test',
    '--amount',
    '150.250000',
    '--reference',
    'BANK-1',
    '--json',
  ]);
  t.match(JSON.parse(again.stdout), { ok: true, replayed: true }, 'the same bank reference credits once');
  const small = await run(['topup', '--email', 'ops@example.test', '--amount', '50.000000', '--json']);
  t.equal(small.status, 1, 'wire minimum is 100');
  t.match(JSON.parse(small.stderr).error, /100|minimum/i);
  const [bal] = await db.sql<{ sum: string }[]>`select coalesce(sum(amount), 0)::text as sum from entries`;
  t.equal(Number(bal!.sum), 0, 'the ledger still balances');

  const invite = await run(['invite', 'create', '--amount', '5.000000', '--uses', '3', '--json']);
  t.equal(invite.status, 0, invite.stderr);
  t.match(JSON.parse(invite.stdout), { ok: true, code: /\S+/ });

  const ip = await run(['trunk-ip', 'add', '--email', 'ops@example.test', '--ip', '198.51.100.7', '--json']);
  t.equal(ip.status, 0, ip.stderr);
  const ips = JSON.parse((await run(['trunk-ip', 'list', '--email', 'ops@example.test', '--json'])).stdout);
  t.same(
    ips.addresses.map((a: { ip: string }) => a.ip),
    ['198.51.100.7'],
  );

  // A second account's claim of a held address waits for the operator.
  t.equal(
    (await run(['account', 'create', '--email', 'other@example.test', '--password', 'a long password', '--json']))
      .status,
    0,
  );
  const claim = JSON.parse(
    (await run(['trunk-ip', 'add', '--email', 'other@example.test', '--ip', '198.51.100.7', '--json'])).stdout,
  );
  t.match(claim, { ok: true, status: 'pending' });
  const pending = JSON.parse((await run(['trunk-ip', 'pending', '--json'])).stdout);
  t.same(
    pending.pending.map((p: { id: string }) => p.id),
    [claim.id],
  );
  const approved = await run(['trunk-ip', 'approve', '--id', claim.id, '--json']);
  t.equal(approved.status, 0, approved.stderr);
  const [holder] = await db.sql<
    { email: string }[]
  >`select a.email from trunk_ips t join accounts a on a.id = t.account_id where t.status = 'approved'`;
  t.equal(holder!.email, 'other@example.test', 'the approved claim holds the address');
  const back = JSON.parse((await run(['trunk-ip', 'pending', '--json'])).stdout).pending;
  t.equal(back.length, 1, "the former holder's claim is pending");
  t.equal((await run(['trunk-ip', 'reject', '--id', back[0].id, '--json'])).status, 0);
  t.equal(
    (await run(['trunk-ip', 'reject', '--id', back[0].id, '--json'])).status,
    2,
    'rejected once: no such pending claim',
  );

  const trial = await run(['switch-plan', 'set', '--email', 'ops@example.test', '--trial', '14', '--json']);
  t.equal(trial.status, 0, trial.stderr);
  const granted = JSON.parse(trial.stdout);
  t.match(granted, { ok: true, kind: 'trial' });
  t.ok(Math.abs(Date.parse(granted.endsAt) - Date.parse(granted.startedAt) - 14 * 86_400_000) < 1000, 'a 14-day trial');
  t.equal(
    (await run(['switch-plan', 'set', '--email', 'ops@example.test', '--until', '2001-01-01', '--json'])).status,
    2,
    'an end in the past is refused',
  );
  t.match(JSON.parse((await run(['switch-plan', 'set', '--email', 'ops@example.test', '--json'])).stdout), {
    ok: true,
    kind: 'plan',
    endsAt: null,
  });
  t.match(JSON.parse((await run(['switch-plan', 'end', '--email', 'ops@example.test', '--json'])).stdout), {
    ok: true,
    ended: true,
  });
  t.match(JSON.parse((await run(['switch-plan', 'end', '--email', 'ops@example.test', '--json'])).stdout), {
    ok: true,
    ended: false,
  });

  const dup = await run([
    'account',
    'create',
    '--email',
    'ops@example.test',
    '--password',
    'a long password',
    '--json',
  ]);
  t.equal(dup.status, 1);
  t.match(JSON.parse(dup.stderr), { ok: false, error: /already exists/ });

  t.equal((await run(['key', 'create', '--json'])).status, 2, 'usage errors exit 2');
  const help = await run(['--help']);
  t.equal(help.status, 0);
  t.match(help.stderr, /svcctl topup --email X --amount X/, 'usage lists the registered commands');
});

t.test('the svcctl program reads its settings from the environment and exits with the status', async (t) => {
  const db = await createTestDatabase(t);
  const [status, bad] = await Promise.all([
    binary(['status', '--json'], { SVC_DATABASE_URL: db.url }),
    binary(['status'], { SVC_DATABASE_URL: db.url, SVC_HTTP_PORT: 'x' }),
  ]);
  t.equal(status.status, 0, status.stderr);
  t.match(JSON.parse(status.stdout), { ok: true, database: 'ok', accounts: 0 });
  t.equal(bad.status, 1, 'a bad setting exits 1');
  t.match(bad.stderr, /http\.port/, 'naming the setting');
});
