import { Type } from 'typebox';
import type { App } from '../../../http/app.js';
import { CursorPage, DateTime, Money, Nullable, Ok, OffsetPage, Uuid, ok } from '../../../http/envelope.js';
import { cursorPage, CursorQuery, OffsetQuery } from '../../../http/pagination.js';
import { MAX_DESTINATIONS } from './service.js';
import type { OffersService } from './service.js';

const TAGS = ['Offers'];
const READ = { auth: 'required', scope: 'routes:read' } as const;
const WRITE = { auth: 'required', scope: 'offers:write' } as const;

const Side = Type.Union([Type.Literal('buyer'), Type.Literal('seller')]);
const Status = Type.Union([
  Type.Literal('pending'),
  Type.Literal('countered'),
  Type.Literal('accepted'),
  Type.Literal('declined'),
  Type.Literal('expired'),
]);
const RatesIn = Type.Array(
  Type.Object(
    {
      prefix: Type.String({ pattern: '^\\d{1,15}$', description: "a destination prefix the route's rates cover" }),
      rate: Type.String({
        pattern: '^\\d{1,14}(\\.\\d{1,6})?$',
        description: 'seller rate per minute (voice) or per message (SMS), before the platform fee',
      }),
    },
    { additionalProperties: false },
  ),
  { minItems: 1, maxItems: MAX_DESTINATIONS },
);
const ExpiresIn = Type.Integer({
  minimum: 1,
  maximum: 720,
  description: 'hours the proposal stays open (default 72)',
});

const Offer = Type.Object({
  id: Uuid(),
  routeId: Uuid(),
  routeName: Type.String(),
  type: Type.String(),
  role: Side,
  status: Status,
  proposedBy: Side,
  awaiting: Nullable(Side),
  rates: Type.Array(
    Type.Object({
      prefix: Type.String(),
      rate: Money('seller rate'),
      buyerPrice: Money('what the buyer pays per unit: rate plus the platform fee'),
    }),
  ),
  volume: Nullable(Type.Integer({ description: 'minutes (voice) or messages (SMS) a month the buyer expects' })),
  note: Nullable(Type.String()),
  validDays: Type.Integer(),
  rounds: Type.Integer(),
  expiresAt: DateTime(),
  decidedAt: Nullable(DateTime()),
  declinedBy: Nullable(Side),
  createdAt: DateTime(),
  updatedAt: DateTime(),
});
const Id = Type.Object({ id: Uuid() });

export function offersRoutes(offers: OffersService) {
  return (app: App) => {
    app.post(
      '/offers',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: "Ask a route's seller for prices on destinations and a volume",
          description:
            'One open offer per buyer and route (409 otherwise). The seller is told (`offer.received`, kind `request`) and may counter, ' +
            'accept or decline. Accepted rates become private rates for the buyer on that route for `validDays` (default 30), used for ' +
            'every call or message under their prefixes on the bought route. Blends cannot be offered on.',
          body: Type.Object(
            {
              routeId: Uuid(),
              rates: RatesIn,
              volume: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000_000 })),
              note: Type.Optional(Type.String({ maxLength: 1000 })),
              validDays: Type.Optional(Type.Integer({ minimum: 1, maximum: 366 })),
              expiresInHours: Type.Optional(ExpiresIn),
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Offer) },
        },
      },
      async (req, reply) => reply.code(201).send(ok(await offers.create(req.principal!.accountId, req.body))),
    );

    app.get(
      '/offers',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Offers the caller asked for or received, newest first',
          querystring: Type.Object({
            ...CursorQuery(),
            role: Type.Optional(Side),
            status: Type.Optional(Status),
            routeId: Type.Optional(Uuid()),
          }),
          response: { 200: CursorPage(Offer) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        return cursorPage(await offers.list(req.principal!.accountId, { ...req.query, limit }), limit);
      },
    );

    app.get(
      '/offers/private-rates',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Private rates in force from accepted offers (as buyer, or granted as seller)',
          querystring: Type.Object({
            ...OffsetQuery(100, 1000),
            role: Type.Optional(Side),
            routeId: Type.Optional(Uuid()),
          }),
          response: {
            200: OffsetPage(
              Type.Object({
                routeId: Uuid(),
                routeName: Type.String(),
                type: Type.String(),
                prefix: Type.String(),
                rate: Money('seller rate'),
                buyerPrice: Money(),
                offerId: Uuid(),
                validFrom: DateTime(),
                validUntil: DateTime(),
              }),
            ),
          },
        },
      },
      async (req) =>
        ok(
          await offers.privateRates(req.principal!.accountId, {
            role: req.query.role ?? 'buyer',
            ...(req.query.routeId === undefined ? {} : { routeId: req.query.routeId }),
            limit: req.query.limit ?? 100,
            offset: req.query.offset ?? 0,
          }),
        ),
    );

    app.get(
      '/offers/:id',
      {
        config: { access: READ },
        schema: { tags: TAGS, summary: 'One offer', params: Id, response: { 200: Ok(Offer) } },
      },
      async (req) => ok(await offers.get(req.principal!.accountId, req.params.id)),
    );

    app.post(
      '/offers/:id/counter',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Answer the proposal on the table with your own prices',
          description:
            'Only the side the offer awaits (409 otherwise); the rates replace the proposal and the other side is told (`offer.received`, kind `counter`).',
          params: Id,
          body: Type.Object(
            {
              rates: RatesIn,
              note: Type.Optional(Type.String({ maxLength: 1000 })),
              expiresInHours: Type.Optional(ExpiresIn),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Offer) },
        },
      },
      async (req) => ok(await offers.counter(req.principal!.accountId, req.params.id, req.body)),
    );

    app.post(
      '/offers/:id/accept',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Accept the proposal on the table: it becomes the buyer’s private rates at once',
          params: Id,
          response: { 200: Ok(Offer) },
        },
      },
      async (req) => ok(await offers.accept(req.principal!.accountId, req.params.id)),
    );

    app.post(
      '/offers/:id/decline',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'End an open offer (the buyer withdraws it, or the seller refuses it)',
          params: Id,
          response: { 200: Ok(Offer) },
        },
      },
      async (req) => ok(await offers.decline(req.principal!.accountId, req.params.id)),
    );
  };
}
