import t from 'tap';
import { startTestDaemon } from '../../helpers/daemon.js';
import { signIn } from '../../helpers/sessions.js';
import { startSmtpPeer } from '../../helpers/smtp.js';

// Real time moved on by hand to expire invitations.
let offset = 0;
const clock = { now: () => new Date(Date.now() + offset) };

t.test('team members, invitations and roles over HTTPS with a real SMTP server', async (t) => {
  const smtp = await startSmtpPeer(t);
  const d = await startTestDaemon(
    t,
    {
      mail: {
        smtp_host: '127.0.0.1',
        smtp_port: smtp.port,
        from: 'Exchange <no-reply@exchange.test>',
        link_base_url: 'https://dash.exchange.test/',
      },
    },
    { clock },
  );
  const holder = await signIn(d, 'holder@example.test');
  const invite = (token: string, email: string, role: string) =>
    d.https('POST', '/account/invitations', { token, body: { email, role } });
  const tokenIn = async (to: string, nth = 0) => {
    await smtp.next(to, /svc_inv_/);
    for (;;) {
      const mails = smtp.messages.filter((m) => m.to.includes(to));
      if (mails.length > nth) return /token=(svc_inv_\w+)/.exec(mails[nth]!.text)![1]!;
      await smtp.next('nobody@x.test', /never/, 200).catch(() => undefined);
    }
  };
  const accept = (body: Record<string, string>, token?: string) =>
    d.https('POST', '/account/invitations/accept', { body, ...(token ? { token } : {}) });

  // A new address: invited, accepts with a password, gets a session of the team with its role.
  const inv = await invite(holder.token, 'carol@example.test', 'billing');
  t.equal(inv.status, 201);
  t.match(inv.json.data, { email: 'carol@example.test', role: 'billing', expired: false, sentCount: 1 });
  const carolToken = await tokenIn('carol@example.test');
  const mail = smtp.messages.find((m) => m.to.includes('carol@example.test'))!;
  t.match(mail.text, `https://dash.exchange.test/accept-invitation?token=${carolToken}`);
  t.equal((await d.https('GET', '/account/invitations', { token: holder.token })).json.data.length, 1);
  t.equal((await invite(holder.token, 'carol@example.test', 'admin')).status, 409, 'one open invitation per address');
  const noPassword = await accept({ token: carolToken });
  t.equal(noPassword.status, 400);
  t.equal(noPassword.json.error.code, 'VALIDATION_ERROR');
  const carol = await accept({ token: carolToken, password: 'carol long password' });
  t.equal(carol.status, 200);
  t.match(carol.json.data, { accountId: holder.accountId, role: 'billing' });
  const carolSession = carol.json.data.accessToken as string;
  const carolId = carol.json.data.memberId as string;
  t.equal((await accept({ token: carolToken, password: 'carol long password' })).status, 400, 'single use');
  t.same((await d.https('GET', '/account/invitations', { token: holder.token })).json.data, []);

  const members = (await d.https('GET', '/account/members', { token: carolSession })).json.data;
  t.match(members, [
    { accountId: holder.accountId, role: 'owner', holder: true, email: 'holder@example.test' },
    { accountId: carolId, role: 'billing', holder: false, email: 'carol@example.test' },
  ]);
  t.ok(members[1].lastLoginAt, 'the acceptance is the member login first sign-in');

  // The billing role: account and billing writes, no API keys, no member management, no password.
  const profile = await d.https('PATCH', '/account/profile', { token: carolSession, body: { displayName: 'Ops' } });
  t.equal(profile.status, 200);
  for (const [method, path, body] of [
    ['POST', '/account/api-keys', { name: 'k' }],
    ['POST', '/account/invitations', { email: 'x@example.test', role: 'read_only' }],
    ['POST', '/auth/change-password', { currentPassword: 'carol long password', newPassword: 'another long one' }],
  ] as const) {
    const r = await d.https(method, path, { token: carolSession, body });
    t.equal(r.status, 403, `${method} ${path} refused to a billing member`);
    t.equal(r.json.error.code, 'FORBIDDEN');
  }

  // An address that has a login accepts with that login's own session.
  const dave = await signIn(d, 'dave@example.test');
  t.equal((await invite(holder.token, 'dave@example.test', 'developer')).status, 201);
  const daveToken = await tokenIn('dave@example.test');
  t.equal((await accept({ token: daveToken })).status, 409, 'a login must accept signed in');
  t.equal((await accept({ token: daveToken }, carolSession)).status, 403, 'a member session is not a login session');
  const daveAccept = await accept({ token: daveToken }, dave.token);
  t.equal(daveAccept.status, 200);
  const daveSession = daveAccept.json.data.accessToken as string;
  t.equal((await d.https('GET', '/account/profile', { token: daveSession })).status, 200);
  t.equal((await d.https('GET', '/markets/summary', { token: daveSession })).status, 200, 'catalogue reads are open');
  t.equal((await d.https('GET', '/account/api-keys', { token: daveSession })).status, 403, 'no scope: members refused');
  t.equal(
    (await d.https('PATCH', '/account/profile', { token: daveSession, body: { displayName: 'x' } })).status,
    403,
    'a developer cannot change the profile (account:write)',
  );
  t.match((await d.https('GET', '/account/teams', { token: dave.token })).json.data, [
    { accountId: holder.accountId, role: 'developer', email: 'holder@example.test' },
  ]);
  const switched = await d.https('POST', `/account/teams/${holder.accountId}/session`, { token: dave.token });
  t.equal(switched.status, 200);
  t.match(switched.json.data, { accountId: holder.accountId, memberId: dave.accountId, role: 'developer' });
  t.equal((await d.https('POST', `/account/teams/${dave.accountId}/session`, { token: holder.token })).status, 404);
  const holderSessions = (await d.https('GET', '/auth/sessions', { token: holder.token })).json.data;
  t.notOk(
    holderSessions.some((x: { id: string }) => x.id === switched.json.data.sessionId),
    "members' sessions are not the holder's",
  );

  // Roles change live: carol becomes admin; admins manage members but not owners.
  const promoted = await d.https('PATCH', `/account/members/${carolId}`, {
    token: holder.token,
    body: { role: 'admin' },
  });
  t.equal(promoted.status, 200);
  t.equal(promoted.json.data.role, 'admin');
  t.equal((await invite(carolSession, 'erin@example.test', 'owner')).status, 403, 'an admin cannot grant owner');
  t.equal((await invite(carolSession, 'erin@example.test', 'read_only')).status, 201);
  t.equal(
    (await d.https('PATCH', `/account/members/${holder.accountId}`, { token: carolSession, body: { role: 'admin' } }))
      .status,
    409,
    'the holder stays an owner',
  );
  t.equal(
    (await d.https('PATCH', `/account/members/${dave.accountId}`, { token: carolSession, body: { role: 'owner' } }))
      .status,
    403,
  );
  t.equal(
    (await d.https('PATCH', `/account/members/${dave.accountId}`, { token: holder.token, body: { role: 'owner' } }))
      .status,
    200,
  );
  t.equal((await d.https('DELETE', `/account/members/${dave.accountId}`, { token: carolSession })).status, 403);
  t.equal((await d.https('DELETE', `/account/members/${holder.accountId}`, { token: holder.token })).status, 409);
  t.equal((await d.https('PATCH', '/account/profile', { token: daveSession, body: { displayName: 'y' } })).status, 200);

  // Resend: a new link, the old one stops working.
  const erinFirst = await tokenIn('erin@example.test');
  const [erinInv] = (await d.https('GET', '/account/invitations', { token: holder.token })).json.data;
  const resent = await d.https('POST', `/account/invitations/${erinInv.id}/resend`, { token: carolSession });
  t.equal(resent.status, 200);
  t.equal(resent.json.data.sentCount, 2);
  const erinSecond = await tokenIn('erin@example.test', 1);
  t.not(erinSecond, erinFirst);
  t.equal((await accept({ token: erinFirst, password: 'erin long password' })).status, 400);

  // Revoked: the link stops working.
  t.equal((await d.https('DELETE', `/account/invitations/${erinInv.id}`, { token: holder.token })).status, 200);
  t.equal((await accept({ token: erinSecond, password: 'erin long password' })).status, 400);

  // Removal ends the member's sessions of the account.
  const removed = await d.https('DELETE', `/account/members/${carolId}`, { token: holder.token });
  t.match(removed.json.data, { removed: true, endedSessions: 1 });
  t.equal((await d.https('GET', '/account/members', { token: carolSession })).status, 401);
  t.equal((await d.https('GET', `/account/members/${carolId}`, { token: holder.token })).status, 404);

  const roles = (await d.https('GET', '/account/roles', { token: holder.token })).json.data;
  t.same(
    roles.map((r: { role: string }) => r.role),
    ['owner', 'admin', 'billing', 'developer', 'read_only'],
  );
  t.ok(roles.find((r: { role: string }) => r.role === 'read_only').scopes.every((s: string) => s.endsWith(':read')));

  // Team security: checked when a member session is made.
  const security = (body: unknown) => d.https('PUT', '/account/security', { token: holder.token, body });
  const switchDave = () => d.https('POST', `/account/teams/${holder.accountId}/session`, { token: dave.token });
  t.match((await d.https('GET', '/account/security', { token: holder.token })).json.data, {
    requireTwoFactor: false,
    allowedLoginCidrs: [],
  });
  const required = await security({ requireTwoFactor: true, allowedLoginCidrs: [] });
  t.equal(required.status, 200);
  t.equal(required.json.data.endedSessions, 2, "dave's two member sessions end: no second factor");
  t.equal((await switchDave()).status, 403, 'a member without two-factor sign-in is refused');
  t.equal((await security({ requireTwoFactor: false, allowedLoginCidrs: ['10.0.0.0/8'] })).status, 200);
  t.equal((await switchDave()).status, 403, 'outside the allowed networks');
  const set = await security({ requireTwoFactor: false, allowedLoginCidrs: ['127.0.0.0/8', '::1/128'] });
  t.same(set.json.data.allowedLoginCidrs, ['127.0.0.0/8', '::1/128']);
  const readmitted = await switchDave();
  t.equal(readmitted.status, 200);
  const bad = await security({ requireTwoFactor: false, allowedLoginCidrs: ['not a network'] });
  t.equal(bad.status, 400);
  t.equal(bad.json.error.code, 'VALIDATION_ERROR');
  t.equal(
    (
      await d.https('PUT', '/account/security', {
        token: readmitted.json.data.accessToken,
        body: { requireTwoFactor: true, allowedLoginCidrs: [] },
      })
    ).status,
    200,
    'an owner member may set them',
  );
  t.equal((await security({ requireTwoFactor: false, allowedLoginCidrs: [] })).status, 200);

  // Expiry: after [team] invitation_ttl_hours the link no longer works; the address can be invited again.
  t.equal((await invite(holder.token, 'frank@example.test', 'read_only')).status, 201);
  const frankToken = await tokenIn('frank@example.test');
  offset += d.config.team.invitation_ttl_hours * 3600_000 + 1000;
  const again = await signIn(d, 'holder2@example.test');
  t.equal((await accept({ token: frankToken, password: 'frank long password' })).status, 400);
  t.equal((await invite(again.token, 'frank@example.test', 'read_only')).status, 201, 'another account invites too');
  const relogin = await d.https('POST', '/auth/login', { body: { email: holder.email, password: holder.password } });
  const holderNow = relogin.json.data.accessToken as string;
  const [expired] = (await d.https('GET', '/account/invitations', { token: holderNow })).json.data;
  t.match(expired, { email: 'frank@example.test', expired: true });
  t.equal((await invite(holderNow, 'frank@example.test', 'read_only')).status, 201, 'an expired one is replaced');
});
