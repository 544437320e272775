import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { emit } from '../../../src/webhooks/emit.js';
import { startTestDaemon } from '../../helpers/daemon.js';
import { receiverTls, startReceiver } from '../../webhooks/receiver.js';

async function daemonWithReceiver(t: { teardown(fn: () => unknown): void }, allowPrivate = true) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-wh-ca-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const caFile = join(dir, 'ca.pem');
  writeFileSync(caFile, (await receiverTls()).cert);
  const receiver = await startReceiver(t, { now: () => Date.now() });
  const d = await startTestDaemon(t, {
    webhooks: { allow_private_targets: allowPrivate, ca_file: caFile, poll_interval_ms: 60_000 },
  });
  const svc = d.modules.services;
  const acc = await svc.accounts.createAccount({ email: 'hooks@example.test', password: 'correct horse battery' });
  const { accessToken } = await svc.accounts.login('hooks@example.test', 'correct horse battery', {});
  return { d, receiver, svc, acc, token: accessToken };
}

t.test(
  'endpoint lifecycle over HTTPS: create (secret once), list (last 4), test ping, rotate, resend, patch, delete',
  async (t) => {
    const { d, receiver, svc, acc, token } = await daemonWithReceiver(t);
    const created = await d.https('POST', '/account/webhooks', {
      token,
      body: { url: receiver.url(), events: ['topup.confirmed', 'balance.low'], description: 'main' },
    });
    t.equal(created.status, 201, created.text);
    const ep = created.json.data;
    t.match(ep.secret, /^whsec_[A-Za-z0-9]{40}$/);
    t.equal(ep.secretLast4, ep.secret.slice(-4));
    t.same(ep.events, ['balance.low', 'topup.confirmed']);
    receiver.secret = ep.secret;

    const list = await d.https('GET', '/account/webhooks', { token });
    t.equal(list.status, 200);
    t.equal(list.json.data.length, 1);
    t.notOk('secret' in list.json.data[0], 'the secret is never shown again');
    t.equal(list.json.data[0].secretLast4, ep.secret.slice(-4));

    const ping = await d.https('POST', `/account/webhooks/${ep.id}/test`, { token });
    t.equal(ping.status, 202, ping.text);
    await receiver.waitFor(1);
    await svc.webhookWorker.runOnce();
    const got = receiver.received[0]!;
    t.equal(got.headers['x-webhook-event'], 'ping');
    t.ok(got.signatureOk && got.legacyOk, 'signed with the endpoint secret');
    t.same(JSON.parse(got.rawBody.toString()).data, {});
    const pd = await d.https('GET', `/account/webhooks/deliveries/${ping.json.data.id}`, { token });
    t.equal(pd.json.data.state, 'succeeded');
    t.equal(pd.json.data.payload.id, ping.json.data.id);
    t.equal(pd.json.data.attemptLog[0].outcome, 'ok');

    const rotated = await d.https('POST', `/account/webhooks/${ep.id}/rotate-secret`, { token });
    t.equal(rotated.status, 200);
    t.not(rotated.json.data.secret, ep.secret);
    receiver.secret = rotated.json.data.secret;

    // A real emit from another module's transaction reaches the endpoint; then resend it.
    await d.sql.begin((tx) => emit(tx, { accountId: acc.id, event: 'topup.confirmed', data: { amount: '10.000000' } }));
    await svc.webhookWorker.runOnce();
    t.equal(receiver.received.length, 2);
    t.ok(receiver.received[1]!.signatureOk, 'signed with the rotated secret');
    const all = await d.https('GET', '/account/webhooks/deliveries?limit=1', { token });
    t.equal(all.json.data.length, 1);
    t.equal(all.json.hasMore, true);
    t.equal(all.json.data[0].event, 'topup.confirmed');
    const page2 = await d.https('GET', `/account/webhooks/deliveries?limit=1&cursor=${all.json.nextCursor}`, { token });
    t.equal(page2.json.data[0].event, 'ping');
    const resent = await d.https('POST', `/account/webhooks/deliveries/${all.json.data[0].id}/resend`, { token });
    t.equal(resent.status, 202, resent.text);
    t.equal(resent.json.data.resentFrom, all.json.data[0].id);
    t.not(resent.json.data.id, all.json.data[0].id, 'a resend is a new delivery with a new id');
    await receiver.waitFor(3);
    await svc.webhookWorker.runOnce();
    t.same(JSON.parse(receiver.received[2]!.rawBody.toString()).data, { amount: '10.000000' });
    const perEndpoint = await d.https('GET', `/account/webhooks/${ep.id}/deliveries`, { token });
    t.equal(perEndpoint.json.data.length, 3);
    const failedOnly = await d.https('GET', `/account/webhooks/${ep.id}/deliveries?state=failed`, { token });
    t.equal(failedOnly.json.data.length, 0);

    const patched = await d.https('PATCH', `/account/webhooks/${ep.id}`, {
      token,
      body: { events: ['*'], enabled: false, description: 'paused' },
    });
    t.equal(patched.status, 200, patched.text);
    t.same(
      [patched.json.data.events, patched.json.data.status, patched.json.data.description],
      [['*'], 'disabled', 'paused'],
    );
    const refused = await d.https('POST', `/account/webhooks/${ep.id}/test`, { token });
    t.equal(refused.status, 400);

    const del = await d.https('DELETE', `/account/webhooks/${ep.id}`, { token });
    t.equal(del.status, 200);
    t.equal((await d.https('GET', '/account/webhooks', { token })).json.data.length, 0);
    t.equal((await d.https('GET', `/account/webhooks/${ep.id}`, { token })).status, 404);
  },
);

