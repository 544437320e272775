import { Type } from 'typebox';
import type { App } from '../../../http/app.js';
import { DateTime, Money, Nullable, Ok, ok } from '../../../http/envelope.js';
import type { MarketsService } from './service.js';

const Item = Type.Object({
  slug: Type.String(),
  country: Type.String(),
  countryCode: Type.String({ description: 'dial code' }),
  routes: Type.Integer(),
  lowest: Money('seller list price before the platform fee'),
  lowestBand: Type.Union([Type.Literal('mobile'), Type.Literal('fixed'), Type.Literal('countryWide')]),
  unit: Type.Union([Type.Literal('min'), Type.Literal('msg')]),
});

const RouteType = Type.Union([Type.Literal('voice'), Type.Literal('sms')]);
const Summary = Type.Object({
  routes: Type.Integer({ description: 'public active routes' }),
  destinations: Type.Integer({ description: 'countries with a live public route' }),
  voiceRoutes: Type.Integer(),
  smsRoutes: Type.Integer(),
  hasRoutes: Type.Boolean(),
  hasActivityData: Type.Boolean({ description: 'at least 50 real buyer calls on public routes in 7 days' }),
  capacity: Nullable(Type.Integer({ description: 'signed-in only: stated channels of public voice routes' })),
  avgAsr: Nullable(
    Type.Number({ description: 'signed-in only: mean stated ASR (percent) of public voice routes; display number' }),
  ),
  measuredAsr: Nullable(Type.Number({ description: 'percent, real buyer calls over 7 days; null below 50 calls' })),
  measuredAsrSample: Type.Integer({ description: 'calls behind measuredAsr' }),
  avgAcd: Nullable(Type.Number({ description: 'signed-in only: mean stated ACD (seconds) of public voice routes' })),
  avgPrice: Nullable(
    Money("signed-in only: mean of public voice routes' lowest list price per minute, before the fee"),
  ),
  topMovers: Type.Array(
    Type.Object(
      { slug: Type.String(), country: Type.String(), countryCode: Type.String(), newRoutes: Type.Integer() },
      { description: 'countries with most new public listings in 7 days' },
    ),
  ),
  marketStatus: Type.Union([Type.Literal('open'), Type.Literal('empty')]),
  asOf: DateTime(),
});
const Band = Type.Object({ key: Type.String(), from: Money(), routes: Type.Integer() });
const Detail = Type.Object({
  ...Item.properties,
  type: RouteType,
  highest: Money(),
  bands: Type.Array(Band),
  operators: Type.Array(Type.Object({ name: Type.String(), from: Money(), routes: Type.Integer() })),
  cliTypes: Type.Array(Type.String()),
  increments: Type.Array(Type.String()),
  routesWithStatedAsr: Type.Integer(),
  otherBreakouts: Type.Integer(),
  topRoutes: Type.Array(
    Type.Object({
      rank: Type.Integer(),
      from: Money(),
      mobileFrom: Nullable(Money()),
      cliType: Nullable(Type.String()),
      billingIncrement: Type.String(),
      routeType: RouteType,
      statedAsr: Nullable(Type.Number()),
      statedAcd: Nullable(Type.Number()),
    }),
  ),
  related: Type.Array(Type.Object({ slug: Type.String(), country: Type.String(), lowest: Money() })),
});

export function marketsRoutes(markets: MarketsService) {
  return (app: App) => {
    app.get(
      '/markets/summary',
      {
        config: { access: { auth: 'optional' } },
        schema: {
          tags: ['Markets'],
          summary:
            'Marketplace summary; capacity, avgAsr, avgAcd and avgPrice only for signed-in callers (null otherwise)',
          response: { 200: Ok(Summary) },
        },
      },
      async (req) => ok(await markets.summary(req.principal !== undefined && req.principal !== null)),
    );

    app.get(
      '/markets/destinations/:slug',
      {
        config: { access: { auth: 'public' } },
        schema: {
          tags: ['Markets'],
          summary:
            'One destination by slug: bands, operators, the five cheapest anonymous routes (stated ASR and ACD, list prices before the fee)',
          description:
            '404 when the destination has no live public route of `type` (default voice). The slug is the one of `GET /markets/destinations`.',
          params: Type.Object({ slug: Type.String({ pattern: '^[a-z0-9-]{1,80}$' }) }),
          querystring: Type.Object({ type: Type.Optional(RouteType) }),
          response: { 200: Ok(Detail) },
        },
      },
      async (req) => ok(await markets.destination(req.params.slug, req.query.type ?? 'voice')),
    );

    app.get(
      '/markets/destinations',
      {
        config: { access: { auth: 'public' } },
        schema: {
          tags: ['Markets'],
          summary: 'Destinations with live public routes (rebuilt at most every 10 minutes)',
          querystring: Type.Object({ type: Type.Optional(Type.Union([Type.Literal('voice'), Type.Literal('sms')])) }),
          response: {
            200: Ok(
              Type.Object({
                voice: Type.Optional(Type.Array(Item)),
                sms: Type.Optional(Type.Array(Item)),
                updatedAt: DateTime(),
              }),
            ),
          },
        },
      },
      async (req, reply) => {
        const d = await markets.destinations();
        void reply.header('cache-control', 'public, max-age=600');
        const type = req.query.type;
        return ok({
          ...(type === undefined || type === 'voice' ? { voice: d.voice } : {}),
          ...(type === undefined || type === 'sms' ? { sms: d.sms } : {}),
          updatedAt: d.updatedAt,
        });
      },
    );
  };
}
