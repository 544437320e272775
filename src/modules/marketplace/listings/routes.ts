import { Type } from 'typebox';
import type { App } from '../../../http/app.js';
import { DateTime, Money, Nullable, Ok, OffsetPage, Uuid, ok } from '../../../http/envelope.js';
import { OffsetQuery } from '../../../http/pagination.js';
import type { Routing } from '../routing/routing.js';
import { uploadSlotHooks } from '../rate-sheets/upload-slots.js';
import { MAX_BULK_ROUTES, ROUTE_SORTS } from './service.js';
import type { RoutesService } from './service.js';

const TAGS = ['Marketplace routes'];
const READ = { auth: 'required', scope: 'routes:read' } as const;
const WRITE = { auth: 'required', scope: 'routes:write' } as const;

const RouteType = Type.Union([Type.Literal('voice'), Type.Literal('sms')]);
const CheckCount = Type.Object({ checks: Type.Integer(), passed: Type.Integer() });
const StrategyT = Type.Union([Type.Literal('cheapest'), Type.Literal('best_quality'), Type.Literal('balanced')]);
const Increment = Type.String({
  pattern: '^\\d{1,4}/\\d{1,4}$',
  description: '`<first>/<next>` seconds, e.g. 60/60, 1/1, 6/6, 30/6',
});
const Country = Type.String({ pattern: '^[A-Z]{2}$', description: 'ISO 3166 alpha-2; omit or null for A-Z' });
const Digits = Type.String({ minLength: 1, maxLength: 32, description: 'E.164 number, with or without +' });

const EndpointIn = Type.Object(
  {
    host: Type.String({ minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9.:\\-\\[\\]]+$' }),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
    transport: Type.Optional(Type.Union([Type.Literal('udp'), Type.Literal('tcp'), Type.Literal('tls')])),
    techPrefix: Type.Optional(Type.String({ pattern: '^[0-9#*]{0,10}$' })),
    username: Type.Optional(Type.String({ maxLength: 128 })),
    password: Type.Optional(Type.String({ maxLength: 128, description: 'write-only: never returned' })),
    priority: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
    weight: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    label: Type.Optional(Type.String({ maxLength: 60, description: 'at most 60 characters; empty clears' })),
  },
  { additionalProperties: false },
);

export const SmsDeliveryIn = Type.Union([
  Type.Object(
    {
      kind: Type.Literal('smpp'),
      host: Type.String({ minLength: 1, maxLength: 253 }),
      port: Type.Integer({ minimum: 1, maximum: 65535 }),
      systemId: Type.String({ minLength: 1, maxLength: 16 }),
      password: Type.String({ maxLength: 64, description: 'write-only' }),
      systemType: Type.Optional(Type.String({ maxLength: 13 })),
      tls: Type.Optional(Type.Boolean()),
    },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      kind: Type.Literal('http'),
      url: Type.String({ minLength: 8, maxLength: 2048 }),
      authorization: Type.Optional(
        Type.String({ maxLength: 1024, description: 'write-only Authorization header value' }),
      ),
      signingSecret: Type.Optional(
        Type.String({
          minLength: 16,
          maxLength: 256,
          description:
            'write-only HMAC key shared with the supplier: signs our submits and its receipt callbacks (X-Svc-Signature); without it the route cannot deliver',
        }),
      ),
    },
    { additionalProperties: false },
  ),
]);

const MediaMode = Type.Union([Type.Literal('direct'), Type.Literal('proxy')], {
  description:
    "voice routes: direct (default) passes SDP through and RTP flows end to end; proxy relays RTP through the exchange (the supplier sees only the exchange's media address; a call with no audio either way for [rtp] timeout_ms is ended, hangupCause media-timeout)",
});

