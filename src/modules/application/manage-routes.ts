import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { Scopes, type Principal } from '../../http/access.js';
import { CursorPage, DateTime, Money, Nullable, Ok, ok, Uuid } from '../../http/envelope.js';
import { forbidden } from '../../http/errors.js';
import { cursorPage, CursorQuery } from '../../http/pagination.js';
import { newId } from '../../platform/ids.js';
import type { SubAccountLifecycle } from './lifecycle.js';
import { SubAccount } from './routes.js';

const access = { auth: 'required', scope: 'application:write' } as const;
// A sub-account key or SIP login acts on the operator's money: the caller must hold what it grants.
const keyAccess = { ...access, grants: ['voice:send', 'sms:send'] } as const;
const tags = ['Application Manager'];
const Params = Type.Object({ id: Uuid() });

const ApiKey = Type.Object({
  id: Uuid(),
  name: Type.String(),
  mode: Type.String(),
  keyPrefix: Type.String(),
  prefix: Type.String(),
  scopes: Nullable(Type.Array(Type.String())),
  fullAccess: Type.Boolean(),
  webhooksWrite: Type.Boolean(),
  createdAt: DateTime(),
  lastUsedAt: Nullable(DateTime()),
  revokedAt: Nullable(DateTime()),
});

const Transfer = Type.Object({
  transactionId: Uuid(),
  subAccountId: Uuid(),
  amount: Money(),
  balance: Money('the sub-account after'),
  operatorBalance: Money(),
  replayed: Type.Boolean(),
});

/** A sub-account key is never broader than the operator's credential that makes it. */
function scopesFor(p: Principal, requested: string[] | undefined): string[] | undefined {
  if (p.kind === 'session' || p.scopes === null) return requested;
  const held = [...p.scopes] as string[];
  const want = requested ?? held;
  const missing = want.filter((s) => !held.includes(s));
  if (missing.length > 0) throw forbidden(`The key cannot grant scopes it does not hold: ${missing.join(', ')}`);
  return want;
}

export interface Brand {
  operatorId: string;
  brandName: string | null;
  brandColor: string | null;
  brandLogoUrl: string | null;
}

const idemKey = (h: string | string[] | undefined) => (typeof h === 'string' && h !== '' ? `idem:${h}` : newId());

