import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { DateTime, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { AppError, unauthorized } from '../../http/errors.js';
import type { AccountRow } from './repo.js';
import type { AccountsService } from './service.js';

export const Credentials = Type.Object(
  {
    email: Type.String({ format: 'email', maxLength: 254 }),
    password: Type.String({ minLength: 10, maxLength: 200, description: 'at least 10 characters' }),
  },
  { additionalProperties: false },
);
const LoginBody = Type.Object(
  { email: Type.String({ maxLength: 254 }), password: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
);
export const Tokens = Type.Object({
  accessToken: Type.String({ description: 'session JWT: send as Authorization: Bearer' }),
  refreshToken: Type.String({ description: 'single use; every refresh returns a new one' }),
  expiresAt: DateTime(),
});
/**
 * The answer of GET /account for a cached account row, made once per row: a changed account is
 * loaded as a new row.
 */
const presented = new WeakMap<AccountRow, ReturnType<typeof present>>();
const present = (a: AccountRow) =>
  ok({
    id: a.id,
    email: a.email,
    role: a.role,
    parentId: a.parentId,
    status: a.status,
    label: a.label,
    mustChangePassword: a.mustChangePassword,
    createdAt: a.createdAt.toISOString(),
  });

function presentAccount(a: AccountRow | null) {
  if (!a) throw unauthorized();
  let answer = presented.get(a);
  if (answer === undefined) presented.set(a, (answer = present(a)));
  return answer;
}

const Account = Type.Object({
  id: Uuid(),
  email: Nullable(Type.String()),
  role: Type.String(),
  parentId: Nullable(Uuid()),
  status: Type.String(),
  label: Nullable(Type.String()),
  mustChangePassword: Type.Boolean(),
  createdAt: DateTime(),
});
const Session = Type.Object({
  id: Uuid(),
  current: Type.Boolean(),
  createdAt: DateTime(),
  lastSeenAt: DateTime(),
  expiresAt: DateTime(),
  userAgent: Nullable(Type.String()),
  ip: Nullable(Type.String()),
});

export const tokensOut = (t: { accessToken: string; refreshToken: string; expiresAt: string }) =>
  ok({ accessToken: t.accessToken, refreshToken: t.refreshToken, expiresAt: t.expiresAt });

export function accountsRoutes(accounts: AccountsService, loginLimit: number) {
  return (app: App) => {
    const meta = (req: { headers: Record<string, unknown>; ip: string }) => ({
      userAgent: typeof req.headers['user-agent'] === 'string' ? req.headers['user-agent'] : undefined,
      ip: req.ip,
    });

    app.post(
      '/auth/register',
      {
        config: { access: { auth: 'public' }, rateLimit: { points: loginLimit, seconds: 60 } },
        schema: {
          tags: ['Authentication'],
          summary: 'Create an account; then sign in with POST /auth/login',
          description:
            'The answer is the same whether or not the e-mail was already registered, so it cannot be used to find accounts.',
          body: Credentials,
          response: { 202: Ok(Type.Object({ message: Type.String() })) },
        },
      },
      async (req, reply) => {
        await accounts.register(req.body.email, req.body.password);
        return reply
          .code(202)
          .send(
            ok({ message: 'If this e-mail address was free, its account is ready: sign in with POST /auth/login' }),
          );
      },
    );

    app.post(
      '/auth/login',
      {
        config: { access: { auth: 'public' }, rateLimit: { points: loginLimit, seconds: 60 } },
        schema: {
          tags: ['Authentication'],
          summary: 'Sign in with e-mail and password',
          description:
            'With two-factor sign-in on, the answer is `{ secondFactorRequired: true, challengeToken, expiresAt }` instead of tokens: send the challenge token and the authenticator code to POST /auth/login/2fa.',
          body: LoginBody,
          response: {
            200: Ok(
              Type.Union([
                Tokens,
                Type.Object({
                  secondFactorRequired: Type.Literal(true),
                  challengeToken: Type.String(),
                  expiresAt: DateTime(),
                }),
              ]),
            ),
          },
        },
      },
      async (req) => {
        const r = await accounts.beginLogin(req.body.email, req.body.password, meta(req));
        return 'secondFactorRequired' in r ? ok(r) : tokensOut(r);
      },
    );

    app.post(
      '/auth/refresh',
      {
        config: {
          access: { auth: 'public', whilePasswordChangeRequired: true },
          rateLimit: { points: loginLimit * 6, seconds: 60 },
        },
        schema: {
          tags: ['Authentication'],
          summary: 'Exchange a refresh token for a new access token and refresh token',
          description: 'Without a refresh token: 401 MISSING_TOKEN. A refresh token used twice revokes its session.',
          body: Type.Optional(Type.Object({ refreshToken: Type.Optional(Type.String({ maxLength: 200 })) })),
          response: { 200: Ok(Tokens) },
        },
        // No body at all is the spec's MISSING_TOKEN case, not a malformed body.
        preValidation: async (req) => {
          req.body ??= {};
        },
      },
      async (req) => {
        const token = req.body?.refreshToken;
        if (!token) throw new AppError('MISSING_TOKEN', 'A refresh token is required');
        return tokensOut(await accounts.refresh(token));
      },
    );

    app.post(
      '/auth/change-password',
      {
        config: {
          access: { auth: 'session', whilePasswordChangeRequired: true },
          rateLimit: { points: loginLimit, seconds: 60 },
        },
        schema: {
          tags: ['Authentication'],
          summary: 'Replace the password; every other session of the account ends',
          description:
            'Needed first after signing in with a one-time password: until then other operations answer 403 PASSWORD_CHANGE_REQUIRED.',
          body: Type.Object(
            {
              currentPassword: Type.String({ minLength: 1, maxLength: 200 }),
              newPassword: Credentials.properties.password,
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Type.Object({ changed: Type.Boolean(), revokedSessions: Type.Integer() })) },
        },
      },
      async (req) => {
        const p = req.principal!;
        const r = await accounts.changePassword(
          { accountId: p.accountId, sessionId: p.credentialId },
          req.body.currentPassword,
          req.body.newPassword,
        );
        return ok({ changed: true, revokedSessions: r.revokedSessions });
      },
    );

    app.post(
      '/auth/logout',
      {
        config: {
          access: {
            auth: 'session',
            whilePasswordChangeRequired: true,
            roles: ['owner', 'admin', 'billing', 'developer', 'read_only'],
          },
        },
        schema: {
          tags: ['Authentication'],
          summary: 'End the current session',
          response: { 200: Ok(Type.Object({ loggedOut: Type.Boolean() })) },
        },
      },
      async (req) => {
        const p = req.principal!;
        await accounts.logout({ accountId: p.accountId, sessionId: p.credentialId });
        return ok({ loggedOut: true });
      },
    );

    app.get(
      '/auth/sessions',
      {
        config: { access: { auth: 'session' } },
        schema: {
          tags: ['Authentication'],
          summary: 'List live sessions of the account',
          response: { 200: Ok(Type.Array(Session)) },
        },
      },
      async (req) => {
        const p = req.principal!;
        const rows = await accounts.listSessions(p.accountId);
        return ok(
          rows.map((s) => ({
            id: s.id,
            current: s.id === p.credentialId,
            createdAt: s.createdAt.toISOString(),
            lastSeenAt: s.lastSeenAt.toISOString(),
            expiresAt: s.expiresAt.toISOString(),
            userAgent: s.userAgent,
            ip: s.ip,
          })),
        );
      },
    );

    app.post(
      '/auth/sessions/revoke-others',
      {
        config: { access: { auth: 'required' } },
        schema: {
          tags: ['Authentication'],
          summary: 'Revoke every session but the current one',
          description: 'Needs the current session to be known: with an API key it answers 400 NO_SESSION.',
          response: { 200: Ok(Type.Object({ revoked: Type.Integer() })) },
        },
      },
      async (req) => {
        const p = req.principal!;
        const revoked = await accounts.revokeOtherSessions(p.accountId, p.kind === 'session' ? p.credentialId : null);
        return ok({ revoked });
      },
    );

    app.get(
      '/account',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: { tags: ['Account'], summary: 'The signed-in account', response: { 200: Ok(Account) } },
      },
      // Answered without a promise when the account is cached, as it is for any authenticated
      // request: the credential check has just read it.
      (req) => {
        const id = req.principal!.accountId;
        const cached = accounts.accountForAuthNow(id);
        return cached ? presentAccount(cached.value) : accounts.accountForAuth(id).then(presentAccount);
      },
    );
  };
}
