import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import t from 'tap';
import { startTestDaemon } from '../../helpers/daemon.js';
import { startSmtpPeer } from '../../helpers/smtp.js';
import { totpCode } from '../../helpers/totp.js';

// Real time moved on by hand: a TOTP code is accepted once per 30-second step.
let offset = 0;
const clock = { now: () => new Date(Date.now() + offset) };
const codeAt = (secret: string) => totpCode(secret, clock);

t.test(
  'verification, reset, two-factor sign-in, sessions and history over HTTPS with a real SMTP server',
  async (t) => {
    const smtp = await startSmtpPeer(t, { user: 'mailer', pass: 'smtp secret' });
    const d = await startTestDaemon(
      t,
      {
        mail: {
          smtp_host: '127.0.0.1',
          smtp_port: smtp.port,
          smtp_user: 'mailer',
          smtp_password: 'smtp secret',
          from: 'Exchange <no-reply@exchange.test>',
          link_base_url: 'https://dash.exchange.test/',
        },
      },
      { clock },
    );
    const email = 'alice@example.test';
    const password = 'correct horse battery';
    const reg = await d.https('POST', '/auth/register', { body: { email, password } });
    t.equal(reg.status, 202);

    const welcome = await smtp.next(email, /verify-email/);
    t.equal(welcome.from, 'no-reply@exchange.test');
    t.equal(welcome.user, 'mailer', 'the daemon authenticated to the SMTP server');
    t.match(welcome.subject, /Confirm your e-mail/);
    const verifyToken = /token=(svc_ev_\w+)/.exec(welcome.text)![1]!;
    t.match(welcome.text, `https://dash.exchange.test/verify-email?token=${verifyToken}`);

    const login = (
      await d.https('POST', '/auth/login', { body: { email, password }, headers: { 'user-agent': 'tap-a' } })
    ).json.data;
    const token = login.accessToken as string;
    t.same((await d.https('GET', '/auth/security', { token })).json.data.email, {
      address: email,
      verified: false,
      verifiedAt: null,
    });
    const bad = await d.https('POST', '/auth/email/verify', { body: { token: 'svc_ev_notatokenatall' } });
    t.equal(bad.status, 400);
    t.equal(bad.json.error.code, 'VALIDATION_ERROR');

    // A resent link replaces the first.
    const resent = await d.https('POST', '/auth/email/verification', { token });
    t.equal(resent.status, 202);
    t.match(resent.json.data, { sent: true, email: 'a***@example.test' });
    await t.resolves(async () => {
      for (;;) {
        if (smtp.messages.filter((m) => /verify-email/.test(m.text)).length === 2) return;
        await smtp.next('nobody@x.test', /never/, 200).catch(() => undefined);
      }
    });
    const second = smtp.messages.filter((m) => /verify-email/.test(m.text))[1]!;
    const secondToken = /token=(svc_ev_\w+)/.exec(second.text)![1]!;
    t.equal(
      (await d.https('POST', '/auth/email/verify', { body: { token: verifyToken } })).status,
      400,
      'the replaced link no longer works',
    );
    const ok = await d.https('POST', '/auth/email/verify', { body: { token: secondToken } });
    t.equal(ok.status, 200);
    t.match(ok.json.data, { verified: true, email });
    t.equal(
      (await d.https('POST', '/auth/email/verify', { body: { token: secondToken } })).status,
      400,
      'a link works once',
    );
    t.equal((await d.https('GET', '/auth/security', { token })).json.data.email.verified, true);
    t.equal((await d.https('POST', '/auth/email/verification', { token })).json.error.code, 'CONFLICT');

    // Password reset by e-mailed token.
    const unknown = await d.https('POST', '/auth/password/forgot', { body: { email: 'nobody@example.test' } });
    const forgot = await d.https('POST', '/auth/password/forgot', { body: { email } });
    t.same([forgot.status, forgot.json], [unknown.status, unknown.json], 'the same answer for unknown addresses');
    const resetMail = await smtp.next(email, /reset-password/);
    const resetToken = /token=(svc_pr_\w+)/.exec(resetMail.text)![1]!;
    const bogus = await d.https('POST', '/auth/password/reset', {
      body: { token: 'svc_pr_bogusbogus', newPassword: 'whatever it is now' },
    });
    t.match(bogus.json.error, { code: 'VALIDATION_ERROR', message: /invalid, expired or already used/ });
    const weak = await d.https('POST', '/auth/password/reset', { body: { token: resetToken, newPassword: 'short' } });
    t.equal(weak.json.error.code, 'VALIDATION_ERROR');
    const newPassword = 'a brand new passphrase';
    const reset = await d.https('POST', '/auth/password/reset', { body: { token: resetToken, newPassword } });
    t.equal(reset.status, 200);
    t.match(reset.json.data, { reset: true, revokedSessions: 1 });
    t.equal((await d.https('GET', '/account', { token })).status, 401, 'the reset ended every session');
    t.equal(
      (
        await d.https('POST', '/auth/password/reset', {
          body: { token: resetToken, newPassword: 'yet another passphrase' },
        })
      ).status,
      400,
    );
    t.equal(
      (await d.https('POST', '/auth/login', { body: { email, password } })).status,
      401,
      'the old password is gone',
    );
    const s1 = (
      await d.https('POST', '/auth/login', {
        body: { email, password: newPassword },
        headers: { 'user-agent': 'tap-b' },
      })
    ).json.data;

    // Two-factor sign-in.
    t.same((await d.https('GET', '/auth/security', { token: s1.accessToken })).json.data.twoFactor, {
      enabled: false,
      enabledAt: null,
      pendingEnrolment: false,
      recoveryCodesRemaining: 0,
    });
    const enrol = await d.https('POST', '/auth/2fa/enroll', { token: s1.accessToken });
    t.equal(enrol.status, 201);
    const secret = enrol.json.data.secret as string;
    t.match(enrol.json.data.otpauthUri, /^otpauth:\/\/totp\/svc-exchange:alice%40example\.test\?/);
    t.match(enrol.json.data.otpauthUri, `secret=${secret}`);
    t.equal(
      (await d.https('GET', '/auth/security', { token: s1.accessToken })).json.data.twoFactor.pendingEnrolment,
      true,
    );
    const wrong = await d.https('POST', '/auth/2fa/verify', {
      token: s1.accessToken,
      body: { code: '000000' === codeAt(secret) ? '111111' : '000000' },
    });
    t.equal(wrong.json.error.code, 'VALIDATION_ERROR');
    const on = await d.https('POST', '/auth/2fa/verify', { token: s1.accessToken, body: { code: codeAt(secret) } });
    t.equal(on.status, 200);
    const recovery = on.json.data.recoveryCodes as string[];
    t.equal(recovery.length, 10);
    t.match(recovery[0], /^[a-z0-9]{5}-[a-z0-9]{5}$/);
    t.equal((await d.https('POST', '/auth/2fa/enroll', { token: s1.accessToken })).json.error.code, 'CONFLICT');

    const step1 = await d.https('POST', '/auth/login', { body: { email, password: newPassword } });
    t.match(step1.json.data, { secondFactorRequired: true, challengeToken: /^svc_2fa_/ });
    t.notOk(step1.json.data.accessToken, 'no session before the second factor');
    const challenge = step1.json.data.challengeToken as string;
    t.equal(
      (await d.https('POST', '/auth/login/2fa', { body: { challengeToken: challenge, code: codeAt(secret) } })).status,
      401,
      'the code used to turn it on is not accepted again in the same step',
    );
    offset += 30_000;
    const s2 = await d.https('POST', '/auth/login/2fa', { body: { challengeToken: challenge, code: codeAt(secret) } });
    t.equal(s2.status, 200);
    t.match(s2.json.data, { accessToken: String, refreshToken: /^svc_rt_/ });
    t.equal(
      (await d.https('POST', '/auth/login/2fa', { body: { challengeToken: challenge, code: codeAt(secret) } })).status,
      401,
      'a challenge signs in once',
    );

    const step2 = (await d.https('POST', '/auth/login', { body: { email, password: newPassword } })).json.data;
    const viaRecovery = await d.https('POST', '/auth/login/2fa', {
      body: { challengeToken: step2.challengeToken, recoveryCode: recovery[0]!.toUpperCase() },
    });
    t.equal(viaRecovery.status, 200, 'a recovery code signs in (any case)');
    const step3 = (await d.https('POST', '/auth/login', { body: { email, password: newPassword } })).json.data;
    t.equal(
      (
        await d.https('POST', '/auth/login/2fa', {
          body: { challengeToken: step3.challengeToken, recoveryCode: recovery[0] },
        })
      ).status,
      401,
      'once',
    );
    t.equal(
      (await d.https('GET', '/auth/security', { token: s1.accessToken })).json.data.twoFactor.recoveryCodesRemaining,
      9,
    );

    offset += 30_000;
    const renewed = await d.https('POST', '/auth/2fa/recovery-codes', {
      token: s1.accessToken,
      body: { code: codeAt(secret) },
    });
    t.equal(renewed.status, 200);
    t.equal(renewed.json.data.recoveryCodes.length, 10);
    const step4 = (await d.https('POST', '/auth/login', { body: { email, password: newPassword } })).json.data;
    t.equal(
      (
        await d.https('POST', '/auth/login/2fa', {
          body: { challengeToken: step4.challengeToken, recoveryCode: recovery[1] },
        })
      ).status,
      401,
      'renewal ends the old codes',
    );

    // Sessions: revoke one; an API key cannot.
    const other = { id: decodeJwt(s2.json.data.accessToken).sid as string };
    const sessions = (await d.https('GET', '/auth/sessions', { token: s1.accessToken })).json.data as { id: string }[];
    t.ok(
      sessions.some((s) => s.id === other.id),
      'the session to revoke is listed',
    );
    t.equal((await d.https('DELETE', `/auth/sessions/${other.id}`, { token: s1.accessToken })).status, 200);
    t.equal(
      (await d.https('DELETE', `/auth/sessions/${other.id}`, { token: s1.accessToken })).json.error.code,
      'NOT_FOUND',
    );
    t.equal(
      (await d.https('GET', '/account', { token: s2.json.data.accessToken })).status,
      401,
      'the revoked session ends',
    );
    const accountId = (await d.https('GET', '/account', { token: s1.accessToken })).json.data.id as string;
    const key = await d.modules.services.keys.create(accountId, { mode: 'live' });
    t.equal((await d.https('DELETE', `/auth/sessions/${other.id}`, { token: key.secret })).status, 403);
    t.equal(
      (await d.https('POST', '/auth/sessions/revoke-others', { token: key.secret })).json.error.code,
      'NO_SESSION',
    );

    const off = await d.https('POST', '/auth/2fa/disable', {
      token: s1.accessToken,
      body: { password: 'not it at all', code: renewed.json.data.recoveryCodes[0] },
    });
    t.equal(off.json.error.code, 'VALIDATION_ERROR');
    const offOk = await d.https('POST', '/auth/2fa/disable', {
      token: s1.accessToken,
      body: { password: newPassword, code: renewed.json.data.recoveryCodes[0] },
    });
    t.same(offOk.json.data, { enabled: false });
    t.match((await d.https('POST', '/auth/login', { body: { email, password: newPassword } })).json.data, {
      accessToken: String,
    });

    const history = await d.https('GET', '/auth/login-history?limit=100', { token: s1.accessToken });
    t.equal(history.status, 200);
    const outcomes = (history.json.data as { outcome: string; method: string }[]).map(
      (e) => `${e.outcome}/${e.method}`,
    );
    for (const o of [
      'success/password',
      'failure/password',
      'password_reset/reset_token',
      'second_factor_required/password',
      'second_factor_failed/totp',
      'success/totp',
      'success/recovery_code',
      'second_factor_failed/recovery_code',
    ])
      t.ok(outcomes.includes(o), `history has ${o}`);
    t.equal(history.json.data[0].outcome, 'success', 'newest first');
    const page = await d.https('GET', '/auth/login-history?limit=2&outcome=success', { token: s1.accessToken });
    t.equal(page.json.data.length, 2);
    t.equal(page.json.hasMore, true);
    const page2 = await d.https('GET', `/auth/login-history?limit=2&outcome=success&cursor=${page.json.nextCursor}`, {
      token: s1.accessToken,
    });
    t.ok(page2.json.data.every((e: { id: string }) => e.id < page.json.nextCursor));
    t.equal((await d.https('GET', '/auth/login-history', { token: key.secret })).status, 403, 'session only');
  },
);