export function manageRoutes(life: SubAccountLifecycle, brandOf: (operatorId: string) => Promise<Brand>) {
  return (app: App) => {
    app.get(
      '/application/brand',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: {
          tags,
          summary: "The white-label brand a sub-account's customers see: its operator's brand settings",
          description:
            "Called with a sub-account's key (a customer portal built on it), it answers the operator's `brandName`, " +
            '`brandColor` and `brandLogoUrl`; called by an operator, its own. Set them with `PUT /application/settings`. ' +
            'Sub-account statements and invoices carry the brand name as issuer.',
          response: {
            200: Ok(
              Type.Object({
                operatorId: Uuid(),
                brandName: Nullable(Type.String()),
                brandColor: Nullable(Type.String()),
                brandLogoUrl: Nullable(Type.String()),
              }),
            ),
          },
        },
      },
      async (req) => ok(await brandOf(req.principal!.parentId ?? req.principal!.accountId)),
    );

    app.post(
      '/application/sub-accounts/:id/suspend',
      {
        config: { access },
        schema: {
          tags,
          summary: 'Suspend a sub-account: its calls, messages and API requests are refused until resumed',
          description: 'Event `sub_account.suspended` with `reason` (`operator` unless given).',
          params: Params,
          body: Type.Optional(
            Type.Object({ reason: Type.Optional(Type.String({ maxLength: 200 })) }, { additionalProperties: false }),
          ),
          response: { 200: Ok(SubAccount) },
        },
      },
      async (req) => ok(await life.suspend(req.principal!.accountId, req.params.id, req.body?.reason)),
    );

    app.post(
      '/application/sub-accounts/:id/resume',
      {
        config: { access },
        schema: {
          tags,
          summary: 'Resume a suspended sub-account (event `sub_account.resumed`)',
          params: Params,
          response: { 200: Ok(SubAccount) },
        },
      },
      async (req) => ok(await life.resume(req.principal!.accountId, req.params.id)),
    );

    app.delete(
      '/application/sub-accounts/:id',
      {
        config: { access, idempotent: true },
        schema: {
          tags,
          summary: 'Close a sub-account: its balance goes back to the operator',
          description:
            'The whole balance is transferred back to the operator (a `transfer` entry on the sub-account, a `credit` on ' +
            'the operator), its credit limit released, its API keys revoked and its SIP user refused. 409 while live calls ' +
            'hold part of its balance; 400 when its balance is negative.',
          params: Params,
          response: {
            200: Ok(
              Type.Object({
                id: Uuid(),
                status: Type.Literal('closed'),
                returnedAmount: Money(),
                transactionId: Nullable(Uuid()),
                operatorBalance: Money(),
              }),
            ),
          },
        },
      },
      async (req) => ok(await life.close(req.principal!.accountId, req.params.id)),
    );

    app.post(
      '/application/sub-accounts/:id/transfer-back',
      {
        config: { access: { ...access, denyTestKeys: true }, idempotent: true },
        schema: {
          tags,
          summary: "Move money from a sub-account back to the operator's balance",
          description:
            '`amount` omitted: all of its own balance not held by live calls. Never more than that (its credit limit is ' +
            "the operator's money): 400 Insufficient balance.",
          params: Params,
          body: Type.Object(
            { amount: Type.Optional(Type.String({ pattern: '^\\d{1,14}(\\.\\d{1,6})?$' })) },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Transfer) },
        },
      },
      async (req) =>
        ok(
          await life.transferBack(
            req.principal!.accountId,
            req.params.id,
            req.body.amount,
            idemKey(req.headers['x-idempotency-key']),
          ),
        ),
    );

    app.get(
      '/application/sub-accounts/:id/usage',
      {
        config: { access },
        schema: {
          tags,
          summary: "A sub-account's calls, messages, minutes and spend per UTC day",
          params: Params,
          querystring: Type.Object({ days: Type.Optional(Type.Integer({ minimum: 1, maximum: 366, default: 30 })) }),
          response: {
            200: Ok(
              Type.Object({
                subAccountId: Uuid(),
                days: Type.Integer(),
                totals: Type.Object({
                  calls: Type.Integer(),
                  answered: Type.Integer(),
                  sms: Type.Integer(),
                  minutes: Type.Number(),
                  spend: Money(),
                }),
                points: Type.Array(
                  Type.Object({
                    date: Type.String({ format: 'date' }),
                    calls: Type.Integer(),
                    answered: Type.Integer(),
                    sms: Type.Integer(),
                    minutes: Type.Number(),
                    spend: Money(),
                  }),
                ),
              }),
            ),
          },
        },
      },
      async (req) => ok(await life.usage(req.principal!.accountId, req.params.id, req.query.days ?? 30)),
    );

    app.get(
      '/application/sub-accounts/:id/cdrs',
      {
        config: { access },
        schema: {
          tags,
          summary: "A sub-account's call and message records, newest first",
          params: Params,
          querystring: Type.Object({
            ...CursorQuery(50, 100),
            from: Type.Optional(Type.String({ format: 'date-time' })),
            to: Type.Optional(Type.String({ format: 'date-time' })),
          }),
          response: { 200: CursorPage(Type.Object({ id: Uuid() }, { additionalProperties: true })) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 50;
        const rows = await life.cdrs(req.principal!.accountId, req.params.id, {
          cursor: req.query.cursor,
          limit,
          ...(req.query.from ? { from: new Date(req.query.from) } : {}),
          ...(req.query.to ? { to: new Date(req.query.to) } : {}),
        });
        return cursorPage(rows as { id: string }[], limit);
      },
    );

    app.get(
      '/application/sub-accounts/:id/api-keys',
      {
        config: { access },
        schema: {
          tags,
          summary: "A sub-account's API keys (never their secrets)",
          params: Params,
          response: { 200: Ok(Type.Array(ApiKey)) },
        },
      },
      async (req) => ok(await life.listKeys(req.principal!.accountId, req.params.id)),
    );

    app.post(
      '/application/sub-accounts/:id/api-keys',
      {
        config: { access: keyAccess },
        schema: {
          tags,
          summary: 'Another API key for a sub-account; the secret is returned once',
          description: 'A scoped operator key can only give scopes it holds itself.',
          params: Params,
          body: Type.Object(
            {
              name: Type.Optional(Type.String({ maxLength: 100 })),
              scopes: Type.Optional(Type.Array(Type.String({ enum: [...Scopes] }), { maxItems: Scopes.length })),
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Type.Object({ ...ApiKey.properties, secret: Type.String() })) },
        },
      },
      async (req, reply) => {
        const scopes = scopesFor(req.principal!, req.body.scopes);
        const key = await life.createKey(req.principal!.accountId, req.params.id, { name: req.body.name, scopes });
        return reply.code(201).send(ok(key));
      },
    );

    app.delete(
      '/application/sub-accounts/:id/api-keys/:keyId',
      {
        config: { access },
        schema: {
          tags,
          summary: "Revoke one of a sub-account's API keys (at once)",
          params: Type.Object({ id: Uuid(), keyId: Uuid() }),
          response: { 200: Ok(ApiKey) },
        },
      },
      async (req) => ok(await life.revokeKey(req.principal!.accountId, req.params.id, req.params.keyId)),
    );

    app.get(
      '/application/sub-accounts/:id/sip-credentials',
      {
        config: { access },
        schema: {
          tags,
          summary: "A sub-account's SIP login: username, realm, hosts (the password is shown only when made)",
          description: 'Rotate the password with `POST /application/sub-accounts/{id}/sip-password`.',
          params: Params,
          response: {
            200: Ok(
              Type.Object({
                subAccountId: Uuid(),
                sipUsername: Type.String(),
                realm: Type.String(),
                hosts: Type.Array(Type.String()),
                port: Type.Integer(),
                transports: Type.Array(Type.String()),
                authAlgorithm: Type.Literal('MD5'),
                passwordSet: Type.Boolean(),
                enabled: Type.Boolean({ description: 'false while suspended or closed' }),
              }),
            ),
          },
        },
      },
      async (req) => ok(await life.sipCredentials(req.principal!.accountId, req.params.id)),
    );
  };
}
