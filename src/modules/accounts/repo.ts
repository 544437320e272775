import type { Db } from '../../db/connection.js';
import type { TeamRole } from '../../http/access.js';

export interface AccountRow {
  id: string;
  email: string | null;
  passwordHash: string | null;
  mustChangePassword: boolean;
  /** A one-time password's deadline; set to the moment of use when it signs in; null: no expiry. */
  passwordExpiresAt: Date | null;
  role: 'customer' | 'admin';
  parentId: string | null;
  status: 'draft' | 'active' | 'suspended' | 'closed';
  label: string | null;
  externalRef: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface SessionRow {
  id: string;
  accountId: string;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
  revokedAt: Date | null;
  userAgent: string | null;
  ip: string | null;
}

export interface ActiveSession {
  accountId: string;
  memberId: string | null;
  memberRole: TeamRole | null;
}

export function createAccountsRepo(db: Db) {
  return {
    async insertAccount(
      a: {
        id: string;
        email: string | null;
        passwordHash: string | null;
        role: 'customer' | 'admin';
        parentId?: string | null;
        label?: string | null;
        externalRef?: string | null;
        mustChangePassword?: boolean;
        passwordExpiresAt?: Date | null;
        status?: AccountRow['status'];
      },
      tx: Db = db,
    ): Promise<AccountRow> {
      const [row] = await tx<AccountRow[]>`
        insert into accounts (id, email, password_hash, role, parent_id, label, external_ref, must_change_password, password_expires_at, status)
        values (${a.id}, ${a.email}, ${a.passwordHash}, ${a.role}, ${a.parentId ?? null}, ${a.label ?? null},
                ${a.externalRef ?? null}, ${a.mustChangePassword ?? false}, ${a.passwordExpiresAt ?? null}, ${a.status ?? 'active'})
        returning *`;
      return row!;
    },
    async byEmail(email: string): Promise<AccountRow | undefined> {
      const [row] = await db<AccountRow[]>`select * from accounts where lower(email) = lower(${email})`;
      return row;
    },
    async byId(id: string, tx: Db = db): Promise<AccountRow | undefined> {
      const [row] = await tx<AccountRow[]>`select * from accounts where id = ${id}`;
      return row;
    },
    /** Suspends, resumes or closes an account (sub-account lifecycle); in the caller's transaction. */
    async setStatus(id: string, status: AccountRow['status'], now: Date, tx: Db = db): Promise<void> {
      await tx`update accounts set status = ${status}, updated_at = ${now} where id = ${id}`;
    },

    /**
     * Closes a deleted login for good, in the caller's transaction: the address is freed (replaced
     * by a placeholder), the password cleared, and every session on it or of it ends. Answers the
     * ended sessions.
     */
    async closeLogin(id: string, now: Date, tx: Db): Promise<string[]> {
      await tx`
        update accounts set status = 'closed', email = ${`deleted+${id}@invalid`}, password_hash = null, updated_at = ${now}
        where id = ${id}`;
      const rows = await tx<{ id: string }[]>`
        update sessions set revoked_at = ${now}
        where (account_id = ${id} or member_id = ${id}) and revoked_at is null returning id`;
      return rows.map((r) => r.id);
    },

    async anyAdmin(): Promise<boolean> {
      const [row] = await db<{ n: string }[]>`select count(*) as n from accounts where role = 'admin'`;
      return Number(row!.n) > 0;
    },
    async setPassword(id: string, hash: string): Promise<void> {
      await db`update accounts set password_hash = ${hash}, must_change_password = false, password_expires_at = null, updated_at = now() where id = ${id}`;
    },
    /** Uses up a one-time password: true for the one sign-in that found it unused and unexpired. */
    async useOneTimePassword(id: string, now: Date): Promise<boolean> {
      const rows =
        await db`update accounts set password_expires_at = ${now} where id = ${id} and password_expires_at > ${now} returning id`;
      return rows.length === 1;
    },
    async insertSession(s: {
      id: string;
      accountId: string;
      refreshHash: string;
      expiresAt: Date;
      userAgent: string | null;
      ip: string | null;
      /** A membership session: the login acting on `accountId` (a team member). */
      memberId?: string | null;
    }) {
      await db`
        insert into sessions (id, account_id, refresh_hash, expires_at, user_agent, ip, member_id)
        values (${s.id}, ${s.accountId}, ${s.refreshHash}, ${s.expiresAt}, ${s.userAgent}, ${s.ip}, ${s.memberId ?? null})`;
    },
    /** Swaps the refresh token atomically; returns nothing when it was already used or revoked. */
    async rotateRefresh(oldHash: string, newHash: string, expiresAt: Date, now: Date) {
      const [row] = await db<{ id: string; accountId: string }[]>`
        update sessions set refresh_hash = ${newHash}, previous_refresh_hash = ${oldHash},
               expires_at = ${expiresAt}, last_seen_at = ${now}
        where refresh_hash = ${oldHash} and revoked_at is null and expires_at > ${now}
        returning id, account_id`;
      return row;
    },
    /** A refresh token presented again after rotation has leaked: the whole session ends. */
    async revokeByPreviousRefresh(hash: string, now: Date): Promise<string[]> {
      const rows = await db<
        { id: string }[]
      >`update sessions set revoked_at = ${now} where previous_refresh_hash = ${hash} and revoked_at is null returning id`;
      return rows.map((r) => r.id);
    },
    /**
     * A live session; a membership session also needs its membership and an open member login,
     * and answers the member's current role.
     */
    async sessionActive(id: string, now: Date): Promise<ActiveSession | undefined> {
      const [row] = await db<ActiveSession[]>`
        select s.account_id, s.member_id, m.role as member_role
        from sessions s join accounts a on a.id = s.account_id
        left join account_members m on m.account_id = s.account_id and m.member_id = s.member_id
        left join accounts ml on ml.id = s.member_id
        where s.id = ${id} and s.revoked_at is null and s.expires_at > ${now} and a.status <> 'closed'
          and (s.member_id is null or (m.role is not null and ml.status <> 'closed'))`;
      return row;
    },
    async revokeSession(id: string, accountId: string, now: Date): Promise<void> {
      await db`update sessions set revoked_at = ${now} where id = ${id} and account_id = ${accountId} and revoked_at is null`;
    },
    async revokeOtherSessions(accountId: string, keep: string, now: Date): Promise<string[]> {
      const rows = await db<{ id: string }[]>`
        update sessions set revoked_at = ${now}
        where account_id = ${accountId} and id <> ${keep} and revoked_at is null and member_id is null
        returning id`;
      return rows.map((r) => r.id);
    },
    async listSessions(accountId: string, now: Date): Promise<SessionRow[]> {
      return db<SessionRow[]>`
        select id, account_id, created_at, last_seen_at, expires_at, revoked_at, user_agent, ip from sessions
        where account_id = ${accountId} and revoked_at is null and expires_at > ${now} and member_id is null
        order by created_at desc limit 100`;
    },
  };
}

export type AccountsRepo = ReturnType<typeof createAccountsRepo>;
