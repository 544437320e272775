import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { DateTime, Money, Ok, ok } from '../../http/envelope.js';
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

export function marketsRoutes(markets: MarketsService) {
  return (app: App) => {
    app.get('/markets/destinations', {
      config: { access: { auth: 'public' } },
      schema: {
        tags: ['Markets'],
        summary: 'Destinations with live public routes (rebuilt at most every 10 minutes)',
        querystring: Type.Object({ type: Type.Optional(Type.Union([Type.Literal('voice'), Type.Literal('sms')])) }),
        response: { 200: Ok(Type.Object({ voice: Type.Optional(Type.Array(Item)), sms: Type.Optional(Type.Array(Item)), updatedAt: DateTime() })) },
      },
    }, async (req, reply) => {
      const d = await markets.destinations();
      void reply.header('cache-control', 'public, max-age=600');
      const type = req.query.type;
      return ok({
        ...(type === undefined || type === 'voice' ? { voice: d.voice } : {}),
        ...(type === undefined || type === 'sms' ? { sms: d.sms } : {}),
        updatedAt: d.updatedAt,
      });
    });
  };
}
