import type { Db, Sql } from '../../db/connection.js';
import type { TeamRole } from '../../http/access.js';
import { conflict, validationError } from '../../http/errors.js';

export interface MemberRow {
  accountId: string;
  email: string | null;
  role: TeamRole;
  joinedAt: Date;
  lastLoginAt: Date | null;
}

export interface InvitationRow {
  id: string;
  accountId: string;
  email: string;
  role: TeamRole;
  invitedBy: string;
  createdAt: Date;
  expiresAt: Date;
  sentAt: Date;
  sentCount: number;
}

export function createTeamRepo(sql: Sql) {
  const invitationColumns = () =>
    sql`id, account_id, email, role, invited_by, created_at, expires_at, sent_at, sent_count`;
  const repo = {
    sql,

    /** The members of `accountId` (not its holder), with each login's last successful sign-in. */
    async members(accountId: string, memberId?: string): Promise<MemberRow[]> {
      return sql<MemberRow[]>`
        select m.member_id as account_id, a.email, m.role, m.joined_at,
               (select max(e.created_at) from login_events e
                where e.account_id = m.member_id and e.outcome = 'success') as last_login_at
        from account_members m join accounts a on a.id = m.member_id
        where m.account_id = ${accountId} ${memberId ? sql`and m.member_id = ${memberId}` : sql``}
        order by m.joined_at, m.member_id`;
    },

    async lastLogin(loginId: string): Promise<Date | null> {
      const [r] = await sql<{ at: Date | null }[]>`
        select max(created_at) as at from login_events where account_id = ${loginId} and outcome = 'success'`;
      return r?.at ?? null;
    },

    /**
     * Runs `fn` in one transaction; the one open invitation per address (`account_invitations_open`)
     * is a CONFLICT.
     */
    async transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T> {
      try {
        return (await sql.begin(fn)) as T;
      } catch (err) {
        const e = err as { code?: string; constraint_name?: string };
        if (e.code === '23505' && e.constraint_name === 'account_invitations_open')
          throw conflict('This address already has an open invitation; resend or revoke it');
        throw err;
      }
    },

    async setRole(db: Db, accountId: string, memberId: string, role: TeamRole): Promise<string[]> {
      await db`update account_members set role = ${role} where account_id = ${accountId} and member_id = ${memberId}`;
      const rows = await db<{ id: string }[]>`
        select id from sessions where account_id = ${accountId} and member_id = ${memberId} and revoked_at is null`;
      return rows.map((r) => r.id);
    },

    /** Removes the membership and ends its sessions (pass a transaction); answers the ended sessions. */
    async remove(db: Db, accountId: string, memberId: string, now: Date): Promise<string[]> {
      await db`delete from account_members where account_id = ${accountId} and member_id = ${memberId}`;
      return repo.endSessions(db, accountId, [memberId], now);
    },

    /** Ends the live sessions of these member logins on the account; answers their ids. */
    async endSessions(db: Db, accountId: string, memberIds: readonly string[], now: Date): Promise<string[]> {
      const rows = await db<{ id: string }[]>`
        update sessions set revoked_at = ${now}
        where account_id = ${accountId} and member_id = any (${memberIds as string[]}::uuid[]) and revoked_at is null
        returning id`;
      return rows.map((r) => r.id);
    },

    /** Members plus open, unexpired invitations: what the team size limit counts. */
    async seats(accountId: string, now: Date): Promise<number> {
      const [r] = await sql<{ n: number }[]>`
        select (select count(*) from account_members where account_id = ${accountId})::int
             + (select count(*) from account_invitations where account_id = ${accountId}
                and accepted_at is null and revoked_at is null and expires_at > ${now})::int as n`;
      return r!.n;
    },

    async isMemberEmail(accountId: string, email: string): Promise<boolean> {
      const [r] = await sql`
        select 1 from account_members m join accounts a on a.id = m.member_id
        where m.account_id = ${accountId} and lower(a.email) = lower(${email})`;
      return r !== undefined;
    },

    /** Inserts an invitation after retiring an expired open one to the same address (pass a transaction). */
    async insertInvitation(db: Db, i: InvitationRow & { tokenHash: string }): Promise<void> {
      await db`
        update account_invitations set revoked_at = ${i.createdAt}
        where account_id = ${i.accountId} and lower(email) = lower(${i.email})
          and accepted_at is null and revoked_at is null and expires_at <= ${i.createdAt}`;
      await db`
        insert into account_invitations
          (id, account_id, email, role, token_hash, invited_by, created_at, expires_at, sent_at)
        values (${i.id}, ${i.accountId}, ${i.email}, ${i.role}, ${i.tokenHash}, ${i.invitedBy},
                ${i.createdAt}, ${i.expiresAt}, ${i.sentAt})`;
    },

    /** Open invitations (not accepted or revoked), expired ones included so they can be resent. */
    async invitations(accountId: string, id?: string): Promise<InvitationRow[]> {
      return sql<InvitationRow[]>`
        select ${invitationColumns()} from account_invitations
        where account_id = ${accountId} and accepted_at is null and revoked_at is null
          ${id ? sql`and id = ${id}` : sql``}
        order by created_at desc, id`;
    },

    /** A new token and deadline for an open invitation. */
    async renew(db: Db, accountId: string, id: string, tokenHash: string, now: Date, expiresAt: Date) {
      const [row] = await db<InvitationRow[]>`
        update account_invitations
        set token_hash = ${tokenHash}, expires_at = ${expiresAt}, sent_at = ${now}, sent_count = sent_count + 1
        where account_id = ${accountId} and id = ${id} and accepted_at is null and revoked_at is null
        returning ${invitationColumns()}`;
      return row;
    },

    async revoke(db: Db, accountId: string, id: string, now: Date): Promise<boolean> {
      const rows = await db`
        update account_invitations set revoked_at = ${now}
        where account_id = ${accountId} and id = ${id} and accepted_at is null and revoked_at is null returning id`;
      return rows.length > 0;
    },

    async openByToken(tokenHash: string, now: Date): Promise<InvitationRow | undefined> {
      const [row] = await sql<InvitationRow[]>`
        select ${invitationColumns()} from account_invitations
        where token_hash = ${tokenHash} and accepted_at is null and revoked_at is null and expires_at > ${now}`;
      return row;
    },

    /**
     * Uses the invitation once and makes the membership (pass a transaction); false when another
     * request used or revoked it first. CONFLICT when the login is already a member.
     */
    async accept(db: Db, inv: InvitationRow, memberId: string, now: Date): Promise<boolean> {
      const used = await db`
        update account_invitations set accepted_at = ${now}, accepted_by = ${memberId}
        where id = ${inv.id} and accepted_at is null and revoked_at is null and expires_at > ${now} returning id`;
      if (!used.length) return false;
      const made = await db`
        insert into account_members (account_id, member_id, role, invited_by, joined_at)
        values (${inv.accountId}, ${memberId}, ${inv.role}, ${inv.invitedBy}, ${now})
        on conflict do nothing returning member_id`;
      if (!made.length) throw conflict('This login is already a member of the account');
      return true;
    },

    async securitySettings(accountId: string, db: Db = sql) {
      const [row] = await db<{ requireTwoFactor: boolean; allowedLoginCidrs: string[]; updatedAt: Date }[]>`
        select require_two_factor, allowed_login_cidrs::text[] as allowed_login_cidrs, updated_at
        from account_team_security where account_id = ${accountId}`;
      return row ?? { requireTwoFactor: false, allowedLoginCidrs: [], updatedAt: null };
    },

    /** CIDRs are checked (and normalised) by PostgreSQL: 22P02 is a bad one. */
    async saveSecuritySettings(db: Db, accountId: string, requireTwoFactor: boolean, cidrs: string[], now: Date) {
      try {
        await db`
          insert into account_team_security (account_id, require_two_factor, allowed_login_cidrs, updated_at)
          values (${accountId}, ${requireTwoFactor}, ${cidrs}::text[]::cidr[], ${now})
          on conflict (account_id) do update set require_two_factor = excluded.require_two_factor,
            allowed_login_cidrs = excluded.allowed_login_cidrs, updated_at = excluded.updated_at`;
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code === '22P02' || code === '22023')
          throw validationError([{ path: 'allowedLoginCidrs', message: 'holds a network that is not a CIDR' }]);
        throw err;
      }
    },

    /** A deleted account leaves every team, and its own team and open invitations end (pass a transaction). */
    async endMembershipsOf(db: Db, accountId: string, now: Date): Promise<number> {
      const gone = await db`
        delete from account_members where account_id = ${accountId} or member_id = ${accountId} returning 1`;
      await db`
        update account_invitations set revoked_at = ${now}
        where account_id = ${accountId} and accepted_at is null and revoked_at is null`;
      return gone.length;
    },

    /** The accounts a login is a member of. */
    async teamsOf(memberId: string) {
      return sql<{ accountId: string; email: string | null; role: TeamRole; joinedAt: Date }[]>`
        select m.account_id, a.email, m.role, m.joined_at
        from account_members m join accounts a on a.id = m.account_id
        where m.member_id = ${memberId} and a.status <> 'closed'
        order by m.joined_at, m.account_id`;
    },
  };
  return repo;
}

export type TeamRepo = ReturnType<typeof createTeamRepo>;
