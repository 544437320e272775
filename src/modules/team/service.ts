import type { Db } from '../../db/connection.js';
import { RoleScopes, type Principal, type TeamRole } from '../../http/access.js';
import { conflict, forbidden, notFound, ruleError, validationError } from '../../http/errors.js';
import type { CoreDeps } from '../../platform/core.js';
import { newId, randomToken, sha256Hex } from '../../platform/ids.js';
import type { Mailer } from '../../platform/mailer.js';
import { emit } from '../../webhooks/emit.js';
import type { EventName } from '../../webhooks/events.js';
import { writeAuditEntry } from '../account-profile/audit.js';
import type { AccountsService } from '../accounts/service.js';
import { createTeamRepo, type InvitationRow, type MemberRow } from './repo.js';
import { createMemberSessionRules } from './session-rules.js';

const TOKEN_PREFIX = 'svc_inv_';

/** Who acts: the account holder's session, or a member's (owner or admin, the routes admit no other). */
type Actor = Pick<Principal, 'accountId' | 'member'> & { ip?: string | undefined };
type Meta = { userAgent?: string | undefined; ip?: string | undefined };

const lower = (s: string | null) => s?.toLowerCase() ?? null;

/** Team members, invitations and member sessions (docs/account.md "Team members and roles"). */
export function createTeamService(
  deps: Pick<CoreDeps, 'sql' | 'config' | 'clock' | 'log'> & { mailer: Mailer; accounts: AccountsService },
) {
  const { clock, config, accounts, mailer, log } = deps;
  const repo = createTeamRepo(deps.sql);
  const rules = createMemberSessionRules({ ...deps, repo });

  /**
   * What every team change leaves behind, in the change's own transaction: an entry in the
   * account's audit log (`changes` names the member or invitation and what moved) and the event
   * its webhooks and notification feed receive.
   */
  async function record(
    tx: Db,
    accountId: string,
    by: { loginId: string; ip: string | undefined },
    event: EventName,
    changes: Record<string, unknown>,
    data: Record<string, unknown>,
  ) {
    const at = clock.now();
    await writeAuditEntry(tx, {
      accountId,
      actor: { actorId: by.loginId, credential: 'session', ip: by.ip ?? null },
      action: event,
      changes,
      at,
    });
    await emit(tx, { accountId, event, data: { ...data, actorId: by.loginId }, at });
  }
  const by = (actor: Actor) => ({ loginId: actor.member?.id ?? actor.accountId, ip: actor.ip });

  const memberView = (m: MemberRow, holder = false) => ({
    accountId: m.accountId,
    email: m.email,
    role: m.role,
    holder,
    joinedAt: m.joinedAt.toISOString(),
    lastLoginAt: m.lastLoginAt?.toISOString() ?? null,
  });
  const invitationView = (i: InvitationRow) => ({
    id: i.id,
    email: i.email,
    role: i.role,
    invitedBy: i.invitedBy,
    createdAt: i.createdAt.toISOString(),
    expiresAt: i.expiresAt.toISOString(),
    expired: i.expiresAt <= clock.now(),
    sentCount: i.sentCount,
  });

  /** Owners are managed by owners: an admin may not grant the role, nor change or remove an owner. */
  function mayManage(actor: Actor, role: TeamRole) {
    if (role === 'owner' && actor.member && actor.member.role !== 'owner')
      throw forbidden('Only an owner can grant the owner role or change an owner');
  }

  async function member(accountId: string, memberId: string) {
    const [m] = await repo.members(accountId, memberId);
    if (!m) throw notFound('Member');
    return m;
  }

  function newToken(now: Date) {
    const token = TOKEN_PREFIX + randomToken(43);
    return {
      token,
      tokenHash: sha256Hex(token),
      expiresAt: new Date(now.getTime() + config.team.invitation_ttl_hours * 3600_000),
    };
  }

  async function sendInvitation(inv: InvitationRow, token: string) {
    const holder = await accounts.getAccount(inv.accountId);
    const team = holder?.label ?? holder?.email ?? inv.accountId;
    await mailer.send({
      to: inv.email,
      subject: `You are invited to the svc-exchange account ${team}`,
      text:
        `You are invited to join the svc-exchange account ${team} with the role "${inv.role}".\n\n` +
        `${mailer.link(`/accept-invitation?token=${token}`)}\n\n` +
        `Or send this token to POST /api/v1/account/invitations/accept: ${token}\n\n` +
        `The invitation works once, until ${inv.expiresAt.toISOString()}. If you did not expect it, ignore this e-mail.\n`,
    });
    log.info({ accountId: inv.accountId, invitationId: inv.id, sentCount: inv.sentCount }, 'team invitation sent');
  }

  /** A member session, within the team's security settings. */
  async function memberSession(accountId: string, loginId: string, meta: Meta) {
    await rules.admit(accountId, loginId, meta.ip);
    return accounts.issueMemberSession(accountId, loginId, meta);
  }

  const service = {
    /** The holder (always an owner) first, then the members. */
    async members(accountId: string) {
      const holder = await accounts.getAccount(accountId);
      if (!holder) throw notFound('Account');
      const rows = await repo.members(accountId);
      const lastLoginAt = await repo.lastLogin(accountId);
      return [
        memberView({ accountId, email: holder.email, role: 'owner', joinedAt: holder.createdAt, lastLoginAt }, true),
        ...rows.map((m) => memberView(m)),
      ];
    },

    async member(accountId: string, memberId: string) {
      if (memberId === accountId) return (await service.members(accountId))[0]!;
      return memberView(await member(accountId, memberId));
    },

    async changeRole(actor: Actor, memberId: string, role: TeamRole) {
      if (memberId === actor.accountId) throw conflict('The account holder is always an owner');
      const m = await member(actor.accountId, memberId);
      mayManage(actor, m.role);
      mayManage(actor, role);
      if (actor.member?.id === memberId) throw conflict('A member cannot change its own role');
      const sessions = await repo.transaction(async (tx) => {
        const ids = await repo.setRole(tx, actor.accountId, memberId, role);
        const data = { memberId, email: m.email, role, previousRole: m.role };
        await record(
          tx,
          actor.accountId,
          by(actor),
          'team.member_role_changed',
          { member: { accountId: memberId, email: m.email }, role: { from: m.role, to: role } },
          data,
        );
        return ids;
      });
      // The new role applies from the next request of the member's live sessions.
      accounts.refreshSessions(sessions);
      return memberView({ ...m, role });
    },

    async remove(actor: Actor, memberId: string) {
      if (memberId === actor.accountId) throw conflict('The account holder is an owner that cannot be removed');
      const m = await member(actor.accountId, memberId);
      mayManage(actor, m.role);
      const ended = await repo.transaction(async (tx) => {
        const ids = await repo.remove(tx, actor.accountId, memberId, clock.now());
        await record(
          tx,
          actor.accountId,
          by(actor),
          'team.member_removed',
          { member: { from: { accountId: memberId, email: m.email, role: m.role }, to: null } },
          { memberId, email: m.email, role: m.role, endedSessions: ids.length },
        );
        return ids;
      });
      accounts.forget(actor.accountId, ended);
      return { removed: true, endedSessions: ended.length };
    },

    async invite(actor: Actor, email: string, role: TeamRole) {
      mayManage(actor, role);
      const holder = await accounts.getAccount(actor.accountId);
      if (!holder) throw notFound('Account');
      if (holder.parentId !== null) throw ruleError('Sub-accounts have no team; invite members to the parent account');
      if (lower(holder.email) === email.toLowerCase()) throw conflict('This address is the account holder');
      if (await repo.isMemberEmail(actor.accountId, email)) throw conflict('This address is already a member');
      const now = clock.now();
      if ((await repo.seats(actor.accountId, now)) >= config.team.max_members)
        throw ruleError(`An account has at most ${config.team.max_members} members and open invitations`);
      const { token, tokenHash, expiresAt } = newToken(now);
      const inv: InvitationRow = {
        id: newId(),
        accountId: actor.accountId,
        email,
        role,
        invitedBy: actor.member?.id ?? actor.accountId,
        createdAt: now,
        expiresAt,
        sentAt: now,
        sentCount: 1,
      };
      await repo.transaction(async (tx) => {
        await repo.insertInvitation(tx, { ...inv, tokenHash });
        await record(
          tx,
          actor.accountId,
          by(actor),
          'team.invitation_sent',
          { invitation: { from: null, to: { id: inv.id, email, role } } },
          { invitationId: inv.id, email, role, expiresAt: expiresAt.toISOString(), sentCount: 1 },
        );
      });
      await sendInvitation(inv, token);
      return invitationView(inv);
    },

    invitations: async (accountId: string) => (await repo.invitations(accountId)).map(invitationView),

    /** A new link (the old one stops working) with a new deadline. */
    async resend(actor: Actor, id: string) {
      const [open] = await repo.invitations(actor.accountId, id);
      if (!open) throw notFound('Invitation');
      mayManage(actor, open.role);
      const now = clock.now();
      const { token, tokenHash, expiresAt } = newToken(now);
      const inv = await repo.transaction(async (tx) => {
        const renewed = await repo.renew(tx, actor.accountId, id, tokenHash, now, expiresAt);
        if (!renewed) throw notFound('Invitation');
        await record(
          tx,
          actor.accountId,
          by(actor),
          'team.invitation_sent',
          {
            invitation: { id, email: renewed.email, role: renewed.role },
            expiresAt: { from: open.expiresAt.toISOString(), to: expiresAt.toISOString() },
          },
          {
            invitationId: id,
            email: renewed.email,
            role: renewed.role,
            expiresAt: expiresAt.toISOString(),
            sentCount: renewed.sentCount,
          },
        );
        return renewed;
      });
      await sendInvitation(inv, token);
      return invitationView(inv);
    },

    async revoke(actor: Actor, id: string) {
      const [open] = await repo.invitations(actor.accountId, id);
      if (!open) throw notFound('Invitation');
      mayManage(actor, open.role);
      await repo.transaction(async (tx) => {
        if (!(await repo.revoke(tx, actor.accountId, id, clock.now()))) throw notFound('Invitation');
        // Audit only: nobody outside the team waits for a withdrawn invitation.
        await writeAuditEntry(tx, {
          accountId: actor.accountId,
          actor: { actorId: by(actor).loginId, credential: 'session', ip: actor.ip ?? null },
          action: 'team.invitation_revoked',
          changes: { invitation: { from: { id, email: open.email, role: open.role }, to: null } },
          at: clock.now(),
        });
      });
      return { revoked: true };
    },

    /**
     * Accepts an invitation: a new address gets a login with `password`; an address that has a
     * login accepts from that login's own session. Answers a session of the membership.
     */
    async accept(token: string, password: string | undefined, signedIn: Principal | null, meta: Meta) {
      const inv = await repo.openByToken(sha256Hex(token), clock.now());
      if (!inv) throw validationError([{ path: 'token', message: 'is invalid, expired, revoked or already used' }]);
      let loginId: string;
      if (signedIn && signedIn.kind === 'session' && !signedIn.member) {
        const login = await accounts.getAccount(signedIn.accountId);
        if (lower(login?.email ?? null) !== inv.email.toLowerCase())
          throw forbidden('This invitation is for another e-mail address');
        loginId = signedIn.accountId;
      } else {
        const existing = await accounts.repo.byEmail(inv.email);
        if (existing) throw conflict('This address has a login: sign in and accept with its session');
        if (!password)
          throw validationError([{ path: 'password', message: 'is required to create the login of a new address' }]);
        loginId = (await accounts.createAccount({ email: inv.email, password })).id;
      }
      if (loginId === inv.accountId) throw conflict('The account holder is already its owner');
      const joined = await repo.transaction(async (tx) => {
        if (!(await repo.accept(tx, inv, loginId, clock.now()))) return false;
        await record(
          tx,
          inv.accountId,
          { loginId, ip: meta.ip },
          'team.member_joined',
          { member: { from: null, to: { accountId: loginId, email: inv.email, role: inv.role } } },
          { memberId: loginId, email: inv.email, role: inv.role, invitationId: inv.id },
        );
        return true;
      });
      if (!joined) throw validationError([{ path: 'token', message: 'is invalid, expired, revoked or already used' }]);
      log.info({ accountId: inv.accountId, memberId: loginId, invitationId: inv.id }, 'team invitation accepted');
      const session = await memberSession(inv.accountId, loginId, meta);
      return { accountId: inv.accountId, memberId: loginId, role: inv.role, ...session };
    },

    /** The accounts the signed-in login is a member of. */
    async teams(loginId: string) {
      return (await repo.teamsOf(loginId)).map((t) => ({
        accountId: t.accountId,
        email: t.email,
        role: t.role,
        joinedAt: t.joinedAt.toISOString(),
      }));
    },

    /** A session of the login on a team account it is a member of. */
    async switchTo(loginId: string, accountId: string, meta: Meta) {
      const team = (await repo.teamsOf(loginId)).find((t) => t.accountId === accountId);
      if (!team) throw notFound('Team');
      const session = await memberSession(accountId, loginId, meta);
      return { accountId, memberId: loginId, role: team.role, ...session };
    },

    async security(accountId: string) {
      const s = await repo.securitySettings(accountId);
      return { ...s, updatedAt: s.updatedAt?.toISOString() ?? null };
    },

    /**
     * Saves the settings, written to the audit log. Turning `requireTwoFactor` on ends at once the
     * sessions of members without two-factor sign-in; the networks apply from each session's next
     * request (`sessionRules.check`).
     */
    async setSecurity(actor: Actor, input: { requireTwoFactor: boolean; allowedLoginCidrs: string[] }) {
      const { accountId } = actor;
      const before = await repo.securitySettings(accountId);
      const lacking = input.requireTwoFactor
        ? await rules.withoutTwoFactor((await repo.members(accountId)).map((m) => m.accountId))
        : [];
      const now = clock.now();
      const ended = await repo.transaction(async (tx) => {
        await repo.saveSecuritySettings(tx, accountId, input.requireTwoFactor, input.allowedLoginCidrs, now);
        const after = await repo.securitySettings(accountId, tx);
        const changes: Record<string, { from: unknown; to: unknown }> = {};
        if (before.requireTwoFactor !== after.requireTwoFactor)
          changes['requireTwoFactor'] = { from: before.requireTwoFactor, to: after.requireTwoFactor };
        if (before.allowedLoginCidrs.join() !== after.allowedLoginCidrs.join())
          changes['allowedLoginCidrs'] = { from: before.allowedLoginCidrs, to: after.allowedLoginCidrs };
        if (Object.keys(changes).length)
          await writeAuditEntry(tx, {
            accountId,
            actor: { actorId: by(actor).loginId, credential: 'session', ip: actor.ip ?? null },
            action: 'security.updated',
            changes,
            at: now,
          });
        return lacking.length ? repo.endSessions(tx, accountId, lacking, now) : [];
      });
      rules.changed(accountId);
      accounts.forget(accountId, ended);
      log.info(
        { accountId, requireTwoFactor: input.requireTwoFactor, endedSessions: ended.length },
        'team security settings changed',
      );
      return { ...(await service.security(accountId)), endedSessions: ended.length };
    },

    /** The settings on each request of a member session (the authenticator calls it). */
    checkMemberRequest: (accountId: string, loginId: string, ip: string) => rules.check(accountId, loginId, ip),

    /** A deleted account's memberships and invitations end in the deletion's transaction. */
    endMembershipsOf: (tx: Db, accountId: string) => repo.endMembershipsOf(tx, accountId, clock.now()),

    /** Each role with the scopes its sessions hold. */
    roles: () =>
      (Object.keys(RoleScopes) as TeamRole[]).map((role) => ({
        role,
        scopes: [...RoleScopes[role]],
        managesMembers: role === 'owner' || role === 'admin',
      })),
  };
  return service;
}

export type TeamService = ReturnType<typeof createTeamService>;
