import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { CursorPage, DateTime, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { cursorPage, CursorQuery } from '../../http/pagination.js';
import { SMS_LANGUAGES } from './messages.js';
import type { Requester, VerifyService } from './service.js';

const TAGS = ['Verify'];
const Channel = Type.Union([Type.Literal('sms'), Type.Literal('voice')]);
const Language = Type.Union(
  SMS_LANGUAGES.map((l) => Type.Literal(l)),
  {
    description: 'voice: en, es, fr, de, pt, hi; SMS also ar (sent as UCS-2)',
  },
);
const Status = Type.Union([
  Type.Literal('pending'),
  Type.Literal('approved'),
  Type.Literal('expired'),
  Type.Literal('max_attempts'),
  Type.Literal('canceled'),
  Type.Literal('failed'),
]);

const StartBody = Type.Object(
  {
    to: Type.String({ minLength: 1, maxLength: 32, description: 'E.164' }),
    channel: Channel,
    language: Type.Optional(Language),
    brand: Type.Optional(Type.String({ maxLength: 30, description: 'named in the message, e.g. "Acme"' })),
    expirySeconds: Type.Optional(Type.Integer({ minimum: 60, maximum: 3600, default: 600 })),
    codeLength: Type.Optional(Type.Integer({ minimum: 4, maximum: 10, default: 6, description: 'digits' })),
  },
  { additionalProperties: false },
);

const Started = Type.Object({
  verificationId: Uuid(),
  to: Type.String(),
  channel: Channel,
  status: Type.Literal('pending'),
  expiresAt: DateTime(),
  maxAttempts: Type.Integer(),
  codeLength: Type.Integer(),
  messageId: Type.Optional(Uuid('the SMS that carried the code (GET /comms/sms/{id})')),
  callId: Type.Optional(Uuid('the call that read the code (GET /comms/calls/{id})')),
  simulated: Type.Optional(Type.Literal(true)),
  testCode: Type.Optional(Type.String({ description: 'test keys only: the code, since nothing was sent' })),
});

const CheckBody = Type.Object(
  { verificationId: Uuid(), code: Type.String({ pattern: '^[0-9]{4,10}$' }) },
  { additionalProperties: false },
);

const Checked = Type.Object({
  status: Type.Union([
    Type.Literal('approved'),
    Type.Literal('denied'),
    Type.Literal('expired'),
    Type.Literal('max_attempts'),
  ]),
  attemptsRemaining: Type.Integer(),
});

const Verification = Type.Object({
  id: Uuid(),
  to: Type.String(),
  channel: Channel,
  status: Status,
  language: Type.String(),
  brand: Nullable(Type.String()),
  codeLength: Type.Integer(),
  attempts: Type.Integer(),
  maxAttempts: Type.Integer(),
  attemptsRemaining: Type.Integer(),
  expiresAt: DateTime(),
  messageId: Nullable(Uuid()),
  callId: Nullable(Uuid()),
  failureReason: Nullable(Type.String()),
  simulated: Type.Boolean(),
  createdAt: DateTime(),
  updatedAt: DateTime(),
  approvedAt: Nullable(DateTime()),
});

const requester = (p: { accountId: string; parentId: string | null; mode: 'live' | 'test' }): Requester => ({
  accountId: p.accountId,
  parentId: p.parentId,
  mode: p.mode,
});

/** The five Verify operations (spec "Verify"; list and cancel as docs/verify.md describes them). */
export function verifyRoutes(svc: VerifyService) {
  return (app: App) => {
    app.post(
      '/verify/start',
      {
        config: {
          access: { auth: 'required', scope: 'verify:write', testKeys: 'simulate' },
          rateLimit: { points: 10, seconds: 1 },
          idempotent: true,
        },
        schema: {
          tags: TAGS,
          summary: 'Send a one-time code by SMS or voice call (billed as the SMS or call; no verification fee)',
          body: StartBody,
          response: { 200: Ok(Started) },
        },
      },
      async (req) => ok(await svc.start(requester(req.principal!), req.body)),
    );

    app.post(
      '/verify/check',
      {
        // A check changes only the verification it names, which a test key's own code may do.
        config: { access: { auth: 'required', scope: 'verify:write', testKeys: 'allow' } },
        schema: {
          tags: TAGS,
          summary: 'Check a code: five attempts per code; an approved code cannot be used again',
          body: CheckBody,
          response: { 200: Ok(Checked) },
        },
      },
      async (req) => ok(await svc.check(requester(req.principal!), req.body)),
    );

    app.get(
      '/verify/:id',
      {
        config: { access: { auth: 'required', scope: 'verify:write' } },
        schema: {
          tags: TAGS,
          summary: 'One verification (never its code)',
          params: Type.Object({ id: Uuid() }),
          response: { 200: Ok(Verification) },
        },
      },
      async (req) => ok(await svc.get(req.principal!, req.params.id)),
    );

    app.get(
      '/verify',
      {
        config: { access: { auth: 'required', scope: 'verify:write' } },
        schema: {
          tags: TAGS,
          summary: 'Verifications, newest first',
          querystring: Type.Object({
            status: Type.Optional(Status),
            to: Type.Optional(Type.String({ maxLength: 32, description: 'E.164' })),
            ...CursorQuery(),
          }),
          response: { 200: CursorPage(Verification) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        const rows = await svc.list(req.principal!, {
          cursor: req.query.cursor,
          status: req.query.status,
          to: req.query.to,
          limit,
        });
        return cursorPage(rows, limit);
      },
    );

    app.post(
      '/verify/:id/cancel',
      {
        config: { access: { auth: 'required', scope: 'verify:write', testKeys: 'allow' } },
        schema: {
          tags: TAGS,
          summary: 'Cancel a pending verification: its code stops working at once',
          params: Type.Object({ id: Uuid() }),
          response: { 200: Ok(Verification) },
        },
      },
      async (req) => ok(await svc.cancel(requester(req.principal!), req.params.id)),
    );
  };
}
