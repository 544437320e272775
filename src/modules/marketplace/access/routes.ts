import { Type } from 'typebox';
import type { App } from '../../../http/app.js';
import { DateTime, Nullable, Ok, OffsetPage, Uuid, ok } from '../../../http/envelope.js';
import { OffsetQuery } from '../../../http/pagination.js';
import type { AccessService } from './service.js';

const TAGS = ['Route access'];
const READ = { auth: 'required', scope: 'routes:read' } as const;
const WRITE = { auth: 'required', scope: 'routes:write' } as const;
const StatusQ = Type.Optional(
  Type.Union([
    Type.Literal('pending'),
    Type.Literal('approved'),
    Type.Literal('denied'),
    Type.Literal('withdrawn'),
    Type.Literal('granted'),
  ]),
);
const Request = Type.Object({
  id: Uuid(),
  routeId: Uuid(),
  accountId: Uuid(),
  status: Type.String(),
  note: Nullable(Type.String()),
  reason: Nullable(Type.String()),
  createdAt: DateTime(),
  decidedAt: Nullable(DateTime()),
});

export function accessRoutes(access: AccessService) {
  return (app: App) => {
    app.post(
      '/routes/:id/access-requests',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Ask the seller of a private route for access',
          description:
            'For a private route whose id the seller shared. One open request per route (409); the seller is told (`route.access_requested`) and sees the account asking. A public route needs none (400).',
          params: Type.Object({ id: Uuid() }),
          body: Type.Object({ note: Type.Optional(Type.String({ maxLength: 500 })) }, { additionalProperties: false }),
          response: {
            201: Ok(
              Type.Object({
                id: Uuid(),
                routeId: Uuid(),
                status: Type.Literal('pending'),
                note: Nullable(Type.String()),
                createdAt: DateTime(),
              }),
            ),
          },
        },
        preValidation: async (req) => {
          req.body ??= {};
        },
      },
      async (req, reply) =>
        reply.code(201).send(ok(await access.request(req.principal!.accountId, req.params.id, req.body.note ?? null))),
    );

    app.post(
      '/routes/:id/access-requests/:requestId/decide',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Approve (grant access) or deny an open access request on an own route',
          description: 'The buyer is told (`route.access_decided`). A decided request answers 409.',
          params: Type.Object({ id: Uuid(), requestId: Uuid() }),
          body: Type.Object(
            {
              decision: Type.Union([Type.Literal('approve'), Type.Literal('deny')]),
              reason: Type.Optional(Type.String({ maxLength: 500 })),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Request) },
        },
      },
      async (req) =>
        ok(
          await access.decide(
            req.principal!.accountId,
            req.params.id,
            req.params.requestId,
            req.body.decision,
            req.body.reason ?? null,
          ),
        ),
    );

    app.get(
      '/routes/:id/access',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Grants and access requests on an own route, newest first',
          params: Type.Object({ id: Uuid() }),
          querystring: Type.Object({ ...OffsetQuery(), status: StatusQ }),
          response: {
            200: OffsetPage(
              Type.Object({
                kind: Type.Union([Type.Literal('grant'), Type.Literal('request')]),
                requestId: Nullable(Uuid()),
                accountId: Uuid(),
                status: Type.String(),
                note: Nullable(Type.String()),
                at: DateTime(),
                decidedAt: Nullable(DateTime()),
              }),
            ),
          },
        },
      },
      async (req) =>
        ok(
          await access.byRoute(req.principal!.accountId, req.params.id, {
            ...(req.query.status === undefined ? {} : { status: req.query.status }),
            limit: req.query.limit ?? 25,
            offset: req.query.offset ?? 0,
          }),
        ),
    );

    app.get(
      '/routes/access/mine',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The caller's access grants and requests as a buyer, newest first",
          querystring: Type.Object({ ...OffsetQuery(), status: StatusQ }),
          response: {
            200: OffsetPage(
              Type.Object({
                kind: Type.Union([Type.Literal('grant'), Type.Literal('request')]),
                requestId: Nullable(Uuid()),
                routeId: Uuid(),
                routeName: Nullable(Type.String({ description: 'once access is granted' })),
                status: Type.String(),
                at: DateTime(),
                decidedAt: Nullable(DateTime()),
              }),
            ),
          },
        },
      },
      async (req) =>
        ok(
          await access.mine(req.principal!.accountId, {
            ...(req.query.status === undefined ? {} : { status: req.query.status }),
            limit: req.query.limit ?? 25,
            offset: req.query.offset ?? 0,
          }),
        ),
    );
  };
}
