import { Type } from 'typebox';
import type { Access, TeamRole } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { DateTime, Nullable, Ok, ok, Uuid } from '../../http/envelope.js';
import type { TeamService } from './service.js';

const tags = ['Account'];
const ALL_ROLES: readonly TeamRole[] = ['owner', 'admin', 'billing', 'developer', 'read_only'];
const read: { access: Access } = { access: { auth: 'required', scope: 'account:read' } };
// Member management: the holder's session or an owner's or admin's; API keys are refused.
const manage: { access: Access } = { access: { auth: 'session', roles: ['owner', 'admin'] } };
// The signed-in login's own memberships: any session.
const own: { access: Access } = { access: { auth: 'session', roles: ALL_ROLES } };

const Role = Type.Union([
  Type.Literal('owner'),
  Type.Literal('admin'),
  Type.Literal('billing'),
  Type.Literal('developer'),
  Type.Literal('read_only'),
]);
const Member = Type.Object({
  accountId: Uuid('the member login'),
  email: Nullable(Type.String()),
  role: Role,
  holder: Type.Boolean({ description: 'the account holder: always an owner, never removed' }),
  joinedAt: DateTime(),
  lastLoginAt: Nullable(DateTime()),
});
const Invitation = Type.Object({
  id: Uuid(),
  email: Type.String(),
  role: Role,
  invitedBy: Uuid(),
  createdAt: DateTime(),
  expiresAt: DateTime(),
  expired: Type.Boolean(),
  sentCount: Type.Integer(),
});
const MemberSession = Type.Object({
  accountId: Uuid('the team account the session acts on'),
  memberId: Uuid('the login that signed in'),
  role: Role,
  accessToken: Type.String(),
  refreshToken: Type.String(),
  expiresAt: DateTime(),
  sessionId: Uuid(),
});
const MemberParams = Type.Object({ accountId: Uuid() });
const IdParams = Type.Object({ id: Uuid() });
const meta = (req: { headers: Record<string, string | string[] | undefined>; ip: string }) => ({
  userAgent: typeof req.headers['user-agent'] === 'string' ? req.headers['user-agent'] : undefined,
  ip: req.ip,
});