const RouteIn = Type.Object(
  {
    type: RouteType,
    name: Type.String({ minLength: 1, maxLength: 120 }),
    country: Type.Optional(Nullable(Country)),
    visibility: Type.Optional(
      Type.Union([Type.Literal('public'), Type.Literal('private')], {
        description: 'private: visible to and buyable by nobody else unless granted access',
      }),
    ),
    expectedAsr: Type.Optional(Type.Number({ minimum: 0, maximum: 100, description: 'percent' })),
    expectedAcd: Type.Optional(Type.Number({ minimum: 0, maximum: 100000, description: 'seconds' })),
    expectedPdd: Type.Optional(Type.Integer({ minimum: 0, maximum: 60000, description: 'milliseconds' })),
    cliType: Type.Optional(Type.String({ maxLength: 32 })),
    billingIncrement: Type.Optional(Increment),
    capacity: Type.Optional(Type.Integer({ minimum: 1, maximum: 100000 })),
    maxCps: Type.Optional(Type.Integer({ minimum: 1, maximum: 10000 })),
    noticeDays: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 90, description: 'notice before increases take effect (default 7)' }),
    ),
    mediaMode: Type.Optional(MediaMode),
    endpoints: Type.Optional(Type.Array(EndpointIn, { maxItems: 10, description: 'voice: SIP endpoints' })),
    smsDelivery: Type.Optional(SmsDeliveryIn),
  },
  { additionalProperties: false },
);

const RoutePatch = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 120 })),
    expectedAsr: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 100, description: 'percent' }))),
    expectedAcd: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 100000, description: 'seconds' }))),
    expectedPdd: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 60000, description: 'milliseconds' }))),
    cliType: Type.Optional(Nullable(Type.String({ maxLength: 32 }))),
    capacity: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 100000, description: 'null: no limit' }))),
    maxCps: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 10000, description: 'null: no limit' }))),
    mediaMode: Type.Optional(MediaMode),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    description:
      'Only the fields given change. Prices, increment, notice period, visibility and delivery have their own endpoints or stay as listed; capacity, maxCps and mediaMode apply to calls set up after the change, calls in progress keep what they started with.',
  },
);

const EndpointOut = Type.Object({
  id: Uuid(),
  host: Type.String(),
  port: Type.Integer(),
  transport: Type.String(),
  techPrefix: Type.String(),
  username: Nullable(Type.String()),
  hasPassword: Type.Boolean(),
  priority: Type.Integer(),
  weight: Type.Integer(),
  label: Nullable(Type.String()),
});

const Route = Type.Object({
  id: Uuid(),
  type: RouteType,
  name: Type.String(),
  country: Nullable(Type.String()),
  visibility: Type.String(),
  status: Type.String(),
  own: Type.Boolean({ description: 'the caller is the seller; seller identity is never shown otherwise' }),
  blend: Type.Boolean({ description: 'a route blend: see GET /routes/blends/{id}; cannot be route-checked' }),
  expectedAsr: Nullable(Type.Number()),
  expectedAcd: Nullable(Type.Number()),
  expectedPdd: Nullable(Type.Integer()),
  cliType: Nullable(Type.String()),
  billingIncrement: Type.String(),
  capacity: Nullable(Type.Integer()),
  maxCps: Nullable(Type.Integer()),
  noticeDays: Type.Integer(),
  mediaMode: MediaMode,
  rateCount: Type.Integer(),
  lowestRate: Nullable(Money('lowest country rate in force, before the platform fee')),
  measured: Nullable(
    Type.Object(
      {
        asr: Type.Number({ description: 'percent' }),
        acd: Type.Number({ description: 'seconds' }),
        ner: Type.Number({ description: 'percent' }),
        medianPddMs: Type.Integer(),
        calls: Type.Integer(),
        buyers: Type.Integer(),
        window: Type.Union([Type.Literal('7d'), Type.Literal('30d'), Type.Literal('latest')], {
          description: "latest: the route's last 1,000 calls at any age",
        }),
      },
      {
        description:
          'measured on real buyer calls over 7 days, else 30 days, else the latest period; null until 50 calls from 2 buyers',
      },
    ),
  ),
  routeChecks: Nullable(Type.Object({}, { additionalProperties: true })),
  endpoints: Nullable(Type.Array(EndpointOut, { description: 'own routes only; passwords never returned' })),
  smsDeliveryKind: Nullable(Type.String({ description: 'own routes only: smpp or http' })),
  createdAt: DateTime(),
});

/** The listing as the API shows it (other listing operations answer with it). */
export const RouteSchema = Route;

