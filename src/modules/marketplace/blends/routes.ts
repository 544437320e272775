import { Type } from 'typebox';
import type { App } from '../../../http/app.js';
import { CursorPage, DateTime, Money, Nullable, Ok, OffsetPage, Uuid, ok } from '../../../http/envelope.js';
import { cursorPage, CursorQuery, OffsetQuery } from '../../../http/pagination.js';
import { MAX_MEMBERS, MIN_MEMBERS } from './service.js';
import type { BlendsService } from './service.js';

const TAGS = ['Route blends'];
const READ = { auth: 'required', scope: 'routes:read' } as const;
const WRITE = { auth: 'required', scope: 'routes:write' } as const;

const RouteType = Type.Union([Type.Literal('voice'), Type.Literal('sms')]);
const Strategy = Type.Union(
  [Type.Literal('percent'), Type.Literal('priority'), Type.Literal('least_cost'), Type.Literal('quality')],
  {
    description:
      'percent: traffic split by `percent` shares (adding up to 100); priority: members in the order given; ' +
      'least_cost: the cheapest covering member; quality: the best measured (else stated) quality score. ' +
      'Members that do not cover a destination are skipped, and the others follow as failover.',
  },
);
const MarginIn = Type.String({
  pattern: '^\\d{1,14}(\\.\\d{1,6})?$',
  description:
    "added to the member's seller rate per minute (voice) or per message (SMS), before the platform fee; only on blends of own routes",
});
const MemberIn = Type.Object(
  {
    routeId: Uuid('an own route, or a route the caller bought'),
    percent: Type.Optional(Type.Integer({ minimum: 0, maximum: 100, description: 'percent rule only' })),
  },
  { additionalProperties: false },
);
const Members = Type.Array(MemberIn, {
  minItems: MIN_MEMBERS,
  maxItems: MAX_MEMBERS,
  description: 'in priority order (the first is position 1)',
});

const Blend = Type.Object({
  id: Uuid('also the listing id: buy, order and grant it as a route'),
  type: RouteType,
  name: Type.String(),
  visibility: Type.String(),
  status: Type.String(),
  own: Type.Boolean(),
  strategy: Strategy,
  margin: Money(),
  members: Type.Array(
    Type.Object({
      position: Type.Integer(),
      routeId: Nullable(Uuid('the owner only; null for buyers')),
      percent: Type.Integer(),
    }),
  ),
  createdAt: DateTime(),
  updatedAt: DateTime(),
});

const Member = Type.Object({
  position: Type.Integer(),
  routeId: Nullable(Uuid('the owner only')),
  routeName: Nullable(Type.String({ description: 'the owner only' })),
  matchedPrefix: Type.String(),
  destination: Type.String(),
  price: Money('buyer price per unit: member rate plus margin plus platform fee'),
  billingIncrement: Type.String(),
  quality: Type.Number(),
  share: Type.Number({ description: 'percent of traffic this member carries under the rule' }),
});

const Id = Type.Object({ id: Uuid() });

