import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { DateTime, Nullable, Ok, ok } from '../../http/envelope.js';
import type { LookupService } from './service.js';

const Pricing = {
  rate: Type.String({ description: 'USD, 6 places: per minute (voice) or per message (SMS)' }),
  currency: Type.Literal('USD'),
  unit: Type.Union([Type.Literal('min'), Type.Literal('msg')]),
  billingIncrement: Nullable(Type.String()),
  destination: Type.String(),
  routeId: Type.String({ format: 'uuid' }),
  routesServing: Type.Integer(),
};

const Lookup = Type.Object({
  input: Type.String(),
  valid: Type.Boolean(),
  reason: Nullable(Type.String()),
  e164: Nullable(Type.String()),
  internationalFormat: Nullable(Type.String()),
  country: Nullable(
    Type.Object({
      iso: Nullable(Type.String()),
      name: Type.String(),
      dialCode: Type.String(),
      basis: Type.Union([Type.Literal('rate_decks'), Type.Literal('dial_code')]),
    }),
  ),
  numberType: Type.Union([
    Type.Literal('mobile'),
    Type.Literal('fixed'),
    Type.Literal('toll_free'),
    Type.Literal('premium'),
    Type.Literal('unknown'),
  ]),
  numberTypeConfidence: Type.Number({ minimum: 0, maximum: 1 }),
  operator: Nullable(Type.String()),
  network: Nullable(
    Type.Object({ mccMnc: Nullable(Type.String()), operator: Type.String(), source: Type.Literal('range') }),
  ),
  matchedPrefix: Nullable(Type.String()),
  risk: Type.Object({
    blocked: Type.Boolean(),
    sanctioned: Type.Boolean(),
    highRisk: Type.Boolean(),
    reasons: Type.Array(
      Type.Union([
        Type.Literal('embargoed'),
        Type.Literal('premium_rate'),
        Type.Literal('satellite'),
        Type.Literal('special_service'),
        Type.Literal('short_code'),
      ]),
    ),
  }),
  pricing: Type.Object({
    voice: Nullable(Type.Object(Pricing)),
    sms: Nullable(
      Type.Object({
        ...Pricing,
        network: Type.Object({
          mccMnc: Nullable(Type.String()),
          operator: Nullable(Type.String()),
          source: Type.Union([Type.Literal('range'), Type.Literal('hlr'), Type.Literal('none')]),
          rateBasis: Type.Union([Type.Literal('network'), Type.Literal('all_operators'), Type.Literal('country')]),
        }),
        countryRate: Nullable(Type.String()),
      }),
    ),
  }),
  method: Type.Literal('prefix'),
  cachedAt: DateTime(),
});

export function lookupRoutes(svc: LookupService) {
  return (app: App) => {
    app.get(
      '/lookup/:number',
      {
        config: { access: { auth: 'optional', scope: 'routes:read' }, rateLimit: { points: 60, seconds: 60 } },
        schema: {
          tags: ['Number lookup'],
          summary: 'Country, line type, network, risk and cheapest prices of a number, from offline data',
          description:
            'A malformed number answers 200 with valid: false and a reason. No carrier is queried; answers are cached up to 10 minutes.',
          params: Type.Object({ number: Type.String({ maxLength: 64, description: '+ or 00, then the digits' }) }),
          response: { 200: Ok(Lookup) },
        },
      },
      async (req) =>
        ok(await svc.lookup(req.params.number, req.principal ? { accountId: req.principal.accountId } : null)),
    );
  };
}
