import type { Db } from '../../db/connection.js';
import type { Redis } from 'ioredis';
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Sql } from '../../db/connection.js';
import { AppError, conflict, unauthorized, validationError } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { newId, randomToken, sha256Hex } from '../../platform/ids.js';
import { createTtlCache } from '../../platform/ttl-cache.js';
import { createCredentialCache } from '../../db/cache-listener.js';
import { createLoginGuard } from './login-guard.js';
import { burnPasswordTime, hashPassword, verifyPassword } from './passwords.js';
import type { TeamRole } from '../../http/access.js';
import { createAccountsRepo, type AccountRow, type ActiveSession } from './repo.js';
import { createSecurityRepo, type LoginMethod, type LoginOutcome } from './security-repo.js';

export interface SessionTokens {
  accessToken: string;
  refreshToken: string;
  expiresAt: string;
  sessionId: string;
}

/** A password accepted for an account with two-factor sign-in: the code goes to POST /auth/login/2fa. */
export interface SecondFactorChallenge {
  secondFactorRequired: true;
  challengeToken: string;
  expiresAt: string;
}

type LoginMeta = { userAgent?: string | undefined; ip?: string | undefined };

export interface SessionClaims {
  accountId: string;
  sessionId: string;
  /** A membership session: the member's login and role on `accountId`. */
  member?: { id: string; role: TeamRole };
}

const REFRESH_PREFIX = 'svc_rt_';

/** NOTIFY channel of accounts changes (migration 283); the payload is the account's id. */
export const ACCOUNTS_CHANNEL = 'svc_auth_accounts';

