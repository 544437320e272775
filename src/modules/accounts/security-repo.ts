import type { Db } from '../../db/connection.js';

export type TokenPurpose = 'verify_email' | 'password_reset';
export type LoginOutcome = 'success' | 'failure' | 'second_factor_required' | 'second_factor_failed' | 'password_reset';
export type LoginMethod = 'password' | 'totp' | 'recovery_code' | 'reset_token' | 'membership';

export interface TotpRow {
  accountId: string;
  secretSealed: string;
  enabledAt: Date | null;
  lastStep: string;
  createdAt: Date;
}

export interface LoginEventRow {
  id: string;
  outcome: LoginOutcome;
  method: LoginMethod;
  sessionId: string | null;
  ip: string | null;
  userAgent: string | null;
  createdAt: Date;
}

/** E-mailed tokens, TOTP enrolments, recovery codes, sign-in challenges and the login history. */
export function createSecurityRepo(db: Db) {
  return {
    async insertToken(
      t: {
        id: string;
        accountId: string;
        purpose: TokenPurpose;
        tokenHash: string;
        email: string;
        now: Date;
        expiresAt: Date;
      },
      tx: Db = db,
    ) {
      // A new link replaces the account's earlier unused ones of the same purpose.
      await tx`update auth_tokens set used_at = ${t.now} where account_id = ${t.accountId} and purpose = ${t.purpose} and used_at is null`;
      await tx`
        insert into auth_tokens (id, account_id, purpose, token_hash, email, created_at, expires_at)
        values (${t.id}, ${t.accountId}, ${t.purpose}, ${t.tokenHash}, ${t.email}, ${t.now}, ${t.expiresAt})`;
    },
    /** Uses a token once: the row for the one caller that found it unused and unexpired. */
    async useToken(purpose: TokenPurpose, tokenHash: string, now: Date, tx: Db = db) {
      const [row] = await tx<{ accountId: string; email: string }[]>`
        update auth_tokens set used_at = ${now}
        where token_hash = ${tokenHash} and purpose = ${purpose} and used_at is null and expires_at > ${now}
        returning account_id, email`;
      return row;
    },
    /** Marks the address verified only while it is still the account's address. */
    async markEmailVerified(accountId: string, email: string, now: Date, tx: Db = db): Promise<boolean> {
      const rows = await tx`
        update accounts set email_verified_at = coalesce(email_verified_at, ${now}), updated_at = ${now}
        where id = ${accountId} and lower(email) = lower(${email}) returning id`;
      return rows.length === 1;
    },
    async emailVerifiedAt(accountId: string): Promise<Date | null> {
      const [row] = await db<
        { emailVerifiedAt: Date | null }[]
      >`select email_verified_at from accounts where id = ${accountId}`;
      return row?.emailVerifiedAt ?? null;
    },
    async setPasswordHash(accountId: string, hash: string, now: Date, tx: Db = db) {
      await tx`update accounts set password_hash = ${hash}, must_change_password = false, password_expires_at = null, updated_at = ${now} where id = ${accountId}`;
    },
    async revokeAllSessions(accountId: string, now: Date, tx: Db = db): Promise<string[]> {
      const rows = await tx<{ id: string }[]>`
        update sessions set revoked_at = ${now} where account_id = ${accountId} and revoked_at is null returning id`;
      return rows.map((r) => r.id);
    },
    /** Revokes one live session of the account; false when there is none with that id. */
    async revokeSession(accountId: string, sessionId: string, now: Date): Promise<boolean> {
      const rows = await db`
        update sessions set revoked_at = ${now}
        where id = ${sessionId} and account_id = ${accountId} and revoked_at is null and expires_at > ${now} returning id`;
      return rows.length === 1;
    },

    async totp(accountId: string, tx: Db = db): Promise<TotpRow | undefined> {
      const [row] = await tx<TotpRow[]>`select * from account_totp where account_id = ${accountId}`;
      return row;
    },
    async totpEnabled(accountId: string): Promise<boolean> {
      const [row] = await db`select 1 from account_totp where account_id = ${accountId} and enabled_at is not null`;
      return row !== undefined;
    },
    /** A fresh, unconfirmed enrolment; refused (no row) while two-factor sign-in is on. */
    async startTotp(accountId: string, secretSealed: string, now: Date): Promise<boolean> {
      const rows = await db`
        insert into account_totp (account_id, secret_sealed, created_at) values (${accountId}, ${secretSealed}, ${now})
        on conflict (account_id) do update set secret_sealed = excluded.secret_sealed, created_at = excluded.created_at, last_step = 0
        where account_totp.enabled_at is null
        returning account_id`;
      return rows.length === 1;
    },
    /** Records the step a code was accepted for; false when that step (or a later one) was used already. */
    async useTotpStep(accountId: string, step: number, tx: Db = db): Promise<boolean> {
      const rows =
        await tx`update account_totp set last_step = ${step} where account_id = ${accountId} and last_step < ${step} returning account_id`;
      return rows.length === 1;
    },
    async enableTotp(accountId: string, now: Date, tx: Db = db) {
      await tx`update account_totp set enabled_at = ${now} where account_id = ${accountId}`;
    },
    async deleteTotp(accountId: string, tx: Db = db) {
      await tx`delete from account_totp where account_id = ${accountId}`;
      await tx`delete from totp_recovery_codes where account_id = ${accountId}`;
    },
    async replaceRecoveryCodes(accountId: string, rows: { id: string; codeHash: string }[], now: Date, tx: Db = db) {
      await tx`delete from totp_recovery_codes where account_id = ${accountId}`;
      const values = rows.map((r) => ({ id: r.id, account_id: accountId, code_hash: r.codeHash, created_at: now }));
      await tx`insert into totp_recovery_codes ${tx(values, 'id', 'account_id', 'code_hash', 'created_at')}`;
    },
    async useRecoveryCode(accountId: string, codeHash: string, now: Date, tx: Db = db): Promise<boolean> {
      const rows = await tx`
        update totp_recovery_codes set used_at = ${now}
        where id = (select id from totp_recovery_codes where account_id = ${accountId} and code_hash = ${codeHash} and used_at is null limit 1)
        returning id`;
      return rows.length === 1;
    },
    async recoveryCodesLeft(accountId: string): Promise<number> {
      const [row] = await db<
        { n: string }[]
      >`select count(*) as n from totp_recovery_codes where account_id = ${accountId} and used_at is null`;
      return Number(row!.n);
    },

    async insertChallenge(c: {
      id: string;
      accountId: string;
      tokenHash: string;
      now: Date;
      expiresAt: Date;
      userAgent: string | null;
      ip: string | null;
    }) {
      await db`
        insert into login_challenges (id, account_id, token_hash, created_at, expires_at, user_agent, ip)
        values (${c.id}, ${c.accountId}, ${c.tokenHash}, ${c.now}, ${c.expiresAt}, ${c.userAgent}, ${c.ip})`;
    },
    /** Counts an attempt on a live challenge; the row only while attempts remain. */
    async attemptChallenge(tokenHash: string, now: Date, maxAttempts: number) {
      const [row] = await db<{ id: string; accountId: string; userAgent: string | null; ip: string | null }[]>`
        update login_challenges set attempts = attempts + 1
        where token_hash = ${tokenHash} and used_at is null and expires_at > ${now} and attempts < ${maxAttempts}
        returning id, account_id, user_agent, ip`;
      return row;
    },
    async closeChallenge(id: string, now: Date, tx: Db = db): Promise<boolean> {
      const rows =
        await tx`update login_challenges set used_at = ${now} where id = ${id} and used_at is null returning id`;
      return rows.length === 1;
    },

    async recordLogin(
      e: {
        id: string;
        accountId: string;
        outcome: LoginOutcome;
        method: LoginMethod;
        sessionId?: string | null;
        ip?: string | null;
        userAgent?: string | null;
        now: Date;
      },
      tx: Db = db,
    ) {
      await tx`
        insert into login_events (id, account_id, outcome, method, session_id, ip, user_agent, created_at)
        values (${e.id}, ${e.accountId}, ${e.outcome}, ${e.method}, ${e.sessionId ?? null}, ${e.ip ?? null},
                ${e.userAgent?.slice(0, 300) ?? null}, ${e.now})`;
    },
    async loginHistory(
      accountId: string,
      q: { cursor?: string | undefined; limit: number; outcome?: LoginOutcome | undefined },
    ) {
      return db<LoginEventRow[]>`
        select id, outcome, method, session_id, ip, user_agent, created_at from login_events
        where account_id = ${accountId}
          ${q.cursor ? db`and id < ${q.cursor}` : db``}
          ${q.outcome ? db`and outcome = ${q.outcome}` : db``}
        order by id desc limit ${q.limit + 1}`;
    },
  };
}

export type SecurityRepo = ReturnType<typeof createSecurityRepo>;
