import t from 'tap';
import { emit } from '../../../src/webhooks/emit.js';
import { startTestDaemon } from '../../helpers/daemon.js';
import { signIn } from '../../helpers/sessions.js';
import { startSmtpPeer } from '../../helpers/smtp.js';

t.test('outbox events become notifications per preference; list, read, read-all over HTTPS', async (t) => {
  const smtp = await startSmtpPeer(t);
  const d = await startTestDaemon(t, {
    mail: { smtp_host: '127.0.0.1', smtp_port: smtp.port },
    notifications: { poll_interval_ms: 50 },
  });
  const user = await signIn(d, 'feed@example.test');
  const other = await signIn(d, 'other@example.test');
  const { ledger, notifications } = d.modules.services;

  const prefs = await d.https('GET', '/notifications/preferences', { token: user.token });
  t.equal(prefs.status, 200);
  t.match(
    prefs.json.data.find((p: { kind: string }) => p.kind === 'balance.low'),
    { inApp: true, email: false, label: 'Low balance' },
  );
  const bad = await d.https('PUT', '/notifications/preferences', {
    token: user.token,
    body: { preferences: [{ kind: 'no.such', inApp: false }] },
  });
  t.match(bad.json.error, { code: 'VALIDATION_ERROR', details: [{ path: 'preferences/0/kind' }] });
  const saved = await d.https('PUT', '/notifications/preferences', {
    token: user.token,
    body: {
      preferences: [
        { kind: 'balance.low', email: true },
        { kind: 'sub_account.resumed', inApp: false },
      ],
    },
  });
  t.match(
    saved.json.data.find((p: { kind: string }) => p.kind === 'balance.low'),
    { inApp: true, email: true },
  );

  // A real top-up through the ledger emits topup.confirmed in its transaction.
  await ledger.topup({ accountId: user.accountId, amount: '125.000000', source: 'wire', postingKey: 'feed-test-1' });
  await emit(d.sql, {
    accountId: user.accountId,
    event: 'balance.low',
    data: { accountId: user.accountId, balance: '1.500000' },
  });
  await emit(d.sql, {
    accountId: user.accountId,
    event: 'sub_account.resumed',
    data: { subAccountId: 'x', reason: 'r' },
  });
  await emit(d.sql, { accountId: user.accountId, event: 'sms.sent', data: { messageId: 'm' } });
  await emit(d.sql, { accountId: other.accountId, event: 'balance.low', data: { balance: '0.100000' } });

  // The daemon's own loop picks them up.
  let list = await d.https('GET', '/notifications', { token: user.token });
  for (let i = 0; i < 100 && list.json.data.length < 2; i++) {
    await new Promise((r) => setTimeout(r, 50));
    list = await d.https('GET', '/notifications', { token: user.token });
  }
  t.equal(list.status, 200);
  t.same(
    list.json.data.map((n: { kind: string }) => n.kind).sort(),
    ['balance.low', 'topup.confirmed'],
    'chosen events only, preferences applied',
  );
  t.equal(list.json.unreadCount, 2);
  const topup = list.json.data.find((n: { kind: string }) => n.kind === 'topup.confirmed');
  t.match(topup, {
    title: 'Top-up confirmed',
    body: /125\.000000 USD was added \(wire\); your balance is 125\.000000 USD/,
    read: false,
    readAt: null,
  });
  const mail = await smtp.next('feed@example.test', /Low balance/);
  t.match(mail.text, /balance fell to 1\.500000 USD/);
  for (
    let i = 0;
    i < 100 && (await d.https('GET', '/notifications', { token: other.token })).json.data.length === 0;
    i++
  )
    await new Promise((r) => setTimeout(r, 50));
  t.equal((await d.https('GET', '/notifications', { token: other.token })).json.data.length, 1, 'per account');
  t.equal(await notifications.pump(), 0, 'each event is handled once');

  const page = await d.https('GET', '/notifications?limit=1', { token: user.token });
  t.equal(page.json.data.length, 1);
  t.equal(page.json.hasMore, true);
  const page2 = await d.https('GET', `/notifications?limit=1&cursor=${page.json.nextCursor}`, { token: user.token });
  t.equal(page2.json.hasMore, false);
  t.not(page2.json.data[0].id, page.json.data[0].id);

  const read = await d.https('POST', `/notifications/${topup.id}/read`, { token: user.token });
  t.match(read.json.data, { id: topup.id, read: true, unreadCount: 1 });
  t.equal((await d.https('GET', '/notifications?unreadOnly=true', { token: user.token })).json.data.length, 1);
  const foreign = (await d.https('GET', '/notifications', { token: other.token })).json.data[0].id;
  t.equal((await d.https('POST', `/notifications/${foreign}/read`, { token: user.token })).status, 404);

  await emit(d.sql, { accountId: user.accountId, event: 'kyc.verified', data: {} });
  await notifications.pump();
  const newest = (await d.https('GET', '/notifications?limit=1', { token: user.token })).json.data[0];
  const before = (await d.https('GET', '/notifications?limit=3', { token: user.token })).json.data[1];
  const upTo = await d.https('POST', '/notifications/read-all', { token: user.token, body: { before: before.id } });
  t.match(upTo.json.data, { marked: 1, unreadCount: 1 }, 'read-all up to the newest seen');
  t.equal(newest.kind, 'kyc.verified');
  const all = await d.https('POST', '/notifications/read-all', { token: user.token });
  t.equal(all.status, 200, all.text);
  t.match(all.json.data, { marked: 1, unreadCount: 0 });

  const readOnly = await d.modules.services.keys.create(user.accountId, { mode: 'live', scopes: ['routes:read'] });
  t.equal((await d.https('GET', '/notifications', { token: readOnly.secret })).status, 403, 'account:read needed');
});