const RateRow = Type.Object({
  prefix: Type.String(),
  destination: Type.String(),
  rate: Money(),
  billingIncrement: Type.String(),
  mccMnc: Nullable(Type.String({ description: 'SMS per-network price; null for the country price' })),
  origin: Nullable(
    Type.String({
      description: 'The callers the row prices (A-number prefix, country, EU or EEA); null: the default row',
    }),
  ),
  effectiveFrom: DateTime(),
});

const UploadResult = Type.Object({
  routeId: Uuid(),
  version: Type.Integer(),
  sheetVersion: Type.Optional(
    Type.Integer({ description: 'the sheet version this change made (GET /routes/{id}/rates/versions)' }),
  ),
  rows: Type.Integer(),
  increases: Type.Integer(),
  decreases: Type.Integer(),
  newDestinations: Type.Integer(),
  removals: Type.Integer(),
  updates: Type.Integer(),
  unchanged: Type.Integer(),
  scheduledChanges: Type.Integer({ description: 'increases and removals waiting for their effective time' }),
});

/** The result of a sheet change (uploads, flat changes, row edits, restores). */
export const UploadResultSchema = UploadResult;

const SheetJob = Type.Object({
  jobId: Uuid(),
  routeId: Uuid(),
  status: Type.Union([
    Type.Literal('queued'),
    Type.Literal('parsing'),
    Type.Literal('loading'),
    Type.Literal('completed'),
    Type.Literal('failed'),
  ]),
  rowsTotal: Type.Integer({ description: 'rows in the sheet (counted from its lines until parsed)' }),
  rowsParsed: Type.Integer({ description: 'rows parsed and checked so far' }),
  rowsLoaded: Type.Integer({ description: 'rows written so far; they take effect together when the job completes' }),
  errorCount: Type.Integer(),
  errors: Type.Array(Type.Object({ line: Type.Integer(), reason: Type.String() }), {
    description:
      'the first 1,000 bad rows by line (line 0: the sheet as a whole); a sheet with any bad row changes nothing',
  }),
  result: Nullable(UploadResult),
  createdAt: DateTime(),
  finishedAt: Nullable(DateTime()),
});

const Resolved = Type.Object({
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
  price: Money('buyer price per minute or per message, fee included'),
  billingIncrement: Type.String(),
  rateBasis: Nullable(Type.String()),
  quality: Type.Number(),
  score: Type.Number(),
  reason: Type.String(),
});

const PriceNumber = Type.Object({
  number: Type.String(),
  type: RouteType,
  unit: Type.String(),
  total: Type.Integer(),
  routes: Type.Array(
    Type.Object({
      destination: Type.String(),
      matchedPrefix: Type.String(),
      matchedOrigin: Nullable(Type.String()),
      rate: Money('buyer price (seller rate plus platform fee)'),
      billingIncrement: Type.String(),
      cliType: Nullable(Type.String()),
      exchangeScore: Type.Integer({ description: '0..100 quality score from stated figures' }),
    }),
  ),
});

const RateChange = Type.Object({
  id: Uuid(),
  prefix: Type.String(),
  mccMnc: Nullable(Type.String()),
  origin: Nullable(Type.String()),
  kind: Type.String(),
  oldRate: Nullable(Money()),
  newRate: Nullable(Money()),
  effectiveAt: DateTime(),
  status: Type.String(),
});