t.test('without an SMTP server e-mail is written to <state>/mail as .eml, never dropped', async (t) => {
  const d = await startTestDaemon(t);
  t.equal(
    (await d.https('POST', '/auth/register', { body: { email: 'bob@example.test', password: 'long enough pw' } }))
      .status,
    202,
  );
  const dir = join(d.config.paths.state, 'mail');
  let files: string[] = [];
  for (let i = 0; i < 100 && files.length === 0; i++) {
    try {
      files = readdirSync(dir).filter((f) => f.endsWith('.eml'));
    } catch {
      /* not made yet */
    }
    if (files.length === 0) await new Promise((r) => setTimeout(r, 50));
  }
  t.equal(files.length, 1);
  const eml = readFileSync(join(dir, files[0]!), 'utf8');
  t.match(eml, /^To: bob@example\.test$/m);
  t.match(eml, /^Subject: Confirm your e-mail address$/m);
  t.match(eml.replace(/=\n/g, '').replace(/=3D/g, '='), /verify-email\?token=svc_ev_\w+/);
});

t.test('an unreachable SMTP server: the e-mail is spooled to <state>/mail', async (t) => {
  const d = await startTestDaemon(t, { mail: { smtp_host: '127.0.0.1', smtp_port: 1, smtp_timeout_ms: 1000 } });
  const sent = await d.modules.services.mailer.send({ to: 'carol@example.test', subject: 'Hello', text: 'body' });
  t.equal(sent.via, 'file');
  t.match(readFileSync(sent.path!, 'utf8'), /^Subject: Hello$/m);
});
