import type { Redis } from 'ioredis';
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Sql } from '../../db/connection.js';
import { AppError, conflict, unauthorized, validationError } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { newId, randomToken, sha256Hex } from '../../platform/ids.js';
import { createTtlCache } from '../../platform/ttl-cache.js';
import { createLoginGuard } from './login-guard.js';
import { burnPasswordTime, hashPassword, verifyPassword } from './passwords.js';
import { createAccountsRepo, type AccountRow } from './repo.js';

export interface SessionTokens {
  accessToken: string;
  refreshToken: string;
  expiresAt: string;
  sessionId: string;
}

export interface SessionClaims {
  accountId: string;
  sessionId: string;
}

const REFRESH_PREFIX = 'svc_rt_';

export function createAccountsService(deps: {
  sql: Sql;
  config: Readonly<Config>;
  clock: Clock;
  log: Logger;
  signingSecret: Uint8Array;
  /** Where login failures are counted so every daemon sees them; null: in process. */
  redis?: Redis | null;
}) {
  const { sql, config, clock } = deps;
  const repo = createAccountsRepo(sql);
  const guard = createLoginGuard(deps.redis ?? null, config.auth);
  const sessionCache = createTtlCache<string, { accountId: string } | null>(
    config.auth.credential_cache_seconds * 1000,
    clock,
  );
  const accountCache = createTtlCache<string, AccountRow | null>(config.auth.credential_cache_seconds * 1000, clock);

  async function issueSession(
    accountId: string,
    meta: { userAgent?: string | undefined; ip?: string | undefined },
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
        await burnPasswordTime(password);
        return;
      }
      try {
        await service.createAccount({ email, password });
      } catch (err) {
        // Registered by a concurrent request meanwhile: the same neutral answer.
        if (err instanceof AppError && err.code === 'CONFLICT') return;
        throw err;
      }
    },

    async login(email: string, password: string, meta: { userAgent?: string; ip?: string }) {
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
        throw unauthorized('Invalid e-mail or password');
      }
      await guard.succeeded(email);
      return issueSession(account.id, meta);
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
      await repo.setPassword(account.id, await hashPassword(next));
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
      return { accountId: sub, sessionId: sid };
    },

    /** Account by id, briefly cached for the authentication path. */
    async accountForAuth(id: string): Promise<AccountRow | null> {
      let a = accountCache.get(id);
      if (a === undefined) {
        a = (await repo.byId(id)) ?? null;
        accountCache.set(id, a);
      }
      return a;
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
