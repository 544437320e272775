import { Type } from 'typebox';
import type { App } from '../../../http/app.js';
import { DateTime, Money, Ok, Uuid, ok } from '../../../http/envelope.js';
import type { ListingLifecycle } from './lifecycle.js';
import { RouteSchema, SmsDeliveryIn } from './routes.js';

const TAGS = ['Marketplace routes'];
const READ = { auth: 'required', scope: 'routes:read' } as const;
const WRITE = { auth: 'required', scope: 'routes:write' } as const;
const Id = Type.Object({ id: Uuid() });

export function lifecycleRoutes(life: ListingLifecycle) {
  return (app: App) => {
    app.post(
      '/routes/:id/pause',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary:
            'Pause an own listing: no new traffic, out of the marketplace; calls in progress end as they started',
          description: 'Purchases stay; buyers fail over to their other routes. 409 when the operator suspended it.',
          params: Id,
          response: { 200: Ok(RouteSchema) },
        },
      },
      async (req) => ok(await life.pause(req.principal!.accountId, req.params.id)),
    );

    app.post(
      '/routes/:id/resume',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Resume a paused own listing (409 when the operator suspended it)',
          params: Id,
          response: { 200: Ok(RouteSchema) },
        },
      },
      async (req) => ok(await life.resume(req.principal!.accountId, req.params.id)),
    );

    app.put(
      '/routes/:id/visibility',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Make an own listing public or private',
          description: 'Going private keeps the purchases buyers hold; new buyers need an access grant.',
          params: Id,
          body: Type.Object(
            { visibility: Type.Union([Type.Literal('public'), Type.Literal('private')]) },
            { additionalProperties: false },
          ),
          response: { 200: Ok(RouteSchema) },
        },
      },
      async (req) => ok(await life.setVisibility(req.principal!.accountId, req.params.id, req.body.visibility)),
    );

    app.delete(
      '/routes/:id',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Delete an own listing nobody else holds a purchase of',
          description:
            '409 while another account holds an active or paused purchase, or a blend uses it; blends are deleted with `DELETE /routes/blends/{id}`.',
          params: Id,
          response: { 200: Ok(Type.Object({ id: Uuid(), deleted: Type.Literal(true) })) },
        },
      },
      async (req) => ok(await life.remove(req.principal!.accountId, req.params.id)),
    );

    app.post(
      '/routes/:id/clone',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Copy an own listing: terms, delivery and the rates in force, as a new private listing',
          params: Id,
          body: Type.Object(
            { name: Type.Optional(Type.String({ minLength: 1, maxLength: 120 })) },
            { additionalProperties: false },
          ),
          response: { 201: Ok(RouteSchema) },
        },
        preValidation: async (req) => {
          req.body ??= {};
        },
      },
      async (req, reply) =>
        reply.code(201).send(ok(await life.clone(req.principal!.accountId, req.params.id, req.body.name))),
    );

    app.put(
      '/routes/:id/sms-delivery',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: "Set one own SMS route's delivery (SMPP or HTTPS; credentials write-only)",
          params: Id,
          body: SmsDeliveryIn,
          response: { 200: Ok(RouteSchema) },
        },
      },
      async (req) => ok(await life.setSmsDelivery(req.principal!.accountId, req.params.id, req.body)),
    );

    app.delete(
      '/routes/my-endpoints/:id',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Remove a saved SIP endpoint (a voice route keeps at least one)',
          params: Id,
          response: { 200: Ok(Type.Object({ id: Uuid(), routeId: Uuid(), deleted: Type.Literal(true) })) },
        },
      },
      async (req) => ok(await life.removeEndpoint(req.principal!.accountId, req.params.id)),
    );

    app.get(
      '/routes/my/sales',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The seller's sales per own listing: buyers holding it, traffic and revenue (buyers never named)",
          querystring: Type.Object({ days: Type.Optional(Type.Integer({ minimum: 1, maximum: 366, default: 30 })) }),
          response: {
            200: Ok(
              Type.Object({
                days: Type.Integer(),
                since: DateTime(),
                revenue: Money('seller credit over the window'),
                routes: Type.Array(
                  Type.Object({
                    routeId: Uuid(),
                    name: Type.String(),
                    type: Type.String(),
                    status: Type.String(),
                    activeBuyers: Type.Integer(),
                    newPurchases: Type.Integer(),
                    calls: Type.Integer(),
                    answeredCalls: Type.Integer(),
                    billedMinutes: Type.Number({ description: 'display number' }),
                    messages: Type.Integer({ description: 'SMS segments' }),
                    revenue: Money(),
                  }),
                ),
              }),
            ),
          },
        },
      },
      async (req) => ok(await life.sales(req.principal!.accountId, req.query.days ?? 30)),
    );
  };
}