const EndpointWithRoute = Type.Object({ ...EndpointOut.properties, routeId: Uuid() });
const BulkResult = Type.Object({
  dryRun: Type.Boolean(),
  check: Type.Object({
    ok: Type.Boolean(),
    method: Type.Literal('form'),
    problems: Type.Array(Type.Object({ path: Type.String(), message: Type.String() })),
  }),
  matched: Type.Integer({ description: 'own routes of the type among those asked for' }),
  updated: Type.Integer({ description: '0 on a dry run or a failed check' }),
  routeIds: Type.Array(Uuid()),
  notFound: Type.Array(Uuid()),
});
const SipBulkResult = Type.Object({
  ...BulkResult.properties,
  check: Type.Object({
    ok: Type.Boolean(),
    method: Type.Union([Type.Literal('form'), Type.Literal('options')]),
    problems: Type.Array(Type.Object({ path: Type.String(), message: Type.String() })),
    status: Type.Optional(
      Nullable(Type.Integer({ description: 'options: the final SIP status, null when nothing answered' })),
    ),
    rttMs: Type.Optional(Type.Number({ description: "options: the probe's round trip" })),
  }),
  mode: Type.String(),
});
const Id = Type.Object({ id: Uuid() });
const ListQuery = Type.Object({
  ...OffsetQuery(),
  type: Type.Optional(RouteType),
  country: Type.Optional(Country),
  maxPrice: Type.Optional(
    Type.String({ pattern: '^\\d{1,14}(\\.\\d{1,6})?$', description: 'lowest rate at most this' }),
  ),
  minStatedAsr: Type.Optional(Type.Number({ minimum: 0, maximum: 100 })),
  sort: Type.Optional(
    Type.Union(
      ROUTE_SORTS.map((x) => Type.Literal(x)),
      {
        description:
          'measured_* and ner_* put routes without measured figures last; quality_desc uses the Smart Routing quality score',
      },
    ),
  ),
});

const SHEET_DOC =
  'Replaces the deck atomically. CSV columns (header row, any order): prefix, destination, rate, increment (empty: route default), ' +
  'effective date (YYYY-MM-DD or ISO date-time), and for SMS mcc_mnc (a per-network price, never above the country price); ' +
  'origin (an A-number prefix, ISO country, EU or EEA: the row prices only calls from those callers; empty: the default row; ' +
  'the longest destination prefix wins, then the most specific origin). ' +
  'JSON: `rows` of { prefix, destination, rate, increment, effectiveDate, mccMnc, origin }. Every bad row is reported in `error.details` ' +
  'as { path: "line <n>", message }. Decreases, new destinations and name changes apply at once; increases (and removed ' +
  "destinations) at `increaseEffectiveAt`, else after the route notice period; a row's own later effective date is honoured. " +
  'A sheet of more than `[rate_sheets] async_rows` rows (20,000 by default) is loaded as a job: 202 with the job, followed at ' +
  '`GET /routes/{id}/rates/jobs/{jobId}` (rows parsed and loaded, bad rows by line, the result once completed). Uploads in ' +
  'progress are bounded per account (1) and per daemon (2); one more answers 429 RATE_LIMITED with Retry-After.';

