import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { CursorPage, DateTime, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { CursorQuery, cursorPage } from '../../http/pagination.js';
import { Credentials, Tokens, tokensOut } from './routes.js';
import type { AccountSecurityService } from './security-service.js';

const TAGS = ['Authentication'];
const Token = Type.String({ minLength: 10, maxLength: 200 });
const Code = Type.String({
  minLength: 6,
  maxLength: 6,
  pattern: '^\\d{6}$',
  description: 'the 6-digit code of the authenticator app',
});
const RecoveryCodes = Type.Array(Type.String(), { description: 'shown once: each signs in once instead of a code' });
const TwoFactorStatus = Type.Object({
  enabled: Type.Boolean(),
  enabledAt: Nullable(DateTime()),
  pendingEnrolment: Type.Boolean({ description: 'enrolled, not yet confirmed with a first code' }),
  recoveryCodesRemaining: Type.Integer(),
});
const LoginEvent = Type.Object({
  id: Uuid(),
  outcome: Type.Union([
    Type.Literal('success'),
    Type.Literal('failure'),
    Type.Literal('second_factor_required'),
    Type.Literal('second_factor_failed'),
    Type.Literal('password_reset'),
  ]),
  method: Type.Union([
    Type.Literal('password'),
    Type.Literal('totp'),
    Type.Literal('recovery_code'),
    Type.Literal('reset_token'),
    Type.Literal('membership'),
  ]),
  sessionId: Nullable(Uuid()),
  ip: Nullable(Type.String()),
  userAgent: Nullable(Type.String()),
  createdAt: DateTime(),
});

/** E-mail verification, password reset, two-factor sign-in, revoking one session, login history. */
export function accountSecurityRoutes(security: AccountSecurityService, loginLimit: number) {
  return (app: App) => {
    const meta = (req: { headers: Record<string, unknown>; ip: string }) => ({
      ip: req.ip,
      ...(typeof req.headers['user-agent'] === 'string' ? { userAgent: req.headers['user-agent'] } : {}),
    });
    const mailLimit = { points: 5, seconds: 3600 };

    app.post(
      '/auth/email/verification',
      {
        config: { access: { auth: 'session' }, rateLimit: mailLimit },
        schema: {
          tags: TAGS,
          summary: 'Send the e-mail verification link again',
          description: 'A new link replaces the earlier ones. 409 CONFLICT when the address is verified already.',
          response: { 202: Ok(Type.Object({ sent: Type.Boolean(), email: Type.String(), expiresAt: DateTime() })) },
        },
      },
      async (req, reply) => reply.code(202).send(ok(await security.resendVerification(req.principal!.accountId))),
    );

    app.post(
      '/auth/email/verify',
      {
        config: { access: { auth: 'public' }, rateLimit: { points: loginLimit, seconds: 60 } },
        schema: {
          tags: TAGS,
          summary: 'Verify the e-mail address with the token from the verification e-mail',
          body: Type.Object({ token: Token }, { additionalProperties: false }),
          response: {
            200: Ok(Type.Object({ verified: Type.Boolean(), email: Type.String(), verifiedAt: DateTime() })),
          },
        },
      },
      async (req) => ok(await security.verifyEmail(req.body.token)),
    );

    app.post(
      '/auth/password/forgot',
      {
        config: { access: { auth: 'public' }, rateLimit: { points: loginLimit, seconds: 60 } },
        schema: {
          tags: TAGS,
          summary: 'E-mail a password reset link',
          description:
            'The answer is the same whether or not the address has an account, so it cannot be used to find accounts.',
          body: Type.Object(
            { email: Type.String({ format: 'email', maxLength: 254 }) },
            { additionalProperties: false },
          ),
          response: { 202: Ok(Type.Object({ message: Type.String() })) },
        },
      },
      async (req, reply) => {
        await security.forgotPassword(req.body.email);
        return reply.code(202).send(
          ok({
            message: 'If this address has an account, a reset link is on its way; it works once, for a limited time',
          }),
        );
      },
    );

    app.post(
      '/auth/password/reset',
      {
        config: { access: { auth: 'public' }, rateLimit: { points: loginLimit, seconds: 60 } },
        schema: {
          tags: TAGS,
          summary: 'Set a new password with the e-mailed reset token; every session of the account ends',
          body: Type.Object(
            { token: Token, newPassword: Credentials.properties.password },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Type.Object({ reset: Type.Boolean(), revokedSessions: Type.Integer() })) },
        },
      },
      async (req) => ok(await security.resetPassword(req.body.token, req.body.newPassword, meta(req))),
    );

    app.get(
      '/auth/security',
      {
        config: { access: { auth: 'session' } },
        schema: {
          tags: TAGS,
          summary: 'Security state of the account: e-mail verification and two-factor sign-in',
          response: {
            200: Ok(
              Type.Object({
                email: Type.Object({
                  address: Type.String(),
                  verified: Type.Boolean(),
                  verifiedAt: Nullable(DateTime()),
                }),
                twoFactor: TwoFactorStatus,
              }),
            ),
          },
        },
      },
      async (req) => {
        const id = req.principal!.accountId;
        const [email, twoFactor] = await Promise.all([security.emailStatus(id), security.twoFactorStatus(id)]);
        return ok({
          email: { address: email.email, verified: email.verified, verifiedAt: email.verifiedAt },
          twoFactor,
        });
      },
    );

    app.post(
      '/auth/2fa/enroll',
      {
        config: { access: { auth: 'session' }, rateLimit: { points: 10, seconds: 60 } },
        schema: {
          tags: TAGS,
          summary: 'Start TOTP enrolment: a secret and the otpauth URI to show as a QR code',
          description:
            'Two-factor sign-in turns on only after POST /auth/2fa/verify with a first code. Enrolling again before that replaces the secret; while it is on: 409 CONFLICT.',
          response: {
            201: Ok(
              Type.Object({
                secret: Type.String({ description: 'base32, for typing into the app by hand' }),
                otpauthUri: Type.String({ description: 'otpauth://totp/… (render as a QR code)' }),
                algorithm: Type.String(),
                digits: Type.Integer(),
                period: Type.Integer(),
              }),
            ),
          },
        },
      },
      async (req, reply) => reply.code(201).send(ok(await security.enrolTwoFactor(req.principal!.accountId))),
    );

    app.post(
      '/auth/2fa/verify',
      {
        config: { access: { auth: 'session' }, rateLimit: { points: 10, seconds: 60 } },
        schema: {
          tags: TAGS,
          summary: 'Confirm the enrolment with a first code: two-factor sign-in turns on and recovery codes are issued',
          body: Type.Object({ code: Code }, { additionalProperties: false }),
          response: { 200: Ok(Type.Object({ enabled: Type.Boolean(), recoveryCodes: RecoveryCodes })) },
        },
      },
      async (req) => ok(await security.confirmTwoFactor(req.principal!.accountId, req.body.code)),
    );

    app.post(
      '/auth/2fa/disable',
      {
        config: { access: { auth: 'session' }, rateLimit: { points: 10, seconds: 60 } },
        schema: {
          tags: TAGS,
          summary: 'Turn two-factor sign-in off (current password and a code or recovery code)',
          body: Type.Object(
            {
              password: Type.String({ minLength: 1, maxLength: 200 }),
              code: Type.String({ minLength: 6, maxLength: 20 }),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Type.Object({ enabled: Type.Boolean() })) },
        },
      },
      async (req) => ok(await security.disableTwoFactor(req.principal!.accountId, req.body.password, req.body.code)),
    );

    app.post(
      '/auth/2fa/recovery-codes',
      {
        config: { access: { auth: 'session' }, rateLimit: { points: 10, seconds: 60 } },
        schema: {
          tags: TAGS,
          summary: 'Issue new recovery codes (the old ones stop working)',
          body: Type.Object({ code: Code }, { additionalProperties: false }),
          response: { 200: Ok(Type.Object({ recoveryCodes: RecoveryCodes })) },
        },
      },
      async (req) => ok(await security.renewRecoveryCodes(req.principal!.accountId, req.body.code)),
    );

    app.post(
      '/auth/login/2fa',
      {
        config: { access: { auth: 'public' }, rateLimit: { points: loginLimit, seconds: 60 } },
        schema: {
          tags: TAGS,
          summary: 'Complete a two-factor sign-in with the authenticator code or a recovery code',
          description: `The challenge takes a limited number of codes and expires after a few minutes; then sign in again.`,
          body: Type.Object(
            {
              challengeToken: Token,
              code: Type.Optional(Code),
              recoveryCode: Type.Optional(Type.String({ minLength: 10, maxLength: 20 })),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Tokens) },
        },
      },
      async (req) =>
        tokensOut(
          await security.completeLogin(req.body.challengeToken, {
            code: req.body.code,
            recoveryCode: req.body.recoveryCode,
          }),
        ),
    );

    app.delete(
      '/auth/sessions/:id',
      {
        config: { access: { auth: 'session' } },
        schema: {
          tags: TAGS,
          summary: 'Revoke one session of the account (its refresh token stops at once)',
          params: Type.Object({ id: Uuid() }),
          response: { 200: Ok(Type.Object({ revoked: Type.Boolean() })) },
        },
      },
      async (req) => ok(await security.revokeSession(req.principal!.accountId, req.params.id)),
    );

    app.get(
      '/auth/login-history',
      {
        config: { access: { auth: 'session' } },
        schema: {
          tags: TAGS,
          summary: 'Sign-ins, failed attempts, second-factor steps and password resets of the account, newest first',
          querystring: Type.Object({
            ...CursorQuery(),
            outcome: Type.Optional(LoginEvent.properties.outcome),
          }),
          response: { 200: CursorPage(LoginEvent) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        const rows = await security.loginHistory(req.principal!.accountId, {
          cursor: req.query.cursor,
          limit,
          ...(req.query.outcome ? { outcome: req.query.outcome } : {}),
        });
        return cursorPage(rows, limit);
      },
    );
  };
}