t.test('validation: unknown events named, https only, private literals refused when not allowed', async (t) => {
  const { d, token, receiver } = await daemonWithReceiver(t, false);
  const loop = await d.https('POST', '/account/webhooks', { token, body: { url: receiver.url() } });
  t.equal(loop.status, 400, 'a loopback target is refused when private targets are not allowed');
  t.match(loop.json.error.details[0].message, /not public/);
  const bad = await d.https('POST', '/account/webhooks', {
    token,
    body: { url: 'https://hooks.example.com/x', events: ['sms.sent', 'sms.teleported', 'ping'] },
  });
  t.equal(bad.status, 400);
  t.equal(bad.json.error.code, 'VALIDATION_ERROR');
  t.match(bad.json.error.message, /sms\.teleported, ping/);
  t.same(
    bad.json.error.details.map((x: { path: string }) => x.path),
    ['events/1', 'events/2'],
  );
  const http = await d.https('POST', '/account/webhooks', { token, body: { url: 'http://hooks.example.com/x' } });
  t.equal(http.status, 400);
  t.equal(http.json.error.details[0].path, 'url');
  const other = await d.https('GET', '/account/webhooks/deliveries/0190a0b0-0000-7000-8000-000000000000', { token });
  t.equal(other.status, 404);
});

t.test('scopes: changes need webhooks:write (not part of full access); reads need account:read', async (t) => {
  const { d, svc, acc, receiver } = await daemonWithReceiver(t);
  const full = await svc.keys.create(acc.id, { mode: 'live' });
  const hooks = await svc.keys.create(acc.id, { mode: 'live', scopes: ['webhooks:write'] });
  const reader = await svc.keys.create(acc.id, { mode: 'live', scopes: ['account:read'] });
  const body = { url: receiver.url() };
  t.equal(
    (await d.https('POST', '/account/webhooks', { token: full.secret, body })).status,
    403,
    'full access lacks webhooks:write',
  );
  t.equal((await d.https('POST', '/account/webhooks', { token: reader.secret, body })).status, 403);
  const ok = await d.https('POST', '/account/webhooks', { token: hooks.secret, body });
  t.equal(ok.status, 201, ok.text);
  t.equal((await d.https('GET', '/account/webhooks', { token: reader.secret })).status, 200);
  t.equal((await d.https('GET', '/account/webhooks', { token: full.secret })).status, 200);
  t.equal((await d.https('DELETE', `/account/webhooks/${ok.json.data.id}`, { token: full.secret })).status, 403);
});
