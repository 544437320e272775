import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Db, Sql } from '../../db/connection.js';
import { conflict, notFound, ruleError, unauthorized, validationError } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { newId, randomToken, sha256Hex } from '../../platform/ids.js';
import type { Mailer } from '../../platform/mailer.js';
import { hashPassword, verifyPassword } from './passwords.js';
import type { AccountRow } from './repo.js';
import { createSecurityRepo, type LoginOutcome } from './security-repo.js';
import type { AccountsService } from './service.js';
import { createTotpKit } from './totp.js';

const VERIFY_PREFIX = 'svc_ev_';
const RESET_PREFIX = 'svc_pr_';

/** `abcde-fghij`: 50 bits from an alphabet without look-alikes, easy to type from paper. */
function recoveryCode(): string {
  const alphabet = 'abcdefghjkmnpqrstuvwxyz23456789';
  const raw = randomToken(40)
    .toLowerCase()
    .split('')
    .filter((c) => alphabet.includes(c))
    .join('');
  const s = raw.length >= 10 ? raw.slice(0, 10) : (raw + recoveryCode()).slice(0, 10);
  return `${s.slice(0, 5)}-${s.slice(5)}`;
}
const normaliseRecovery = (code: string) => code.trim().toLowerCase().replace(/[\s-]/g, '');

const maskEmail = (email: string) => {
  const [user = '', domain = ''] = email.split('@');
  return `${user.slice(0, 1)}***@${domain}`;
};

/**
 * E-mail verification, password reset by e-mailed token, TOTP two-factor sign-in with recovery
 * codes, revoking one session and the login history: the account-security half of Authentication.
 */
