import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { DateTime, Money, Nullable, Ok, OffsetPage, Uuid, ok } from '../../http/envelope.js';
import { OffsetQuery } from '../../http/pagination.js';
import type { Routing } from './routing.js';
import type { RoutesService } from './service.js';

const TAGS = ['Routes'];
const READ = { auth: 'required', scope: 'routes:read' } as const;
const WRITE = { auth: 'required', scope: 'routes:write' } as const;

const RouteType = Type.Union([Type.Literal('voice'), Type.Literal('sms')]);
const StrategyT = Type.Union([Type.Literal('cheapest'), Type.Literal('best_quality'), Type.Literal('balanced')]);
const Increment = Type.String({ pattern: '^\\d{1,4}/\\d{1,4}$', description: '`<first>/<next>` seconds, e.g. 60/60, 1/1, 6/6, 30/6' });
const Country = Type.String({ pattern: '^[A-Z]{2}$', description: 'ISO 3166 alpha-2; omit or null for A-Z' });
const Digits = Type.String({ minLength: 1, maxLength: 32, description: 'E.164 number, with or without +' });

const EndpointIn = Type.Object({
  host: Type.String({ minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9.:\\-\\[\\]]+$' }),
  port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
  transport: Type.Optional(Type.Union([Type.Literal('udp'), Type.Literal('tcp'), Type.Literal('tls')])),
  techPrefix: Type.Optional(Type.String({ pattern: '^[0-9#*]{0,10}$' })),
  username: Type.Optional(Type.String({ maxLength: 128 })),
  password: Type.Optional(Type.String({ maxLength: 128, description: 'write-only: never returned' })),
  priority: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  weight: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  label: Type.Optional(Type.String({ maxLength: 60, description: 'at most 60 characters; empty clears' })),
}, { additionalProperties: false });

const SmsDeliveryIn = Type.Union([
  Type.Object({
    kind: Type.Literal('smpp'),
    host: Type.String({ minLength: 1, maxLength: 253 }),
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
    systemId: Type.String({ minLength: 1, maxLength: 16 }),
    password: Type.String({ maxLength: 64, description: 'write-only' }),
    systemType: Type.Optional(Type.String({ maxLength: 13 })),
    tls: Type.Optional(Type.Boolean()),
  }, { additionalProperties: false }),
  Type.Object({
    kind: Type.Literal('http'),
    url: Type.String({ minLength: 8, maxLength: 2048 }),
    authorization: Type.Optional(Type.String({ maxLength: 1024, description: 'write-only Authorization header value' })),
  }, { additionalProperties: false }),
]);

const RouteIn = Type.Object({
  type: RouteType,
  name: Type.String({ minLength: 1, maxLength: 120 }),
  country: Type.Optional(Nullable(Country)),
  visibility: Type.Optional(Type.Union([Type.Literal('public'), Type.Literal('private')], { description: 'private: visible to and buyable by nobody else unless granted access' })),
  expectedAsr: Type.Optional(Type.Number({ minimum: 0, maximum: 100, description: 'percent' })),
  expectedAcd: Type.Optional(Type.Number({ minimum: 0, maximum: 100000, description: 'seconds' })),
  expectedPdd: Type.Optional(Type.Integer({ minimum: 0, maximum: 60000, description: 'milliseconds' })),
  cliType: Type.Optional(Type.String({ maxLength: 32 })),
  billingIncrement: Type.Optional(Increment),
  capacity: Type.Optional(Type.Integer({ minimum: 1, maximum: 100000 })),
  maxCps: Type.Optional(Type.Integer({ minimum: 1, maximum: 10000 })),
  noticeDays: Type.Optional(Type.Integer({ minimum: 0, maximum: 90, description: 'notice before increases take effect (default 7)' })),
  endpoints: Type.Optional(Type.Array(EndpointIn, { maxItems: 10, description: 'voice: SIP endpoints' })),
  smsDelivery: Type.Optional(SmsDeliveryIn),
}, { additionalProperties: false });

const EndpointOut = Type.Object({
  id: Uuid(), host: Type.String(), port: Type.Integer(), transport: Type.String(), techPrefix: Type.String(),
  username: Nullable(Type.String()), hasPassword: Type.Boolean(), priority: Type.Integer(), weight: Type.Integer(), label: Nullable(Type.String()),
});

const Route = Type.Object({
  id: Uuid(),
  type: RouteType,
  name: Type.String(),
  country: Nullable(Type.String()),
  visibility: Type.String(),
  status: Type.String(),
  own: Type.Boolean({ description: 'the caller is the seller; seller identity is never shown otherwise' }),
  expectedAsr: Nullable(Type.Number()),
  expectedAcd: Nullable(Type.Number()),
  expectedPdd: Nullable(Type.Integer()),
  cliType: Nullable(Type.String()),
  billingIncrement: Type.String(),
  capacity: Nullable(Type.Integer()),
  maxCps: Nullable(Type.Integer()),
  noticeDays: Type.Integer(),
  rateCount: Type.Integer(),
  lowestRate: Nullable(Money('lowest country rate in force, before the platform fee')),
  measured: Nullable(Type.Object({}, { additionalProperties: true, description: 'ASR, ACD, NER, median PDD on buyer calls; null until 50 calls from 2 buyers' })),
  routeChecks: Nullable(Type.Object({}, { additionalProperties: true })),
  endpoints: Nullable(Type.Array(EndpointOut, { description: 'own routes only; passwords never returned' })),
  smsDeliveryKind: Nullable(Type.String({ description: 'own routes only: smpp or http' })),
  createdAt: DateTime(),
});

const RateRow = Type.Object({
  prefix: Type.String(), destination: Type.String(), rate: Money(), billingIncrement: Type.String(),
  mccMnc: Nullable(Type.String({ description: 'SMS per-network price; null for the country price' })), effectiveFrom: DateTime(),
});

const UploadResult = Type.Object({
  routeId: Uuid(), version: Type.Integer(), rows: Type.Integer(), increases: Type.Integer(), decreases: Type.Integer(),
  newDestinations: Type.Integer(), removals: Type.Integer(), updates: Type.Integer(), unchanged: Type.Integer(),
  scheduledChanges: Type.Integer({ description: 'increases and removals waiting for their effective time' }),
});

const Resolved = Type.Object({
  rank: Type.Integer(), routeId: Uuid(), routeName: Type.String(), own: Type.Boolean(), purchaseId: Nullable(Uuid()),
  matchedPrefix: Type.String(), destination: Type.String(), price: Money('buyer price per minute or per message, fee included'),
  billingIncrement: Type.String(), rateBasis: Nullable(Type.String()), quality: Type.Number(), score: Type.Number(), reason: Type.String(),
});

const PriceNumber = Type.Object({
  number: Type.String(), type: RouteType, unit: Type.String(), total: Type.Integer(),
  routes: Type.Array(Type.Object({
    destination: Type.String(), matchedPrefix: Type.String(), rate: Money('buyer price (seller rate plus platform fee)'),
    billingIncrement: Type.String(), cliType: Nullable(Type.String()), exchangeScore: Type.Integer({ description: '0..100 quality score from stated figures' }),
  })),
});

const RateChange = Type.Object({
  id: Uuid(), prefix: Type.String(), mccMnc: Nullable(Type.String()), kind: Type.String(), oldRate: Nullable(Money()), newRate: Nullable(Money()),
  effectiveAt: DateTime(), status: Type.String(),
});

const Id = Type.Object({ id: Uuid() });
const ListQuery = Type.Object({
  ...OffsetQuery(),
  type: Type.Optional(RouteType),
  country: Type.Optional(Country),
  maxPrice: Type.Optional(Type.String({ pattern: '^\\d{1,14}(\\.\\d{1,6})?$', description: 'lowest rate at most this' })),
  minStatedAsr: Type.Optional(Type.Number({ minimum: 0, maximum: 100 })),
  sort: Type.Optional(Type.Union([Type.Literal('newest'), Type.Literal('price_asc'), Type.Literal('price_desc'), Type.Literal('stated_asr_desc')])),
});

const SHEET_DOC =
  'Replaces the deck atomically. CSV columns (header row, any order): prefix, destination, rate, increment (empty: route default), ' +
  'effective date (YYYY-MM-DD or ISO date-time), and for SMS mcc_mnc (a per-network price, never above the country price). ' +
  'JSON: `rows` of { prefix, destination, rate, increment, effectiveDate, mccMnc }. Every bad row is reported in `error.details` ' +
  'as { path: "line <n>", message }. Decreases, new destinations and name changes apply at once; increases (and removed ' +
  'destinations) at `increaseEffectiveAt`, else after the route notice period; a row\'s own later effective date is honoured.';

export function routesRoutes(routes: RoutesService, routing: Routing) {
  return (app: App) => {
    app.post('/routes', {
      config: { access: WRITE },
      schema: { tags: TAGS, summary: 'List a new route (voice: SIP endpoints; SMS: SMPP or HTTPS delivery; credentials write-only)', body: RouteIn, response: { 201: Ok(Route) } },
    }, async (req, reply) => reply.code(201).send(ok(await routes.createRoute(req.principal!.accountId, req.body))));

    app.get('/routes', {
      config: { access: READ },
      schema: { tags: TAGS, summary: 'Marketplace routes visible to the caller', querystring: ListQuery, response: { 200: OffsetPage(Route) } },
    }, async (req) => ok(await routes.listRoutes({ ...req.query, viewerId: req.principal!.accountId, sort: req.query.sort ?? 'newest', limit: req.query.limit ?? 25, offset: req.query.offset ?? 0 })));

    app.get('/routes/my/list', {
      config: { access: READ },
      schema: { tags: TAGS, summary: 'The caller\'s own listings', querystring: ListQuery, response: { 200: OffsetPage(Route) } },
    }, async (req) => ok(await routes.listRoutes({ ...req.query, ownOnly: true, viewerId: req.principal!.accountId, sort: req.query.sort ?? 'newest', limit: req.query.limit ?? 25, offset: req.query.offset ?? 0 })));

    app.get('/routes/resolve', {
      config: { access: READ },
      schema: {
        tags: TAGS,
        summary: 'Preview which purchased or own route Smart Routing picks for a number, and why',
        querystring: Type.Object({ number: Digits, type: Type.Optional(RouteType), strategy: Type.Optional(StrategyT), mccMnc: Type.Optional(Type.String({ pattern: '^\\d{3}-\\d{2,3}$' })) }),
        response: { 200: Ok(Type.Object({ number: Type.String(), type: RouteType, strategy: StrategyT, routes: Type.Array(Resolved), explanation: Type.String() })) },
      },
    }, async (req) => ok(await routing.resolve({ accountId: req.principal!.accountId, number: req.query.number, type: req.query.type ?? 'voice', strategy: req.query.strategy ?? 'cheapest', mccMnc: req.query.mccMnc ?? null })));

    app.get('/routes/price-number', {
      config: { access: { auth: 'public' }, rateLimit: { points: 30, seconds: 60 } },
      schema: {
        tags: TAGS,
        summary: 'Public price of a number on every public route, cheapest first (no seller identities)',
        querystring: Type.Object({ number: Digits, type: Type.Optional(RouteType) }),
        response: { 200: Ok(PriceNumber) },
      },
    }, async (req) => ok(await routing.priceNumber(req.query.number, req.query.type ?? 'voice')));

    app.get('/routes/:id', {
      config: { access: READ },
      schema: { tags: TAGS, summary: 'One route', params: Id, response: { 200: Ok(Route) } },
    }, async (req) => ok(await routes.getRoute(req.params.id, req.principal!.accountId)));

    app.get('/routes/:id/rates', {
      config: { access: READ },
      schema: {
        tags: TAGS,
        summary: 'Rates in force (with each network\'s price on per-network SMS sheets)',
        params: Id,
        querystring: Type.Object({ ...OffsetQuery(100, 1000), prefix: Type.Optional(Type.String({ pattern: '^\\d{1,15}$' })) }),
        response: { 200: OffsetPage(RateRow) },
      },
    }, async (req) => ok(await routes.rates(req.params.id, req.principal!.accountId, { prefix: req.query.prefix, limit: req.query.limit ?? 100, offset: req.query.offset ?? 0 })));

    app.post('/routes/:id/rates', {
      config: { access: WRITE },
      // A 200,000-row CSV is around 8 MB.
      bodyLimit: 48 * 1024 * 1024,
      schema: {
        tags: TAGS,
        summary: 'Upload a rate sheet (CSV text or JSON rows)',
        description: SHEET_DOC,
        params: Id,
        body: Type.Object({
          format: Type.Union([Type.Literal('csv'), Type.Literal('json')]),
          csv: Type.Optional(Type.String({ maxLength: 48 * 1024 * 1024 })),
          rows: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }), { maxItems: 500000 })),
          increaseEffectiveAt: Type.Optional(DateTime()),
        }, { additionalProperties: false }),
        response: { 200: Ok(UploadResult) },
      },
    }, async (req) => ok(await routes.uploadSheet(req.principal!.accountId, req.params.id, req.body)));

    app.get('/routes/:id/rate-changes', {
      config: { access: READ },
      schema: { tags: TAGS, summary: 'Scheduled increases and removals of an own route', params: Id, response: { 200: Ok(Type.Array(RateChange)) } },
    }, async (req) => ok(await routes.rateChanges(req.params.id, req.principal!.accountId)));

    app.post('/routes/:id/rate-changes/:changeId/cancel', {
      config: { access: WRITE },
      schema: {
        tags: TAGS,
        summary: 'Withdraw a scheduled increase or removal before it takes effect',
        params: Type.Object({ id: Uuid(), changeId: Uuid() }),
        response: { 200: Ok(Type.Object({ id: Uuid(), status: Type.Literal('cancelled') })) },
      },
    }, async (req) => ok(await routes.cancelRateChange(req.principal!.accountId, req.params.id, req.params.changeId)));

    app.post('/routes/:id/access', {
      config: { access: WRITE },
      schema: {
        tags: TAGS,
        summary: 'Grant another account access to a private route',
        params: Id,
        body: Type.Object({ accountId: Uuid() }, { additionalProperties: false }),
        response: { 200: Ok(Type.Object({ routeId: Uuid(), accountId: Uuid() })) },
      },
    }, async (req) => ok(await routes.grantAccess(req.principal!.accountId, req.params.id, req.body.accountId)));

    app.delete('/routes/:id/access/:accountId', {
      config: { access: WRITE },
      schema: {
        tags: TAGS,
        summary: 'Revoke an access grant',
        params: Type.Object({ id: Uuid(), accountId: Uuid() }),
        response: { 200: Ok(Type.Object({ routeId: Uuid(), accountId: Uuid() })) },
      },
    }, async (req) => ok(await routes.revokeAccess(req.principal!.accountId, req.params.id, req.params.accountId)));
  };
}