export function routesRoutes(routes: RoutesService, routing: Routing) {
  return (app: App) => {
    app.post(
      '/routes',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'List a new route (voice: SIP endpoints; SMS: SMPP or HTTPS delivery; credentials write-only)',
          body: RouteIn,
          response: { 201: Ok(Route) },
        },
      },
      async (req, reply) => reply.code(201).send(ok(await routes.createRoute(req.principal!.accountId, req.body))),
    );

    app.get(
      '/routes',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Marketplace routes visible to the caller',
          querystring: ListQuery,
          response: { 200: OffsetPage(Route) },
        },
      },
      async (req) =>
        ok(
          await routes.listRoutes({
            ...req.query,
            viewerId: req.principal!.accountId,
            sort: req.query.sort ?? 'newest',
            limit: req.query.limit ?? 25,
            offset: req.query.offset ?? 0,
          }),
        ),
    );

    app.get(
      '/routes/my/list',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The caller's own listings",
          querystring: ListQuery,
          response: { 200: OffsetPage(Route) },
        },
      },
      async (req) =>
        ok(
          await routes.listRoutes({
            ...req.query,
            ownOnly: true,
            viewerId: req.principal!.accountId,
            sort: req.query.sort ?? 'newest',
            limit: req.query.limit ?? 25,
            offset: req.query.offset ?? 0,
          }),
        ),
    );

    app.get(
      '/routes/my/listing-health',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The caller's listings with what keeps each from selling well",
          description:
            'Issues: `failing_checks` (3 or more route checks and caller-ID tests in 30 days, under half passed), `no_rates`, `no_delivery` (voice without SIP endpoints, SMS without delivery), `paused`, `suspended` (by the operator), `no_stated_asr`, `low_measured_asr` (measured ASR under 20%), `open_reports`, `upheld_reports` (upheld in the last 90 days). `healthy` when none applies.',
          response: {
            200: Ok(
              Type.Object({
                routes: Type.Integer(),
                healthy: Type.Integer(),
                withIssues: Type.Integer(),
                listings: Type.Array(
                  Type.Object({
                    routeId: Uuid(),
                    name: Type.String(),
                    type: RouteType,
                    status: Type.String(),
                    visibility: Type.String(),
                    rateCount: Type.Integer(),
                    endpoints: Type.Integer(),
                    activePurchases: Type.Integer(),
                    scheduledChanges: Type.Integer(),
                    openReports: Type.Integer({ description: 'route reports still open' }),
                    upheldReports: Type.Integer({
                      description: 'route reports the operator upheld in the last 90 days',
                    }),
                    ratesUploadedAt: Nullable(DateTime()),
                    measured: Route.properties.measured,
                    checks: Type.Object(
                      {
                        checks: Type.Integer(),
                        passed: Type.Integer(),
                        calls: CheckCount,
                        sms: CheckCount,
                        cliTests: CheckCount,
                      },
                      {
                        description:
                          'route checks (calls), test messages (receipts) and caller-ID tests that rang, by other accounts, over 30 days',
                      },
                    ),
                    issues: Type.Array(Type.String()),
                    healthy: Type.Boolean(),
                  }),
                ),
              }),
            ),
          },
        },
      },
      async (req) => ok(await routes.listingHealth(req.principal!.accountId)),
    );

    app.post(
      '/routes/my-endpoints',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Add a SIP endpoint to an own voice route (at most 10 per route)',
          body: Type.Object({ routeId: Uuid(), ...EndpointIn.properties }, { additionalProperties: false }),
          response: { 201: Ok(EndpointWithRoute) },
        },
      },
      async (req, reply) => reply.code(201).send(ok(await routes.addEndpoint(req.principal!.accountId, req.body))),
    );

    app.patch(
      '/routes/my-endpoints/:id',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary:
            'Edit a saved SIP endpoint (label at most 60 characters; an empty label clears it, an empty password removes it)',
          params: Id,
          body: Type.Partial(EndpointIn, { additionalProperties: false }),
          response: { 200: Ok(EndpointWithRoute) },
        },
      },
      async (req) => ok(await routes.updateEndpoint(req.principal!.accountId, req.params.id, req.body)),
    );

    app.post(
      '/routes/my/bulk-sip-endpoint',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Put one SIP endpoint on many own voice routes (up to 5,000; dry run)',
          description:
            "`routeIds` (default: every own voice route); `mode` `replace` (default: the routes' endpoints are replaced) or `add`. " +
            'The endpoint is checked once before writing: its form (IP address or DNS name, port), then one SIP OPTIONS probe over UDP or TCP ' +
            '(`check.method` `options`; the same probe as `POST /routes/{id}/test`: up when any final response below 500 other than 408 comes back). ' +
            'A bad form answers with `check.ok` false and writes nothing; a failed probe refuses the write with 400 VALIDATION_ERROR, except on a dry run, ' +
            'which reports it in `check`. A daemon whose SIP plane is not running gives the form check only (`method` `form`). ' +
            '`dryRun` writes nothing. Ids that are not own voice routes are listed in `notFound`.',
          body: Type.Object(
            {
              routeIds: Type.Optional(Type.Array(Uuid(), { minItems: 1, maxItems: MAX_BULK_ROUTES })),
              endpoint: EndpointIn,
              mode: Type.Optional(Type.Union([Type.Literal('replace'), Type.Literal('add')])),
              dryRun: Type.Optional(Type.Boolean()),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(SipBulkResult) },
        },
      },
      async (req) => ok(await routes.bulkSipEndpoint(req.principal!.accountId, req.body)),
    );

    app.post(
      '/routes/my/bulk-sms-delivery',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Set SMS delivery (SMPP or HTTPS) on many own SMS routes (up to 5,000; dry run)',
          description:
            "As bulk-sip-endpoint: `routeIds` default to every own SMS route; the delivery's form (SMPP host and port, or an https URL) is checked once before writing; credentials are write-only.",
          body: Type.Object(
            {
              routeIds: Type.Optional(Type.Array(Uuid(), { minItems: 1, maxItems: MAX_BULK_ROUTES })),
              smsDelivery: SmsDeliveryIn,
              dryRun: Type.Optional(Type.Boolean()),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(BulkResult) },
        },
      },
      async (req) => ok(await routes.bulkSmsDelivery(req.principal!.accountId, req.body)),
    );

    app.get(
      '/routes/resolve',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Preview which purchased or own route Smart Routing picks for a number, and why',
          querystring: Type.Object({
            number: Digits,
            type: Type.Optional(RouteType),
            strategy: Type.Optional(StrategyT),
            mccMnc: Type.Optional(Type.String({ pattern: '^\\d{3}-\\d{2,3}$' })),
            from: Type.Optional(
              Type.String({ pattern: '^\\+?\\d{1,15}$', description: "The caller's number, for origin-based rates" }),
            ),
          }),
          response: {
            200: Ok(
              Type.Object({
                number: Type.String(),
                type: RouteType,
                strategy: StrategyT,
                routes: Type.Array(Resolved),
                explanation: Type.String(),
              }),
            ),
          },
        },
      },
      async (req) =>
        ok(
          await routing.resolve({
            accountId: req.principal!.accountId,
            number: req.query.number,
            type: req.query.type ?? 'voice',
            strategy: req.query.strategy ?? 'cheapest',
            mccMnc: req.query.mccMnc ?? null,
            from: req.query.from ?? null,
          }),
        ),
    );

    app.get(
      '/routes/price-number',
      {
        config: { access: { auth: 'public' }, rateLimit: { points: 30, seconds: 60 } },
        schema: {
          tags: TAGS,
          summary: 'Public price of a number on every public route, cheapest first (no seller identities)',
          querystring: Type.Object({
            number: Digits,
            type: Type.Optional(RouteType),
            from: Type.Optional(
              Type.String({ pattern: '^\\+?\\d{1,15}$', description: "The caller's number, for origin-based rates" }),
            ),
          }),
          response: { 200: Ok(PriceNumber) },
        },
      },
      async (req) => ok(await routing.priceNumber(req.query.number, req.query.type ?? 'voice', req.query.from ?? null)),
    );

    app.get(
      '/routes/:id',
      {
        config: { access: READ },
        schema: { tags: TAGS, summary: 'One route', params: Id, response: { 200: Ok(Route) } },
      },
      async (req) => ok(await routes.getRoute(req.params.id, req.principal!.accountId)),
    );

    app.patch(
      '/routes/:id',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary:
            "Change an own route's terms (name, stated quality, CLI type, capacity, calls per second, media mode)",
          params: Id,
          body: RoutePatch,
          response: { 200: Ok(Route) },
        },
      },
      async (req) => ok(await routes.updateRoute(req.principal!.accountId, req.params.id, req.body)),
    );

    app.get(
      '/routes/:id/rates',
      {
        config: { access: READ },
        schema: {
          tags: ['Rate sheets'],
          summary: "Rates in force (with each network's price on per-network SMS sheets)",
          params: Id,
          querystring: Type.Object({
            ...OffsetQuery(100, 1000),
            prefix: Type.Optional(Type.String({ pattern: '^\\d{1,15}$' })),
          }),
          response: { 200: OffsetPage(RateRow) },
        },
      },
      async (req) =>
        ok(
          await routes.rates(req.params.id, req.principal!.accountId, {
            prefix: req.query.prefix,
            limit: req.query.limit ?? 100,
            offset: req.query.offset ?? 0,
          }),
        ),
    );

    const slots = uploadSlotHooks((accountId) => routes.acquireUploadSlot(accountId));
    app.post(
      '/routes/:id/rates',
      {
        config: { access: WRITE },
        ...slots.hooks,
        // A 200,000-row CSV is around 8 MB.
        bodyLimit: 48 * 1024 * 1024,
        schema: {
          tags: ['Rate sheets'],
          summary: 'Upload a rate sheet (CSV text or JSON rows)',
          description: SHEET_DOC,
          params: Id,
          body: Type.Object(
            {
              format: Type.Union([Type.Literal('csv'), Type.Literal('json')]),
              // No maxLength: counting a 16 MB string's characters holds the event loop, and the body
              // limit already bounds it.
              csv: Type.Optional(
                Type.String({ description: 'the sheet as CSV text; the request body is at most 48 MiB' }),
              ),
              rows: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }), { maxItems: 500000 })),
              increaseEffectiveAt: Type.Optional(DateTime()),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(UploadResult), 202: Ok(SheetJob) },
        },
      },
      async (req, reply) => {
        const slot = slots.take(req);
        const up = await routes.uploadSheet(req.principal!.accountId, req.params.id, req.body, slot);
        if (up.kind === 'applied') return ok(up.result);
        return reply.code(202).send(ok(up.job));
      },
    );

    app.get(
      '/routes/:id/rates/jobs/:jobId',
      {
        config: { access: READ },
        schema: {
          tags: ['Rate sheets'],
          summary: 'Progress and outcome of a large rate sheet upload (own routes)',
          params: Type.Object({ id: Uuid(), jobId: Uuid() }),
          response: { 200: Ok(SheetJob) },
        },
      },
      async (req) => ok(await routes.sheetJob(req.principal!.accountId, req.params.id, req.params.jobId)),
    );

    app.get(
      '/routes/:id/rate-changes',
      {
        config: { access: READ },
        schema: {
          tags: ['Rate sheets'],
          summary: 'Scheduled increases and removals of an own route',
          params: Id,
          response: { 200: Ok(Type.Array(RateChange)) },
        },
      },
      async (req) => ok(await routes.rateChanges(req.params.id, req.principal!.accountId)),
    );

    app.post(
      '/routes/:id/rate-changes/flat',
      {
        config: { access: WRITE },
        schema: {
          tags: ['Rate sheets'],
          summary: 'Change every rate in force by an amount or a percentage',
          description:
            'Exactly one of `amount` (6-place money string, negative lowers) or `percent` (e.g. 10 or -5). Every row in force, ' +
            'country and per-network, gets the new rate rounded half-up to 6 places; a rate may not go below zero. Increases obey ' +
            'the notice rule (at `increaseEffectiveAt`, else after the route notice period), decreases apply at once. Like a new ' +
            'sheet it starts from the rates in force now and supersedes changes scheduled earlier.',
          params: Id,
          body: Type.Object(
            {
              amount: Type.Optional(
                Type.String({ pattern: '^-?\\d{1,14}(\\.\\d{1,6})?$', description: 'added to every rate' }),
              ),
              percent: Type.Optional(Type.Number({ minimum: -100, maximum: 1000 })),
              increaseEffectiveAt: Type.Optional(DateTime()),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(UploadResult) },
        },
      },
      async (req) => ok(await routes.flatRateChange(req.principal!.accountId, req.params.id, req.body)),
    );

    app.post(
      '/routes/:id/rate-changes/:changeId/cancel',
      {
        config: { access: WRITE },
        schema: {
          tags: ['Rate sheets'],
          summary: 'Withdraw a scheduled increase or removal before it takes effect',
          params: Type.Object({ id: Uuid(), changeId: Uuid() }),
          response: { 200: Ok(Type.Object({ id: Uuid(), status: Type.Literal('cancelled') })) },
        },
      },
      async (req) => ok(await routes.cancelRateChange(req.principal!.accountId, req.params.id, req.params.changeId)),
    );

    app.post(
      '/routes/:id/access',
      {
        config: { access: WRITE },
        schema: {
          tags: ['Route access'],
          summary: 'Grant another account access to a private route',
          params: Id,
          body: Type.Object({ accountId: Uuid() }, { additionalProperties: false }),
          response: { 200: Ok(Type.Object({ routeId: Uuid(), accountId: Uuid() })) },
        },
      },
      async (req) => ok(await routes.grantAccess(req.principal!.accountId, req.params.id, req.body.accountId)),
    );

    app.delete(
      '/routes/:id/access/:accountId',
      {
        config: { access: WRITE },
        schema: {
          tags: ['Route access'],
          summary: 'Revoke an access grant',
          params: Type.Object({ id: Uuid(), accountId: Uuid() }),
          response: { 200: Ok(Type.Object({ routeId: Uuid(), accountId: Uuid() })) },
        },
      },
      async (req) => ok(await routes.revokeAccess(req.principal!.accountId, req.params.id, req.params.accountId)),
    );
  };
}