export function blendsRoutes(blends: BlendsService) {
  return (app: App) => {
    app.post(
      '/routes/blends',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Compose two to ten routes into one blend with a rule',
          description:
            "A blend is a listing: its id is bought (`POST /purchases`), put in the routing order and granted like a route's. " +
            'Calls and messages on it go to one member by `strategy` and are billed as that member plus `margin`. ' +
            'A blend holding routes the caller bought is for its own traffic: private, margin 0, never granted. Blends cannot be route-checked.',
          body: Type.Object(
            {
              type: RouteType,
              name: Type.String({ minLength: 1, maxLength: 120 }),
              visibility: Type.Optional(Type.Union([Type.Literal('public'), Type.Literal('private')])),
              strategy: Strategy,
              margin: Type.Optional(MarginIn),
              members: Members,
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Blend) },
        },
      },
      async (req, reply) => reply.code(201).send(ok(await blends.create(req.principal!.accountId, req.body))),
    );

    app.get(
      '/routes/blends',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The caller's blends, newest first",
          querystring: Type.Object({ ...CursorQuery(), type: Type.Optional(RouteType) }),
          response: { 200: CursorPage(Blend) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        return cursorPage(await blends.list(req.principal!.accountId, { ...req.query, limit }), limit);
      },
    );

    app.get(
      '/routes/blends/:id',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'One blend (own, public or granted)',
          params: Id,
          response: { 200: Ok(Blend) },
        },
      },
      async (req) => ok(await blends.get(req.principal!.accountId, req.params.id)),
    );

    app.patch(
      '/routes/blends/:id',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: "Change an own blend's name, visibility, rule, margin or members",
          description:
            '`members` replaces the whole list. Changes apply to calls and messages set up after them; calls in progress keep their member and price.',
          params: Id,
          body: Type.Object(
            {
              name: Type.Optional(Type.String({ minLength: 1, maxLength: 120 })),
              visibility: Type.Optional(Type.Union([Type.Literal('public'), Type.Literal('private')])),
              strategy: Type.Optional(Strategy),
              margin: Type.Optional(MarginIn),
              members: Type.Optional(Members),
            },
            { additionalProperties: false, minProperties: 1 },
          ),
          response: { 200: Ok(Blend) },
        },
      },
      async (req) => ok(await blends.update(req.principal!.accountId, req.params.id, req.body)),
    );

    app.delete(
      '/routes/blends/:id',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Delete an own blend that no other account holds an active purchase of (409 otherwise)',
          params: Id,
          response: { 200: Ok(Type.Object({ id: Uuid(), deleted: Type.Literal(true) })) },
        },
      },
      async (req) => ok(await blends.remove(req.principal!.accountId, req.params.id)),
    );

    app.get(
      '/routes/blends/:id/preview',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Which member carries traffic to a number, at what price, and each covering member’s share',
          description:
            'The percent rule draws as a call would: `resolved` may differ between two previews; `share` gives the split.',
          params: Id,
          querystring: Type.Object({
            number: Type.String({ minLength: 1, maxLength: 32, description: 'E.164, with or without +' }),
            mccMnc: Type.Optional(Type.String({ pattern: '^\\d{3}-\\d{2,3}$', description: 'SMS: the network' })),
          }),
          response: {
            200: Ok(
              Type.Object({
                blendId: Uuid(),
                number: Type.String(),
                type: RouteType,
                strategy: Strategy,
                margin: Money(),
                resolved: Nullable(Member),
                members: Type.Array(Member, { description: 'covering members in the order the rule tries them' }),
                notCovering: Type.Integer({ description: 'usable members whose deck does not cover the number' }),
              }),
            ),
          },
        },
      },
      async (req) =>
        ok(await blends.preview(req.principal!.accountId, req.params.id, req.query.number, req.query.mccMnc ?? null)),
    );

    app.get(
      '/routes/blends/:id/rates',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The blend's buyer price per destination prefix",
          description:
            "One row per country prefix of the members' decks: `price` is what the rule's first member costs (percent rule: the dearest member with a share, " +
            'the most a unit can cost), with the lowest and highest covering member price; margin and platform fee included.',
          params: Id,
          querystring: Type.Object({
            ...OffsetQuery(100, 1000),
            prefix: Type.Optional(Type.String({ pattern: '^\\d{1,15}$' })),
          }),
          response: {
            200: OffsetPage(
              Type.Object({
                prefix: Type.String(),
                destination: Type.String(),
                price: Money(),
                billingIncrement: Type.String(),
                lowest: Money(),
                highest: Money(),
                members: Type.Integer(),
              }),
            ),
          },
        },
      },
      async (req) =>
        ok(
          await blends.rates(req.principal!.accountId, req.params.id, {
            ...(req.query.prefix === undefined ? {} : { prefix: req.query.prefix }),
            limit: req.query.limit ?? 100,
            offset: req.query.offset ?? 0,
          }),
        ),
    );
  };
}
