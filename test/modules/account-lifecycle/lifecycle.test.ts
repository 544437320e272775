import { createHash } from 'node:crypto';
import { get } from 'node:https';
import { strFromU8, unzipSync } from 'fflate';
import t from 'tap';
import { startTestDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { signIn } from '../../helpers/sessions.js';

// Real time moved on by hand past the deletion's grace period.
let offset = 0;
const clock = { now: () => new Date(Date.now() + offset) };

/** The raw bytes of a download (the helper decodes bodies as text). */
function download(d: TestDaemon, path: string, token: string) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }>((resolve, reject) => {
    get(`${d.baseUrl}${path}`, { headers: { authorization: `Bearer ${token}` }, rejectUnauthorized: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    }).on('error', reject);
  });
}

t.test('devices, data export and deletion of an account over HTTPS', async (t) => {
  const d = await startTestDaemon(t, { account: { sweep_interval_seconds: 86400 } }, { clock });
  const { ledger, accountLifecycle } = d.modules.services;
  const user = await signIn(d, 'leaving@example.test');
  await ledger.topup({ accountId: user.accountId, amount: '120.000000', source: 'wire', postingKey: 'lifecycle-1' });

  // Devices: sessions grouped by user agent; name, trust, sign one out.
  const login = async (ua: string) =>
    (
      await d.https('POST', '/auth/login', {
        body: { email: user.email, password: user.password },
        headers: { 'user-agent': ua },
      })
    ).json.data.accessToken as string;
  const firefox = 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0';
  const phone =
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 Version/17.5 Mobile/15E148 Safari/604.1';
  const desk = await login(firefox);
  await login(firefox);
  const mobile = await login(phone);
  const devices = (await d.https('GET', '/account/devices', { token: desk })).json.data as {
    id: string;
    name: string;
    sessions: number;
    current: boolean;
    trusted: boolean;
  }[];
  const ff = devices.find((x) => x.name === 'Firefox on Linux')!;
  const ios = devices.find((x) => x.name === 'Safari on iOS')!;
  t.match(ff, { sessions: 2, current: true, trusted: false });
  t.match(ios, { sessions: 1, current: false });
  const named = await d.https('PATCH', `/account/devices/${ios.id}`, {
    token: desk,
    body: { name: 'Work phone', trusted: true },
  });
  t.match(named.json.data, { name: 'Work phone', trusted: true, sessions: 1 });
  t.equal(
    (await d.https('DELETE', `/account/devices/${ff.id}`, { token: desk })).status,
    409,
    'not the current device',
  );
  const ended = await d.https('DELETE', `/account/devices/${ios.id}`, { token: desk });
  t.same(ended.json.data, { id: ios.id, endedSessions: 1 });
  t.equal((await d.https('GET', '/account/devices', { token: mobile })).status, 401, 'its session ended');
  t.equal((await d.https('PATCH', `/account/devices/${ios.id}`, { token: desk, body: { trusted: true } })).status, 404);

  // Data export: a job, then a ZIP of JSON files with the account's own data and no secrets.
  await d.https('POST', '/account/api-keys', { token: desk, body: { name: 'exported key' } });
  const started = await d.https('POST', '/account/exports', { token: desk });
  t.equal(started.status, 202);
  t.equal(started.json.data.state, 'running');
  await accountLifecycle.exports.settle();
  const job = (await d.https('GET', `/account/exports/${started.json.data.id}`, { token: desk })).json.data;
  t.match(job, { state: 'completed', downloadUrl: `/account/exports/${job.id}/download` });
  t.match(job.files, { 'transactions.json': 1, 'api-keys.json': 1, 'profile.json': 1 });
  const zip = await download(d, job.downloadUrl, desk);
  t.equal(zip.status, 200);
  t.equal(zip.headers['content-type'], 'application/zip');
  t.equal(createHash('sha256').update(zip.body).digest('hex'), job.sha256);
  const files = unzipSync(new Uint8Array(zip.body));
  t.ok(files['README.txt']);
  const tx = JSON.parse(strFromU8(files['transactions.json']!));
  t.match(tx, [{ type: 'topup', amount: '120.000000' }]);
  t.match(JSON.parse(strFromU8(files['account.json']!)), { id: user.accountId, email: user.email });
  const keysText = strFromU8(files['api-keys.json']!);
  t.match(JSON.parse(keysText), [{ name: 'exported key' }]);
  t.notMatch(keysText, /svc_live_sk_[A-Za-z0-9]{20,}/, 'no key secret');
  t.equal((await d.https('GET', '/account/exports', { token: desk })).json.data.length, 1);
  t.same((await d.https('DELETE', `/account/exports/${job.id}`, { token: desk })).json.data, {
    id: job.id,
    deleted: true,
  });
  t.equal((await download(d, job.downloadUrl, desk)).status, 404);

  // Deletion: refused with a positive balance unless it is given up; cancellable; carried out after the grace.
  const preview = (await d.https('GET', '/account/deletion/preview', { token: desk })).json.data;
  t.match(preview, { deletable: true, balance: '120.000000', forfeited: '120.000000', graceDays: 7 });
  const keep = await d.https('POST', '/account/deletion', { token: desk, body: { password: user.password } });
  t.equal(keep.status, 409);
  t.match(keep.json.error, { code: 'CONFLICT', details: [{ path: 'positive_balance' }] });
  const wrong = await d.https('POST', '/account/deletion', {
    token: desk,
    body: { password: 'not it', forfeitBalance: true },
  });
  t.equal(wrong.status, 400);
  const scheduled = await d.https('POST', '/account/deletion', {
    token: desk,
    body: { password: user.password, forfeitBalance: true, reason: 'moving on' },
  });
  t.equal(scheduled.status, 201);
  t.match(scheduled.json.data, { state: 'scheduled', forfeitBalance: true, preview: { forfeited: '120.000000' } });
  t.equal(
    new Date(scheduled.json.data.scheduledFor).getTime() - new Date(scheduled.json.data.requestedAt).getTime(),
    7 * 86_400_000,
  );
  t.equal(
    (
      await d.https('POST', '/account/deletion', {
        token: desk,
        body: { password: user.password, forfeitBalance: true },
      })
    ).status,
    409,
    'one at a time',
  );
  t.equal(await accountLifecycle.deletion.runDue(), 0, 'not before its time');
  const cancelled = await d.https('DELETE', '/account/deletion', { token: desk });
  t.equal(cancelled.json.data.state, 'cancelled');
  t.equal((await d.https('DELETE', '/account/deletion', { token: desk })).status, 404);
  const again = await d.https('POST', '/account/deletion', {
    token: desk,
    body: { password: user.password, forfeitBalance: true },
  });
  t.equal(again.status, 201);

  offset += 8 * 86_400_000;
  t.equal(await accountLifecycle.deletion.runDue(), 1);
  const [acct] = await d.sql<
    { status: string; email: string }[]
  >`select status, email from accounts where id = ${user.accountId}`;
  t.same(acct, { status: 'closed', email: `deleted+${user.accountId}@invalid` });
  t.equal((await ledger.balanceOf(user.accountId)).balance, '0.000000', 'the closing entry took the balance');
  const [closing] = await d.sql<{ amount: string; type: string; relatedEntityType: string }[]>`
    select amount::text, type, related_entity_type from entries
    where owner_id = ${user.accountId} and related_entity_type = 'account_deletion'`;
  t.same(closing, { amount: '-120.000000', type: 'charge', relatedEntityType: 'account_deletion' });
  const [live] = await d.sql<{ n: number }[]>`
    select count(*)::int as n from sessions where account_id = ${user.accountId} and revoked_at is null`;
  t.equal(live!.n, 0, 'every session ended');
  const relogin = await d.https('POST', '/auth/login', { body: { email: user.email, password: user.password } });
  t.equal(relogin.status, 401);
  t.ok(
    await d.modules.services.accounts.createAccount({ email: user.email, password: 'a new long password' }),
    'the address is free',
  );
  const events = await d.sql<{ event: string }[]>`
    select event from events where account_id = ${user.accountId} and event like 'account.%' order by created_at, id`;
  t.same(
    events.map((e) => e.event),
    [
      'account.export_completed',
      'account.deletion_scheduled',
      'account.deletion_cancelled',
      'account.deletion_scheduled',
    ],
  );
});
