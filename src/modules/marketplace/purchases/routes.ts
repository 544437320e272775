import { Type } from 'typebox';
import type { App } from '../../../http/app.js';
import { CursorPage, DateTime, Money, Nullable, Ok, Uuid, ok } from '../../../http/envelope.js';
import { cursorPage, CursorQuery, OffsetQuery } from '../../../http/pagination.js';
import type { Routing } from '../routing/routing.js';
import type { PurchasesService } from './service.js';

const TAGS = ['Purchases'];
const READ = { auth: 'required', scope: 'routes:read' } as const;
const WRITE = { auth: 'required', scope: 'purchases:write' } as const;

const Purchase = Type.Object({
  id: Uuid(),
  routeId: Uuid(),
  routeName: Type.String(),
  type: Type.String(),
  status: Type.String(),
  routingPriority: Nullable(Type.Integer({ description: 'position in the routing order, null when not in it' })),
  createdAt: DateTime(),
  cancelledAt: Nullable(DateTime()),
  pausedAt: Nullable(DateTime()),
});
const OrderItem = Type.Object({
  routeId: Uuid(),
  position: Type.Integer(),
  routeName: Type.String(),
  type: Type.String(),
});
const Pick = Type.Object({
  rank: Type.Integer(),
  routeId: Uuid(),
  routeName: Type.String(),
  own: Type.Boolean(),
  purchaseId: Nullable(Uuid()),
  blendId: Type.Optional(Nullable(Uuid('set when the route carries traffic as a member of a blend the caller uses'))),
  offerId: Type.Optional(
    Nullable(Uuid("set when the caller's private rate from this accepted offer priced the route")),
  ),
  matchedPrefix: Type.String(),
  matchedOrigin: Nullable(
    Type.String({ description: "The origin of the row that priced it (the caller's), null: the default row" }),
  ),
  destination: Type.String(),
  price: Money(),
  billingIncrement: Type.String(),
  rateBasis: Nullable(Type.String()),
  quality: Type.Number(),
  score: Type.Number(),
  reason: Type.String(),
});
const Id = Type.Object({ id: Uuid() });

