import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { startTestDaemon } from '../../helpers/daemon.js';
import { signIn } from '../../helpers/sessions.js';
import { startSmtpPeer } from '../../helpers/smtp.js';
import { totpCode } from '../../helpers/totp.js';
import { receiverTls, startReceiver } from '../../webhooks/receiver.js';

// Real time moved on by hand: a TOTP code is accepted once per 30-second step.
let offset = 0;
const clock = { now: () => new Date(Date.now() + offset) };
const codeAt = (secret: string) => totpCode(secret, clock);

type Entry = {
  action: string;
  actorId: string;
  credential: string;
  ip: string | null;
  changes: Record<string, unknown>;
};

t.test(
  'team changes: audit log, webhook events, notification feed; security settings bind live sessions',
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-team-ca-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, 'ca.pem'), (await receiverTls()).cert);
    const receiver = await startReceiver(t, { now: () => Date.now() });
    const smtp = await startSmtpPeer(t);
    const d = await startTestDaemon(
      t,
      {
        mail: { smtp_host: '127.0.0.1', smtp_port: smtp.port },
        webhooks: { ca_file: join(dir, 'ca.pem'), poll_interval_ms: 60_000 },
        notifications: { poll_interval_ms: 60_000 },
        // Every request reads the settings and the member's two-factor state afresh.
        auth: { credential_cache_seconds: 0 },
      },
      { clock },
    );
    const { webhookWorker, notifications } = d.modules.services;
    const holder = await signIn(d, 'holder@example.test');
    const hook = await d.https('POST', '/account/webhooks', {
      token: holder.token,
      body: {
        url: receiver.url(),
        events: ['team.invitation_sent', 'team.member_joined', 'team.member_role_changed', 'team.member_removed'],
      },
    });
    t.equal(hook.status, 201);
    receiver.secret = hook.json.data.secret;

    const invite = async (email: string, role: string) => {
      const r = await d.https('POST', '/account/invitations', { token: holder.token, body: { email, role } });
      t.equal(r.status, 201);
      await smtp.next(email, /svc_inv_/);
      const mail = smtp.messages.filter((m) => m.to.includes(email)).at(-1)!;
      return { id: r.json.data.id as string, token: /token=(svc_inv_\w+)/.exec(mail.text)![1]! };
    };
    const audit = async (): Promise<Entry[]> =>
      (await d.https('GET', '/account/audit-log?limit=100', { token: holder.token })).json.data;

    // Invite, accept, change the role, remove: each in the audit log and emitted.
    const bob = await invite('bob@example.test', 'developer');
    const joined = await d.https('POST', '/account/invitations/accept', {
      body: { token: bob.token, password: 'bob long password' },
    });
    t.equal(joined.status, 200);
    const bobId = joined.json.data.memberId as string;
    t.equal(
      (await d.https('PATCH', `/account/members/${bobId}`, { token: holder.token, body: { role: 'billing' } })).status,
      200,
    );
    const carol = await invite('carol@example.test', 'read_only');
    t.equal((await d.https('DELETE', `/account/invitations/${carol.id}`, { token: holder.token })).status, 200);
    t.equal((await d.https('DELETE', `/account/members/${bobId}`, { token: holder.token })).status, 200);

    const entries = (await audit()).reverse();
    t.same(
      entries.map((e) => e.action),
      [
        'team.invitation_sent',
        'team.member_joined',
        'team.member_role_changed',
        'team.invitation_sent',
        'team.invitation_revoked',
        'team.member_removed',
      ],
    );
    t.match(entries[0], {
      actorId: holder.accountId,
      credential: 'session',
      ip: '127.0.0.1',
      changes: { invitation: { from: null, to: { id: bob.id, email: 'bob@example.test', role: 'developer' } } },
    });
    t.match(entries[1], {
      actorId: bobId,
      changes: { member: { from: null, to: { accountId: bobId, role: 'developer' } } },
    });
    t.match(entries[2], { changes: { member: { accountId: bobId }, role: { from: 'developer', to: 'billing' } } });
    t.match(entries[4], { changes: { invitation: { from: { id: carol.id }, to: null } } });
    t.match(entries[5], { changes: { member: { from: { accountId: bobId, role: 'billing' }, to: null } } });

    await webhookWorker.runOnce();
    await receiver.waitFor(5);
    const delivered = receiver.received.map(
      (r) => JSON.parse(r.rawBody.toString()) as { event: string; data: Record<string, unknown> },
    );
    t.ok(
      receiver.received.every((r) => r.signatureOk),
      'signed',
    );
    t.same(delivered.map((e) => e.event).sort(), [
      'team.invitation_sent',
      'team.invitation_sent',
      'team.member_joined',
      'team.member_removed',
      'team.member_role_changed',
    ]);
    const data = (event: string) => delivered.find((e) => e.event === event)!.data;
    t.match(data('team.member_role_changed'), {
      memberId: bobId,
      email: 'bob@example.test',
      role: 'billing',
      previousRole: 'developer',
      actorId: holder.accountId,
    });
    t.match(data('team.member_joined'), { memberId: bobId, role: 'developer', invitationId: bob.id, actorId: bobId });
    t.match(data('team.member_removed'), { memberId: bobId, role: 'billing', endedSessions: 1 });

    await notifications.pump();
    const feed = (await d.https('GET', '/notifications?limit=10', { token: holder.token })).json.data as {
      kind: string;
      title: string;
      body: string;
    }[];
    t.match(
      feed.map((n) => [n.kind, n.title, n.body]),
      [
        ['team.member_removed', 'Team member removed', 'bob@example.test was removed from the team.'],
        ['team.invitation_sent', 'Invitation sent', 'carol@example.test was invited to the team as read-only.'],
        ['team.member_role_changed', 'Team role changed', 'bob@example.test is now billing (was developer).'],
        ['team.member_joined', 'New team member', 'bob@example.test joined the team as developer.'],
        ['team.invitation_sent', 'Invitation sent', 'bob@example.test was invited to the team as developer.'],
      ],
    );

    // Security settings bind sessions already made. Dave signs in without a second factor, Erin with one.
    const dave = await signIn(d, 'dave@example.test');
    const erin = await signIn(d, 'erin@example.test');
    const enrol = await d.https('POST', '/auth/2fa/enroll', { token: erin.token });
    const secret = enrol.json.data.secret as string;
    t.equal(
      (await d.https('POST', '/auth/2fa/verify', { token: erin.token, body: { code: codeAt(secret) } })).status,
      200,
    );
    const memberSession = async (who: { email: string; token: string }) => {
      const inv = await invite(who.email, 'developer');
      const r = await d.https('POST', '/account/invitations/accept', { token: who.token, body: { token: inv.token } });
      t.equal(r.status, 200);
      return { token: r.json.data.accessToken as string, id: r.json.data.sessionId as string };
    };
    const { token: daveSession } = await memberSession(dave);
    const { token: erinSession, id: erinSessionId } = await memberSession(erin);
    const members = (token: string) => d.https('GET', '/account/members', { token });
    t.equal((await members(daveSession)).status, 200);

    const security = (body: unknown) => d.https('PUT', '/account/security', { token: holder.token, body });
    const required = await security({ requireTwoFactor: true, allowedLoginCidrs: [] });
    t.equal(required.status, 200);
    t.equal(required.json.data.endedSessions, 1, "dave's session ends at once");
    t.equal((await members(daveSession)).status, 401);
    t.equal((await members(erinSession)).status, 200, 'a member with two-factor sign-in keeps its session');
    t.equal((await members(holder.token)).status, 200, 'the holder is not bound');

    // Networks: the next request from outside them is refused; the session stays for use from inside.
    t.equal((await security({ requireTwoFactor: true, allowedLoginCidrs: ['10.0.0.0/8'] })).status, 200);
    const outside = await members(erinSession);
    t.equal(outside.status, 403);
    t.equal(outside.json.error.code, 'FORBIDDEN');
    t.equal((await members(holder.token)).status, 200);
    t.equal((await security({ requireTwoFactor: true, allowedLoginCidrs: ['127.0.0.0/8', '::1/128'] })).status, 200);
    t.equal((await members(erinSession)).status, 200, 'inside the networks again');

    // A member who turns two-factor sign-in off while the team requires it loses the team session.
    offset += 30_000;
    const off = await d.https('POST', '/auth/2fa/disable', {
      token: erin.token,
      body: { password: erin.password, code: codeAt(secret) },
    });
    t.equal(off.status, 200);
    t.equal((await members(erinSession)).status, 401);
    const [row] = await d.sql<
      { revokedAt: Date | null }[]
    >`select revoked_at from sessions where id = ${erinSessionId}`;
    t.ok(row?.revokedAt, 'ended, not only refused');

    const last = (await audit()).filter((e) => e.action === 'security.updated');
    t.match(last.reverse(), [
      { changes: { requireTwoFactor: { from: false, to: true } } },
      { changes: { allowedLoginCidrs: { from: [], to: ['10.0.0.0/8'] } } },
      { changes: { allowedLoginCidrs: { from: ['10.0.0.0/8'], to: ['127.0.0.0/8', '::1/128'] } } },
    ]);
  },
);
