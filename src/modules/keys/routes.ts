import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { DateTime, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { Scopes } from '../../http/access.js';
import type { KeysService } from './service.js';

const ScopeName = Type.Union(Scopes.map((s) => Type.Literal(s)));
const ApiKey = Type.Object({
  id: Uuid(),
  name: Type.String(),
  mode: Type.Union([Type.Literal('live'), Type.Literal('test')]),
  keyPrefix: Type.String({ description: 'public start of the key, for recognising it' }),
  prefix: Type.String({ description: 'deprecated alias of keyPrefix' }),
  scopes: Nullable(Type.Array(Type.String())),
  fullAccess: Type.Boolean(),
  webhooksWrite: Type.Boolean(),
  createdAt: DateTime(),
  lastUsedAt: Nullable(DateTime()),
  revokedAt: Nullable(DateTime()),
});

export function keysRoutes(keys: KeysService) {
  return (app: App) => {
    app.post(
      '/account/api-keys',
      {
        config: { access: { auth: 'session' } },
        schema: {
          tags: ['API keys'],
          summary: 'Create an API key (the secret is returned once)',
          description:
            'No scopes (or only `webhooks:write`) gives full access; `webhooks:write` is never part of full access and ' +
            'must be listed. `mode: test` makes a `svc_test_sk_` key that simulates traffic against test credit.',
          body: Type.Object(
            {
              name: Type.Optional(Type.String({ maxLength: 100 })),
              mode: Type.Optional(Type.Union([Type.Literal('live'), Type.Literal('test')], { default: 'live' })),
              scopes: Type.Optional(Type.Array(ScopeName, { maxItems: Scopes.length, uniqueItems: true })),
            },
            { additionalProperties: false },
          ),
          response: {
            201: Ok(
              Type.Intersect([ApiKey, Type.Object({ key: Type.String({ description: 'the secret, shown once' }) })]),
            ),
          },
        },
      },
      async (req, reply) => {
        const { key, secret } = await keys.create(req.principal!.accountId, req.body);
        return reply.code(201).send(ok({ ...key, key: secret }));
      },
    );

    app.get(
      '/account/api-keys',
      {
        config: { access: { auth: 'session' } },
        schema: {
          tags: ['API keys'],
          summary: 'List API keys (never their secrets)',
          response: { 200: Ok(Type.Array(ApiKey)) },
        },
      },
      async (req) => ok(await keys.list(req.principal!.accountId)),
    );

    app.patch(
      '/account/api-keys/:id',
      {
        config: { access: { auth: 'session' } },
        schema: {
          tags: ['API keys'],
          summary: 'Narrow the scopes of a key (never broaden)',
          params: Type.Object({ id: Uuid() }),
          body: Type.Object({ scopes: Type.Array(ScopeName, { uniqueItems: true }) }, { additionalProperties: false }),
          response: { 200: Ok(ApiKey) },
        },
      },
      async (req) => ok(await keys.narrow(req.principal!.accountId, req.params.id, req.body.scopes)),
    );

    app.delete(
      '/account/api-keys/:id',
      {
        config: { access: { auth: 'session' } },
        schema: {
          tags: ['API keys'],
          summary: 'Revoke an API key at once',
          params: Type.Object({ id: Uuid() }),
          response: { 200: Ok(ApiKey) },
        },
      },
      async (req) => ok(await keys.revoke(req.principal!.accountId, req.params.id)),
    );

    app.get(
      '/account/api-usage',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: {
          tags: ['API usage'],
          summary: 'Requests per API key per UTC day',
          querystring: Type.Object({
            keyId: Type.Optional(Uuid()),
            days: Type.Optional(Type.Integer({ minimum: 1, maximum: 90, default: 30 })),
          }),
          response: {
            200: Ok(Type.Array(Type.Object({ keyId: Uuid(), day: Type.String(), requests: Type.Integer() }))),
          },
        },
      },
      async (req) => {
        await keys.flushUsage();
        return ok(await keys.usageReport(req.principal!.accountId, req.query.keyId, req.query.days ?? 30));
      },
    );
  };
}