export function purchasesRoutes(purchases: PurchasesService, routing: Routing) {
  return (app: App) => {
    app.post(
      '/purchases',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Buy a route (idempotent: buying an active purchase again returns it with 200)',
          body: Type.Object({ routeId: Uuid() }, { additionalProperties: false }),
          response: { 200: Ok(Purchase), 201: Ok(Purchase) },
        },
      },
      async (req, reply) => {
        const { purchase, created } = await purchases.buy(req.principal!.accountId, req.body.routeId);
        return reply.code(created ? 201 : 200).send(ok(purchase));
      },
    );

    app.get(
      '/purchases',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The caller's purchases, newest first",
          querystring: Type.Object({
            ...CursorQuery(),
            status: Type.Optional(
              Type.Union([Type.Literal('active'), Type.Literal('paused'), Type.Literal('cancelled')]),
            ),
          }),
          response: { 200: CursorPage(Purchase) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        return cursorPage(await purchases.list(req.principal!.accountId, { ...req.query, limit }), limit);
      },
    );

    app.get(
      '/purchases/routing-order',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The caller's routing order (tried first, before Smart Routing)",
          response: { 200: Ok(Type.Array(OrderItem)) },
        },
      },
      async (req) => ok(await purchases.routingOrder(req.principal!.accountId)),
    );

    app.put(
      '/purchases/routing-order',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Replace the routing order with purchased or own routes, first choice first',
          body: Type.Object({ routeIds: Type.Array(Uuid(), { maxItems: 1000 }) }, { additionalProperties: false }),
          response: { 200: Ok(Type.Array(OrderItem)) },
        },
      },
      async (req) => ok(await purchases.setRoutingOrder(req.principal!.accountId, req.body.routeIds)),
    );

    app.get(
      '/purchases/route-for',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'The route a call or message to this number would take first, and the next two',
          querystring: Type.Object({
            number: Type.String({ minLength: 1, maxLength: 32 }),
            type: Type.Optional(Type.Union([Type.Literal('voice'), Type.Literal('sms')])),
            strategy: Type.Optional(
              Type.Union([Type.Literal('cheapest'), Type.Literal('best_quality'), Type.Literal('balanced')]),
            ),
            from: Type.Optional(
              Type.String({ pattern: '^\\+?\\d{1,15}$', description: "The caller's number, for origin-based rates" }),
            ),
          }),
          response: { 200: Ok(Type.Object({ number: Type.String(), route: Pick, backups: Type.Array(Pick) })) },
        },
      },
      async (req) =>
        ok(
          await routing.routeFor({
            accountId: req.principal!.accountId,
            number: req.query.number,
            type: req.query.type ?? 'voice',
            strategy: req.query.strategy ?? 'cheapest',
            from: req.query.from ?? null,
          }),
        ),
    );

    app.get(
      '/purchases/failover',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "First choice and backups per destination prefix of the caller's purchased and own routes",
          description:
            "One row per country prefix found in the decks of the caller's active purchases and own active routes of `type` " +
            '(optionally only prefixes starting with `prefix`), ordered by prefix and offset-paged. `first` and `backups` (at most two: ' +
            'a call tries at most three routes) are in the order a call to a number starting with that prefix tries them: the routing ' +
            "order first, then `strategy`. Each route is priced at its own longest prefix covering the row's prefix.",
          querystring: Type.Object({
            ...OffsetQuery(100, 1000),
            type: Type.Optional(Type.Union([Type.Literal('voice'), Type.Literal('sms')])),
            strategy: Type.Optional(
              Type.Union([Type.Literal('cheapest'), Type.Literal('best_quality'), Type.Literal('balanced')]),
            ),
            prefix: Type.Optional(Type.String({ pattern: '^\\d{1,15}$' })),
          }),
          response: {
            200: Ok(
              Type.Object({
                type: Type.String(),
                strategy: Type.String(),
                total: Type.Integer(),
                limit: Type.Integer(),
                offset: Type.Integer(),
                rows: Type.Array(
                  Type.Object({
                    prefix: Type.String(),
                    destination: Type.String(),
                    first: Pick,
                    backups: Type.Array(Pick),
                  }),
                ),
              }),
            ),
          },
        },
      },
      async (req) =>
        ok(
          await routing.failover({
            accountId: req.principal!.accountId,
            type: req.query.type ?? 'voice',
            strategy: req.query.strategy ?? 'cheapest',
            ...(req.query.prefix === undefined ? {} : { prefix: req.query.prefix }),
            limit: req.query.limit ?? 100,
            offset: req.query.offset ?? 0,
          }),
        ),
    );

    app.get(
      '/purchases/:id',
      {
        config: { access: READ },
        schema: { tags: TAGS, summary: 'One purchase', params: Id, response: { 200: Ok(Purchase) } },
      },
      async (req) => ok(await purchases.get(req.principal!.accountId, req.params.id)),
    );

    app.get(
      '/purchases/:id/usage',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary:
            "The caller's traffic and spend on a purchased route (sub-accounts included; a blend counts its members)",
          params: Id,
          querystring: Type.Object({ days: Type.Optional(Type.Integer({ minimum: 1, maximum: 366, default: 30 })) }),
          response: {
            200: Ok(
              Type.Object({
                purchaseId: Uuid(),
                routeId: Uuid(),
                days: Type.Integer(),
                since: DateTime(),
                calls: Type.Integer(),
                answeredCalls: Type.Integer(),
                billedMinutes: Type.Number({ description: 'display number' }),
                messages: Type.Integer({ description: 'SMS segments' }),
                spend: Money('what the caller and its sub-accounts were charged'),
              }),
            ),
          },
        },
      },
      async (req) => ok(await purchases.usage(req.principal!.accountId, req.params.id, req.query.days ?? 30)),
    );

    app.get(
      '/purchases/:id/upcoming-rate-changes',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Increases and removals scheduled on the purchased route, soonest first',
          params: Id,
          response: {
            200: Ok(
              Type.Array(
                Type.Object({
                  id: Uuid(),
                  prefix: Type.String(),
                  mccMnc: Nullable(Type.String()),
                  origin: Nullable(Type.String()),
                  kind: Type.String(),
                  oldRate: Nullable(Money()),
                  newRate: Nullable(Money()),
                  effectiveAt: DateTime(),
                  status: Type.String(),
                  acceptedAt: Nullable(DateTime()),
                }),
              ),
            ),
          },
        },
      },
      async (req) => ok(await purchases.upcomingRateChanges(req.principal!.accountId, req.params.id)),
    );

    app.post(
      '/purchases/:id/accept-rate',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Accept a scheduled rate increase early (one change, or every scheduled change of the route)',
          description:
            "Records the buyer's consent to a scheduled increase or removal before it comes into force: `changeId` accepts one change " +
            '(404 when it is not a scheduled, future change of the purchased route); without it every change scheduled on the route is ' +
            'accepted. Accepting again keeps the first time. Acceptance shows as `acceptedAt` in `GET /purchases/{id}/upcoming-rate-changes`; ' +
            'it does not move the change or the price: one deck serves every buyer, so the new rate applies to all at its `effectiveAt`.',
          params: Id,
          body: Type.Object({ changeId: Type.Optional(Uuid()) }, { additionalProperties: false }),
          response: {
            200: Ok(
              Type.Object({
                purchaseId: Uuid(),
                routeId: Uuid(),
                accepted: Type.Array(Type.Object({ changeId: Uuid(), acceptedAt: DateTime() })),
              }),
            ),
          },
        },
        // The body is optional: a POST without one accepts every scheduled change.
        preValidation: async (req) => {
          req.body ??= {};
        },
      },
      async (req) => ok(await purchases.acceptRate(req.principal!.accountId, req.params.id, req.body.changeId ?? null)),
    );

    app.post(
      '/purchases/:id/cancel',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Cancel a purchase (also leaves the routing order)',
          params: Id,
          response: { 200: Ok(Purchase) },
        },
      },
      async (req) => ok(await purchases.cancel(req.principal!.accountId, req.params.id)),
    );

    app.patch(
      '/purchases/:id',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Pause or resume a purchase',
          description:
            '`status` `paused`: the route carries no new call or message of the buyer and its purchase SIP credentials stop ' +
            'authenticating; calls in progress go on and settle against their holds as they started; the routing-order position is kept. ' +
            '`active` resumes it (400 when the route is no longer active). Setting the state it is in returns it unchanged; a cancelled purchase answers 400.',
          params: Id,
          body: Type.Object(
            { status: Type.Union([Type.Literal('active'), Type.Literal('paused')]) },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Purchase) },
        },
      },
      async (req) =>
        ok(await purchases.setPaused(req.principal!.accountId, req.params.id, req.body.status === 'paused')),
    );

    app.patch(
      '/purchases/:id/routing-priority',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: "Set the purchase's position in the routing order",
          params: Id,
          body: Type.Object({ priority: Type.Integer({ minimum: 1, maximum: 1000 }) }, { additionalProperties: false }),
          response: { 200: Ok(Purchase) },
        },
      },
      async (req) => ok(await purchases.setPriority(req.principal!.accountId, req.params.id, req.body.priority)),
    );

    app.delete(
      '/purchases/:id/routing-priority',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Take the purchase out of the routing order',
          params: Id,
          response: { 200: Ok(Purchase) },
        },
      },
      async (req) => ok(await purchases.setPriority(req.principal!.accountId, req.params.id, null)),
    );
  };
}