export function createAccountsService(deps: {
  sql: Sql;
  config: Readonly<Config>;
  clock: Clock;
  log: Logger;
  signingSecret: Uint8Array;
  /** Where login failures are counted so every daemon sees them; null: in process. */
  redis?: Redis | null;
  /** Told of each account registration (the verification e-mail); not awaited, so timing reveals nothing. */
  onRegistered?: (account: AccountRow) => Promise<unknown>;
}) {
  const { sql, config, clock } = deps;
  const repo = createAccountsRepo(sql);
  const security = createSecurityRepo(sql);
  const CHALLENGE_PREFIX = 'svc_2fa_';

  const recordLogin = (
    accountId: string,
    outcome: LoginOutcome,
    method: LoginMethod,
    meta: LoginMeta,
    sessionId?: string,
  ) =>
    security.recordLogin({
      id: newId(),
      accountId,
      outcome,
      method,
      sessionId: sessionId ?? null,
      ip: meta.ip ?? null,
      userAgent: meta.userAgent ?? null,
      now: clock.now(),
    });
  const guard = createLoginGuard(deps.redis ?? null, config.auth);
  const sessionCache = createTtlCache<string, ActiveSession | null>(config.auth.credential_cache_seconds * 1000, clock);
  // Every daemon hears of an account's change at its commit (NOTIFY svc_auth_accounts, migration
  // 283: a closing, a suspension, a role change); without the listen, credential_cache_seconds.
  const accountCache = createCredentialCache<AccountRow | null>({
    sql,
    channel: ACCOUNTS_CHANNEL,
    clock,
    ttlMs: config.auth.credential_cache_seconds * 1000,
    listeningTtlMs: 10 * 60_000,
    forget: 'key',
    load: async (id) => (await repo.byId(id)) ?? null,
  });

  async function issueSession(
    accountId: string,
    meta: { userAgent?: string | undefined; ip?: string | undefined },
    memberId: string | null = null,
  ): Promise<SessionTokens> {
    const now = clock.now();
    const sessionId = newId();
    const refreshToken = REFRESH_PREFIX + randomToken(43);
    await repo.insertSession({
      id: sessionId,
      accountId,
      refreshHash: sha256Hex(refreshToken),
      expiresAt: new Date(now.getTime() + config.auth.refresh_token_ttl_days * 86400_000),
      userAgent: meta.userAgent?.slice(0, 300) ?? null,
      ip: meta.ip ?? null,
      memberId,
    });
    return { ...(await accessToken(accountId, sessionId)), refreshToken, sessionId };
  }

  async function accessToken(accountId: string, sessionId: string) {
    const now = Math.floor(clock.now().getTime() / 1000);
    const exp = now + config.auth.access_token_ttl_seconds;
    const token = await new SignJWT({ sid: sessionId, typ: 'access' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(accountId)
      .setIssuedAt(now)
      .setExpirationTime(exp)
      .sign(deps.signingSecret);
    return { accessToken: token, expiresAt: new Date(exp * 1000).toISOString() };
  }

  const service = {
    repo,

    async createAccount(input: {
      email: string;
      password: string;
      role?: 'customer' | 'admin';
      mustChangePassword?: boolean;
      passwordExpiresAt?: Date;
    }) {
      const existing = await repo.byEmail(input.email);
      if (existing) throw conflict('An account with this e-mail already exists');
      try {
        return await repo.insertAccount({
          id: newId(),
          email: input.email.trim(),
          passwordHash: await hashPassword(input.password, config.auth.scrypt_cost),
          role: input.role ?? 'customer',
          mustChangePassword: input.mustChangePassword ?? false,
          passwordExpiresAt: input.passwordExpiresAt ?? null,
        });
      } catch (err) {
        if ((err as { code?: string }).code === '23505') throw conflict('An account with this e-mail already exists');
        throw err;
      }
    },

    /**
     * Creates the account when the e-mail is free; an address already registered gets the same
     * answer after the same hashing work, so registration cannot tell which e-mails exist.
     * The caller signs in with POST /auth/login.
     */
    async register(email: string, password: string): Promise<void> {
      if (await repo.byEmail(email)) {
        await burnPasswordTime(password, config.auth.scrypt_cost);
        return;
      }
      try {
        const account = await service.createAccount({ email, password });
        deps
          .onRegistered?.(account)
          .catch((err: unknown) => deps.log.error({ err, accountId: account.id }, 'registration follow-up failed'));
      } catch (err) {
        // Registered by a concurrent request meanwhile: the same neutral answer.
        if (err instanceof AppError && err.code === 'CONFLICT') return;
        throw err;
      }
    },

    /** Signs in with a password alone; an account with two-factor sign-in needs `beginLogin`. */
    async login(email: string, password: string, meta: LoginMeta): Promise<SessionTokens> {
      const r = await service.beginLogin(email, password, meta);
      if ('secondFactorRequired' in r) throw unauthorized('This account signs in with a second factor');
      return r;
    },

    /**
     * Checks the password; answers a session, or, when the account has two-factor sign-in on, a
     * challenge whose token and code complete the sign-in (`completeSecondFactor`).
     */
    async beginLogin(email: string, password: string, meta: LoginMeta): Promise<SessionTokens | SecondFactorChallenge> {
      await guard.before(email);
      const account = await repo.byEmail(email);
      if (!account?.passwordHash) {
        await burnPasswordTime(password, config.auth.scrypt_cost);
        await guard.failed(email);
        throw unauthorized('Invalid e-mail or password');
      }
      const good = (await verifyPassword(password, account.passwordHash)) && account.status !== 'closed';
      // A one-time password signs in once, before its deadline.
      if (!good || (account.passwordExpiresAt !== null && !(await repo.useOneTimePassword(account.id, clock.now())))) {
        await guard.failed(email);
        await recordLogin(account.id, 'failure', 'password', meta);
        throw unauthorized('Invalid e-mail or password');
      }
      await guard.succeeded(email);
      if (await security.totpEnabled(account.id)) {
        const now = clock.now();
        const challengeToken = CHALLENGE_PREFIX + randomToken(43);
        const expiresAt = new Date(now.getTime() + config.two_factor.challenge_minutes * 60_000);
        await security.insertChallenge({
          id: newId(),
          accountId: account.id,
          tokenHash: sha256Hex(challengeToken),
          now,
          expiresAt,
          userAgent: meta.userAgent?.slice(0, 300) ?? null,
          ip: meta.ip ?? null,
        });
        await recordLogin(account.id, 'second_factor_required', 'password', meta);
        return { secondFactorRequired: true, challengeToken, expiresAt: expiresAt.toISOString() };
      }
      const tokens = await issueSession(account.id, meta);
      await recordLogin(account.id, 'success', 'password', meta, tokens.sessionId);
      return tokens;
    },

    /**
     * Completes a two-factor sign-in: `check` verifies the code for the challenge's account. A
     * challenge takes `[two_factor] challenge_attempts` codes at most and signs in once.
     */
    async completeSecondFactor(
      challengeToken: string,
      method: 'totp' | 'recovery_code',
      check: (accountId: string) => Promise<boolean>,
    ): Promise<SessionTokens> {
      const now = clock.now();
      const ch = await security.attemptChallenge(sha256Hex(challengeToken), now, config.two_factor.challenge_attempts);
      if (!ch) throw unauthorized('The sign-in challenge is invalid, expired or out of attempts; sign in again');
      const meta = { userAgent: ch.userAgent ?? undefined, ip: ch.ip ?? undefined };
      if (!(await check(ch.accountId))) {
        await recordLogin(ch.accountId, 'second_factor_failed', method, meta);
        throw unauthorized('The code is not valid');
      }
      if (!(await security.closeChallenge(ch.id, now))) throw unauthorized('This sign-in challenge was already used');
      const tokens = await issueSession(ch.accountId, meta);
      await recordLogin(ch.accountId, 'success', method, meta, tokens.sessionId);
      return tokens;
    },

    /** Drops cached session and account state after revocations and password changes made elsewhere. */
    forget(accountId: string, sessionIds: readonly string[] = []) {
      accountCache.delete(accountId);
      for (const id of sessionIds) sessionCache.set(id, null);
    },

    recordLogin,

    /** Listens for account changes made by any daemon (the cache then keeps accounts longer). */
    startCache: () => accountCache.start(),
    stopCache: () => accountCache.stop(),

    /** Whether `password` is the login's current one (a confirmation, not a sign-in). */
    async checkPassword(id: string, password: string): Promise<boolean> {
      const account = await repo.byId(id);
      if (!account?.passwordHash) return false;
      return verifyPassword(password, account.passwordHash);
    },

    /** A deleted account's login closed in the caller's transaction; call `forget` after commit. */
    closeLogin: (id: string, tx: Db) => repo.closeLogin(id, clock.now(), tx),

    /**
     * A session of `memberId`'s login acting on the team account `accountId` (the caller checked
     * the membership); recorded in the member login's history.
     */
    async issueMemberSession(accountId: string, memberId: string, meta: LoginMeta): Promise<SessionTokens> {
      const tokens = await issueSession(accountId, meta, memberId);
      await recordLogin(memberId, 'success', 'membership', meta, tokens.sessionId);
      return tokens;
    },

    /** Whether the login signs in with a second factor (a team may require it of its members). */
    twoFactorEnabled: (accountId: string) => security.totpEnabled(accountId),

    /** Forgets cached session state so a member's new role applies on the next request. */
    refreshSessions(sessionIds: readonly string[]) {
      for (const id of sessionIds) sessionCache.delete(id);
    },

    /**
     * Replaces the password after checking the current one (counted as a login attempt), ends
     * every other session of the account with its refresh token, and lifts `mustChangePassword`.
     */
    async changePassword(claims: SessionClaims, current: string, next: string): Promise<{ revokedSessions: number }> {
      const account = await repo.byId(claims.accountId);
      if (!account?.passwordHash || !account.email) throw unauthorized();
      await guard.before(account.email);
      if (!(await verifyPassword(current, account.passwordHash))) {
        await guard.failed(account.email);
        throw validationError([{ path: 'currentPassword', message: 'is not the current password' }]);
      }
      await guard.succeeded(account.email);
      if (next === current)
        throw validationError([{ path: 'newPassword', message: 'must differ from the current password' }]);
      await repo.setPassword(account.id, await hashPassword(next, config.auth.scrypt_cost));
      accountCache.delete(account.id);
      const ids = await repo.revokeOtherSessions(account.id, claims.sessionId, clock.now());
      for (const id of ids) sessionCache.set(id, null);
      deps.log.info({ accountId: account.id, revokedSessions: ids.length }, 'password changed');
      return { revokedSessions: ids.length };
    },

    async refresh(refreshToken: string) {
      const now = clock.now();
      const oldHash = sha256Hex(refreshToken);
      const next = REFRESH_PREFIX + randomToken(43);
      const expiresAt = new Date(now.getTime() + config.auth.refresh_token_ttl_days * 86400_000);
      const row = await repo.rotateRefresh(oldHash, sha256Hex(next), expiresAt, now);
      if (!row) {
        const revoked = await repo.revokeByPreviousRefresh(oldHash, now);
        for (const id of revoked) sessionCache.set(id, null);
        if (revoked.length)
          deps.log.warn({ sessions: revoked }, 'refresh token reused after rotation; session revoked');
        throw unauthorized('Refresh token is invalid, expired or already used');
      }
      return { ...(await accessToken(row.accountId, row.id)), refreshToken: next, sessionId: row.id };
    },

    async logout(claims: SessionClaims) {
      await repo.revokeSession(claims.sessionId, claims.accountId, clock.now());
      sessionCache.set(claims.sessionId, null);
    },

    listSessions: (accountId: string) => repo.listSessions(accountId, clock.now()),

    async revokeOtherSessions(accountId: string, currentSessionId: string | null) {
      if (!currentSessionId) {
        throw new AppError('NO_SESSION', 'The current session could not be determined; sign in with a session token');
      }
      const ids = await repo.revokeOtherSessions(accountId, currentSessionId, clock.now());
      for (const id of ids) sessionCache.set(id, null);
      return ids.length;
    },

    /** Verifies a session JWT and that its session is still live; null when not a valid token. */
    async verifyAccessToken(token: string): Promise<SessionClaims | null> {
      let sub: string | undefined;
      let sid: unknown;
      try {
        const { payload } = await jwtVerify(token, deps.signingSecret, {
          algorithms: ['HS256'],
          currentDate: clock.now(),
        });
        sub = payload.sub;
        sid = payload['sid'];
        if (payload['typ'] !== 'access') return null;
      } catch (err) {
        if (err instanceof joseErrors.JOSEError) return null;
        throw err;
      }
      if (typeof sid !== 'string' || !sub) return null;
      let live = sessionCache.get(sid);
      if (live === undefined) {
        live = (await repo.sessionActive(sid, clock.now())) ?? null;
        sessionCache.set(sid, live);
      }
      if (!live || live.accountId !== sub) return null;
      if (live.memberId && live.memberRole)
        return { accountId: sub, sessionId: sid, member: { id: live.memberId, role: live.memberRole } };
      return { accountId: sub, sessionId: sid };
    },

    /** Account by id, briefly cached for the authentication path (the cached promise itself: no wrapper per request). */
    accountForAuth(id: string): Promise<AccountRow | null> {
      return accountCache.get(id);
    },

    /** `accountForAuth` when the account is cached; undefined when it must be awaited. */
    accountForAuthNow(id: string): { value: AccountRow | null } | undefined {
      return accountCache.peek(id);
    },

    getAccount: (id: string) => repo.byId(id),

    /**
     * First start against an empty database: an admin (platform operator) account with a
     * one-time password. Returns the credentials to print once, or null when one exists.
     */
    async bootstrapOperator(email: string): Promise<{ account: AccountRow; password: string } | null> {
      if (await repo.anyAdmin()) return null;
      const password = randomToken(20);
      const passwordExpiresAt = new Date(clock.now().getTime() + config.auth.one_time_password_hours * 3600_000);
      const account = await service.createAccount({
        email,
        password,
        role: 'admin',
        mustChangePassword: true,
        passwordExpiresAt,
      });
      return { account, password };
    },
  };
  return service;
}

export type AccountsService = ReturnType<typeof createAccountsService>;