export function createAccountSecurityService(deps: {
  sql: Sql;
  config: Readonly<Config>;
  clock: Clock;
  log: Logger;
  mailer: Mailer;
  accounts: AccountsService;
  signingSecret: Uint8Array;
}) {
  const { sql, config, clock, log, mailer, accounts } = deps;
  const repo = createSecurityRepo(sql);
  const totp = createTotpKit(deps.signingSecret, config.two_factor.issuer);

  async function accountOrFail(accountId: string): Promise<AccountRow & { email: string }> {
    const a = await accounts.getAccount(accountId);
    if (!a?.email) throw unauthorized();
    return a as AccountRow & { email: string };
  }

  async function issueToken(account: AccountRow & { email: string }, purpose: 'verify_email' | 'password_reset') {
    const now = clock.now();
    const ttlMs =
      purpose === 'verify_email'
        ? config.mail.verification_token_hours * 3600_000
        : config.mail.reset_token_minutes * 60_000;
    const token = (purpose === 'verify_email' ? VERIFY_PREFIX : RESET_PREFIX) + randomToken(43);
    const expiresAt = new Date(now.getTime() + ttlMs);
    await repo.insertToken({
      id: newId(),
      accountId: account.id,
      purpose,
      tokenHash: sha256Hex(token),
      email: account.email,
      now,
      expiresAt,
    });
    return { token, expiresAt };
  }

  async function sendVerificationMail(account: AccountRow & { email: string }) {
    const { token, expiresAt } = await issueToken(account, 'verify_email');
    await mailer.send({
      to: account.email,
      subject: 'Confirm your e-mail address',
      text:
        `Confirm that ${account.email} is the address of your svc-exchange account:\n\n` +
        `${mailer.link(`/verify-email?token=${token}`)}\n\n` +
        `Or send this token to POST /api/v1/auth/email/verify: ${token}\n\n` +
        `The link works until ${expiresAt.toISOString()}. If you did not create an account, ignore this e-mail.\n`,
    });
    return expiresAt;
  }

  /** Checks a TOTP code against an enabled (or, with `pending`, a just-enrolled) secret and uses its step. */
  async function checkTotp(accountId: string, code: string, pending = false): Promise<boolean> {
    const row = await repo.totp(accountId);
    if (!row || (row.enabledAt === null) !== pending) return false;
    const step = totp.stepOf(totp.unseal(row.secretSealed), code, clock.now());
    return step !== null && (await repo.useTotpStep(accountId, step));
  }

  async function newRecoveryCodes(accountId: string, tx: Db) {
    const codes = Array.from({ length: config.two_factor.recovery_codes }, recoveryCode);
    await repo.replaceRecoveryCodes(
      accountId,
      codes.map((c) => ({ id: newId(), codeHash: sha256Hex(normaliseRecovery(c)) })),
      clock.now(),
      tx,
    );
    return codes;
  }

  async function requirePassword(account: AccountRow, password: string) {
    if (!account.passwordHash || !(await verifyPassword(password, account.passwordHash)))
      throw validationError([{ path: 'password', message: 'is not the current password' }]);
  }

  return {
    /** After registration: the first verification e-mail. */
    async welcome(account: AccountRow) {
      if (account.email) await sendVerificationMail(account as AccountRow & { email: string });
    },

    async emailStatus(accountId: string) {
      const a = await accountOrFail(accountId);
      const at = await repo.emailVerifiedAt(accountId);
      return { email: a.email, verified: at !== null, verifiedAt: at?.toISOString() ?? null };
    },

    async resendVerification(accountId: string) {
      const a = await accountOrFail(accountId);
      if (await repo.emailVerifiedAt(accountId)) throw conflict('This e-mail address is already verified');
      const expiresAt = await sendVerificationMail(a);
      return { sent: true, email: maskEmail(a.email), expiresAt: expiresAt.toISOString() };
    },

    async verifyEmail(token: string) {
      const now = clock.now();
      return sql.begin(async (tx) => {
        const used = await repo.useToken('verify_email', sha256Hex(token), now, tx);
        if (!used) throw ruleError('The verification link is invalid, expired or already used');
        if (!(await repo.markEmailVerified(used.accountId, used.email, now, tx)))
          throw ruleError('The account no longer uses the e-mail address this link was sent to');
        accounts.forget(used.accountId);
        log.info({ accountId: used.accountId }, 'e-mail address verified');
        return { verified: true, email: used.email, verifiedAt: now.toISOString() };
      });
    },

    /**
     * Sends a reset link when the address belongs to an open account; the answer and its timing
     * are the same either way (the e-mail goes out after the answer).
     */
    async forgotPassword(email: string): Promise<void> {
      const account = await accounts.repo.byEmail(email);
      if (!account?.email || account.status === 'closed' || account.parentId !== null) return;
      const a = account as AccountRow & { email: string };
      const { token, expiresAt } = await issueToken(a, 'password_reset');
      void mailer
        .send({
          to: a.email,
          subject: 'Reset your password',
          text:
            `Someone asked to reset the password of the svc-exchange account ${a.email}.\n\n` +
            `${mailer.link(`/reset-password?token=${token}`)}\n\n` +
            `Or send this token with a new password to POST /api/v1/auth/password/reset: ${token}\n\n` +
            `The link works once, until ${expiresAt.toISOString()}. If it was not you, ignore this e-mail: ` +
            `your password stays as it is.\n`,
        })
        .catch((err: unknown) => log.error({ err, accountId: a.id }, 'password reset e-mail failed'));
    },

    async checkResetToken(token: string) {
      const row = await repo.peekToken('password_reset', sha256Hex(token), clock.now());
      if (!row) return { valid: false, email: null, expiresAt: null };
      return { valid: true, email: maskEmail(row.email), expiresAt: row.expiresAt.toISOString() };
    },

    /** Sets a new password from a reset token; every session of the account ends. */
    async resetPassword(token: string, newPassword: string, meta: { ip?: string; userAgent?: string }) {
      const now = clock.now();
      const hash = await hashPassword(newPassword, config.auth.scrypt_cost);
      const r = await sql.begin(async (tx) => {
        const used = await repo.useToken('password_reset', sha256Hex(token), now, tx);
        if (!used) throw ruleError('The reset link is invalid, expired or already used');
        await repo.setPasswordHash(used.accountId, hash, now, tx);
        // The reset proved control of the mailbox.
        await repo.markEmailVerified(used.accountId, used.email, now, tx);
        const revoked = await repo.revokeAllSessions(used.accountId, now, tx);
        await repo.recordLogin(
          {
            id: newId(),
            accountId: used.accountId,
            outcome: 'password_reset',
            method: 'reset_token',
            ip: meta.ip ?? null,
            userAgent: meta.userAgent ?? null,
            now,
          },
          tx,
        );
        return { accountId: used.accountId, revoked };
      });
      accounts.forget(r.accountId, r.revoked);
      log.info({ accountId: r.accountId, revokedSessions: r.revoked.length }, 'password reset by e-mailed token');
      return { reset: true, revokedSessions: r.revoked.length };
    },

    async twoFactorStatus(accountId: string) {
      const row = await repo.totp(accountId);
      return {
        enabled: row?.enabledAt != null,
        enabledAt: row?.enabledAt?.toISOString() ?? null,
        pendingEnrolment: row !== undefined && row.enabledAt === null,
        recoveryCodesRemaining: row?.enabledAt ? await repo.recoveryCodesLeft(accountId) : 0,
      };
    },

    /** A new secret to scan; two-factor sign-in turns on only when a first code confirms it. */
    async enrolTwoFactor(accountId: string) {
      const a = await accountOrFail(accountId);
      const { secret, uri } = totp.newSecret(a.email);
      if (!(await repo.startTotp(accountId, totp.seal(secret), clock.now())))
        throw conflict('Two-factor sign-in is already on; turn it off first to enrol a new authenticator');
      return { secret, otpauthUri: uri, algorithm: 'SHA1', digits: 6, period: 30 };
    },

    async confirmTwoFactor(accountId: string, code: string) {
      const row = await repo.totp(accountId);
      if (!row) throw ruleError('Start with POST /auth/2fa/enroll');
      if (row.enabledAt) throw conflict('Two-factor sign-in is already on');
      if (!(await checkTotp(accountId, code, true)))
        throw validationError([{ path: 'code', message: 'is not the current code of the enrolled authenticator' }]);
      const codes = await sql.begin(async (tx) => {
        await repo.enableTotp(accountId, clock.now(), tx);
        return newRecoveryCodes(accountId, tx);
      });
      log.info({ accountId }, 'two-factor sign-in turned on');
      return { enabled: true, recoveryCodes: codes };
    },

    async disableTwoFactor(accountId: string, password: string, code: string) {
      const a = await accountOrFail(accountId);
      await requirePassword(a, password);
      if (!(await repo.totpEnabled(accountId))) throw ruleError('Two-factor sign-in is not on');
      const good =
        (await checkTotp(accountId, code)) ||
        (await repo.useRecoveryCode(accountId, sha256Hex(normaliseRecovery(code)), clock.now()));
      if (!good) throw validationError([{ path: 'code', message: 'is not a current code or an unused recovery code' }]);
      await sql.begin((tx) => repo.deleteTotp(accountId, tx));
      log.info({ accountId }, 'two-factor sign-in turned off');
      return { enabled: false };
    },

    async renewRecoveryCodes(accountId: string, code: string) {
      if (!(await repo.totpEnabled(accountId))) throw ruleError('Two-factor sign-in is not on');
      if (!(await checkTotp(accountId, code)))
        throw validationError([{ path: 'code', message: 'is not the current authenticator code' }]);
      return { recoveryCodes: await sql.begin((tx) => newRecoveryCodes(accountId, tx)) };
    },

    /** The second step of a two-factor sign-in: an authenticator code or one unused recovery code. */
    completeLogin(challengeToken: string, input: { code?: string | undefined; recoveryCode?: string | undefined }) {
      if (input.code === undefined && input.recoveryCode === undefined)
        throw validationError([{ path: 'code', message: 'send code or recoveryCode' }]);
      if (input.code !== undefined) {
        const code = input.code;
        return accounts.completeSecondFactor(challengeToken, 'totp', (id) => checkTotp(id, code));
      }
      const hash = sha256Hex(normaliseRecovery(input.recoveryCode!));
      return accounts.completeSecondFactor(challengeToken, 'recovery_code', (id) =>
        repo.useRecoveryCode(id, hash, clock.now()),
      );
    },

    async revokeSession(accountId: string, sessionId: string) {
      if (!(await repo.revokeSession(accountId, sessionId, clock.now()))) throw notFound('Session');
      accounts.forget(accountId, [sessionId]);
      return { revoked: true };
    },

    async loginHistory(accountId: string, q: { cursor?: string | undefined; limit: number; outcome?: LoginOutcome }) {
      const rows = await repo.loginHistory(accountId, q);
      return rows.map((r) => ({
        id: r.id,
        outcome: r.outcome,
        method: r.method,
        sessionId: r.sessionId,
        ip: r.ip,
        userAgent: r.userAgent,
        createdAt: r.createdAt.toISOString(),
      }));
    },
  };
}

export type AccountSecurityService = ReturnType<typeof createAccountSecurityService>;