export function teamRoutes(team: TeamService) {
  return (app: App) => {
    app.get(
      '/account/members',
      {
        config: read,
        schema: {
          tags,
          summary: 'Team members: the holder, then each member',
          response: { 200: Ok(Type.Array(Member)) },
        },
      },
      async (req) => ok(await team.members(req.principal!.accountId)),
    );

    app.get(
      '/account/members/:accountId',
      {
        config: read,
        schema: { tags, summary: 'One team member', params: MemberParams, response: { 200: Ok(Member) } },
      },
      async (req) => ok(await team.member(req.principal!.accountId, req.params.accountId)),
    );

    app.patch(
      '/account/members/:accountId',
      {
        config: manage,
        schema: {
          tags,
          summary: "Change a member's role",
          description:
            'The holder stays an owner (409). Only owners grant or change the owner role. The role applies to ' +
            "the member's live sessions from their next request.",
          params: MemberParams,
          body: Type.Object({ role: Role }, { additionalProperties: false }),
          response: { 200: Ok(Member) },
        },
      },
      async (req) => ok(await team.changeRole({ ...req.principal!, ip: req.ip }, req.params.accountId, req.body.role)),
    );

    app.delete(
      '/account/members/:accountId',
      {
        config: manage,
        schema: {
          tags,
          summary: 'Remove a member',
          description: "The holder cannot be removed (409). The member's sessions of this account end.",
          params: MemberParams,
          response: { 200: Ok(Type.Object({ removed: Type.Boolean(), endedSessions: Type.Integer() })) },
        },
      },
      async (req) => ok(await team.remove({ ...req.principal!, ip: req.ip }, req.params.accountId)),
    );

    app.post(
      '/account/invitations',
      {
        config: { ...manage, rateLimit: { points: 20, seconds: 3600 } },
        schema: {
          tags,
          summary: 'Invite a member by e-mail',
          description:
            'The e-mail (through `[mail]`) carries a single-use token that works for `[team] invitation_ttl_hours`.',
          body: Type.Object(
            { email: Type.String({ format: 'email', maxLength: 254 }), role: Role },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Invitation) },
        },
      },
      async (req, reply) => {
        reply.code(201);
        return ok(await team.invite({ ...req.principal!, ip: req.ip }, req.body.email.trim(), req.body.role));
      },
    );

    app.get(
      '/account/invitations',
      {
        config: read,
        schema: {
          tags,
          summary: 'Open invitations (expired ones included, to resend)',
          response: { 200: Ok(Type.Array(Invitation)) },
        },
      },
      async (req) => ok(await team.invitations(req.principal!.accountId)),
    );

    app.post(
      '/account/invitations/:id/resend',
      {
        config: { ...manage, rateLimit: { points: 20, seconds: 3600 } },
        schema: {
          tags,
          summary: 'Send an invitation again with a new link and deadline (the old link stops working)',
          params: IdParams,
          response: { 200: Ok(Invitation) },
        },
      },
      async (req) => ok(await team.resend({ ...req.principal!, ip: req.ip }, req.params.id)),
    );

    app.delete(
      '/account/invitations/:id',
      {
        config: manage,
        schema: {
          tags,
          summary: 'Revoke an invitation',
          params: IdParams,
          response: { 200: Ok(Type.Object({ revoked: Type.Boolean() })) },
        },
      },
      async (req) => ok(await team.revoke({ ...req.principal!, ip: req.ip }, req.params.id)),
    );

    app.post(
      '/account/invitations/accept',
      {
        config: { access: { auth: 'optional' }, rateLimit: { points: 10, seconds: 60 } },
        schema: {
          tags,
          summary: 'Accept an invitation',
          description:
            'A new address sends `password` and gets a login; an address that has a login accepts with that ' +
            "login's own session. Answers a session acting on the team account with the invitation's role.",
          body: Type.Object(
            {
              token: Type.String({ minLength: 1, maxLength: 200 }),
              password: Type.Optional(Type.String({ minLength: 10, maxLength: 200 })),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(MemberSession) },
        },
      },
      async (req) => ok(await team.accept(req.body.token, req.body.password, req.principal, meta(req))),
    );

    app.get(
      '/account/teams',
      {
        config: own,
        schema: {
          tags,
          summary: 'The accounts the signed-in login is a member of',
          response: {
            200: Ok(
              Type.Array(
                Type.Object({ accountId: Uuid(), email: Nullable(Type.String()), role: Role, joinedAt: DateTime() }),
              ),
            ),
          },
        },
      },
      async (req) => ok(await team.teams(req.principal!.member?.id ?? req.principal!.accountId)),
    );

    app.post(
      '/account/teams/:accountId/session',
      {
        config: own,
        schema: {
          tags,
          summary: 'Sign in to a team account the login is a member of',
          params: MemberParams,
          response: { 200: Ok(MemberSession) },
        },
      },
      async (req) =>
        ok(await team.switchTo(req.principal!.member?.id ?? req.principal!.accountId, req.params.accountId, meta(req))),
    );

    const Security = Type.Object({
      requireTwoFactor: Type.Boolean({ description: 'members sign in only from logins with two-factor sign-in' }),
      allowedLoginCidrs: Type.Array(Type.String(), { description: 'member sessions only from these networks' }),
      updatedAt: Nullable(DateTime()),
    });
    const ownerOnly: { access: Access } = { access: { auth: 'session', roles: ['owner'] } };
    app.get(
      '/account/security',
      {
        config: ownerOnly,
        schema: { tags, summary: "Security settings of the account's team", response: { 200: Ok(Security) } },
      },
      async (req) => ok(await team.security(req.principal!.accountId)),
    );

    app.put(
      '/account/security',
      {
        config: ownerOnly,
        schema: {
          tags,
          summary: "Set the security settings of the account's team",
          description:
            'Checked when a member session is made (accepting an invitation, switching to the team) and on every request ' +
            'of a member session: a request from outside `allowedLoginCidrs` is refused (403), and turning ' +
            '`requireTwoFactor` on ends the sessions of members without two-factor sign-in at once (`endedSessions`). ' +
            'The holder is not bound by them. Each change is written to the audit log.',
          body: Type.Object(
            {
              requireTwoFactor: Type.Boolean(),
              allowedLoginCidrs: Type.Array(Type.String({ minLength: 1, maxLength: 49 }), { maxItems: 50 }),
            },
            { additionalProperties: false },
          ),
          response: {
            200: Ok(
              Type.Object({
                ...Security.properties,
                endedSessions: Type.Integer({ description: 'member sessions ended by this change' }),
              }),
            ),
          },
        },
      },
      async (req) => ok(await team.setSecurity({ ...req.principal!, ip: req.ip }, req.body)),
    );

    app.get(
      '/account/roles',
      {
        config: read,
        schema: {
          tags,
          summary: 'The roles and the scopes each grants',
          response: {
            200: Ok(
              Type.Array(
                Type.Object({ role: Role, scopes: Type.Array(Type.String()), managesMembers: Type.Boolean() }),
              ),
            ),
          },
        },
      },
      async () => ok(team.roles()),
    );
  };
}
