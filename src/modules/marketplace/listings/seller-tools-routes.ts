import { Type } from 'typebox';
import type { App } from '../../../http/app.js';
import { createCsvWriter } from '../../../http/csv.js';
import { DateTime, Money, Nullable, Ok, OffsetPage, Uuid, ok } from '../../../http/envelope.js';
import { notFound } from '../../../http/errors.js';
import { OffsetQuery } from '../../../http/pagination.js';
import type { Clock } from '../../../platform/clock.js';
import type { Sql } from '../../../db/connection.js';
import type { ListingLifecycle } from './lifecycle.js';
import { RouteSchema } from './routes.js';
import { MAX_COMPARE, qualityWindows, type SellerTools } from './seller-tools.js';
import { MAX_BULK_ROUTES } from './service.js';
import type { RoutesService } from './service.js';

const TAGS = ['Marketplace routes'];
const READ = { auth: 'required', scope: 'routes:read' } as const;
const WRITE = { auth: 'required', scope: 'routes:write' } as const;
const Id = Type.Object({ id: Uuid() });
const RouteType = Type.Union([Type.Literal('voice'), Type.Literal('sms')]);
const Days = Type.Object({ days: Type.Optional(Type.Integer({ minimum: 1, maximum: 366, default: 30 })) });
const Problems = Type.Array(Type.Object({ path: Type.String(), message: Type.String() }));
const Endpoint = Type.Object({
  id: Uuid(),
  routeId: Uuid(),
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
const RouteIds = Type.Optional(
  Type.Array(Uuid(), { minItems: 1, maxItems: MAX_BULK_ROUTES, description: 'default: every own listing' }),
);
const Facet = Type.Array(Type.Object({ value: Nullable(Type.String()), routes: Type.Integer() }));
const SalesRow = Type.Object({
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
});

export function sellerToolRoutes(
  tools: SellerTools,
  routes: RoutesService,
  life: ListingLifecycle,
  deps: { sql: Sql; clock: Clock },
) {
  return (app: App) => {
    app.get(
      '/routes/my-endpoints',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The seller's saved SIP endpoints, by route and priority (passwords never shown)",
          querystring: Type.Object({ ...OffsetQuery(100, 1000), routeId: Type.Optional(Uuid()) }),
          response: { 200: OffsetPage(Endpoint) },
        },
      },
      async (req) =>
        ok(
          await routes.listEndpoints(req.principal!.accountId, {
            ...(req.query.routeId === undefined ? {} : { routeId: req.query.routeId }),
            limit: req.query.limit ?? 100,
            offset: req.query.offset ?? 0,
          }),
        ),
    );

    app.get(
      '/routes/my-endpoints/:id',
      {
        config: { access: READ },
        schema: { tags: TAGS, summary: 'One saved SIP endpoint', params: Id, response: { 200: Ok(Endpoint) } },
      },
      async (req) => ok(await routes.getEndpoint(req.principal!.accountId, req.params.id)),
    );

    app.post(
      '/routes/my-endpoints/:id/test',
      {
        config: { access: READ, rateLimit: { points: 5, seconds: 10 } },
        schema: {
          tags: TAGS,
          summary: 'Check one saved SIP endpoint: its address through the outbound guard, then one SIP OPTIONS',
          description:
            '`ok` when the address is allowed and any final response below 500 other than 408 comes back (`method` `options`); a daemon whose SIP plane is not running checks the address only (`method` `form`). No call is placed, nothing is billed.',
          params: Id,
          response: {
            200: Ok(
              Type.Object({
                endpointId: Uuid(),
                routeId: Uuid(),
                ok: Type.Boolean(),
                method: Type.Union([Type.Literal('form'), Type.Literal('options')]),
                status: Nullable(Type.Integer()),
                rttMs: Nullable(Type.Number()),
                problems: Problems,
              }),
            ),
          },
        },
      },
      async (req) => ok(await routes.probeEndpoint(req.principal!.accountId, req.params.id)),
    );

    app.put(
      '/routes/:id/endpoints/order',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: "Set the failover order of an own voice route's endpoints (each once, first tried first)",
          params: Id,
          body: Type.Object(
            { endpointIds: Type.Array(Uuid(), { minItems: 1, maxItems: 10 }) },
            { additionalProperties: false },
          ),
          response: { 200: OffsetPage(Endpoint) },
        },
      },
      async (req) => ok(await tools.reorderEndpoints(req.principal!.accountId, req.params.id, req.body.endpointIds)),
    );

    app.post(
      '/routes/my/bulk-status',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Pause, resume, or make public or private many own listings (up to 5,000; dry run)',
          description:
            'Listings already in the asked state, and listings the operator suspended, are listed in `unchanged`; ids that are not own listings (or are blends) in `notFound`. Calls in progress end as they started.',
          body: Type.Object(
            {
              routeIds: RouteIds,
              action: Type.Union([
                Type.Literal('pause'),
                Type.Literal('resume'),
                Type.Literal('public'),
                Type.Literal('private'),
              ]),
              dryRun: Type.Optional(Type.Boolean()),
            },
            { additionalProperties: false },
          ),
          response: {
            200: Ok(
              Type.Object({
                action: Type.String(),
                dryRun: Type.Boolean(),
                matched: Type.Integer(),
                updated: Type.Integer(),
                routeIds: Type.Array(Uuid()),
                unchanged: Type.Array(Uuid()),
                notFound: Type.Array(Uuid()),
              }),
            ),
          },
        },
      },
      async (req) => ok(await tools.bulkStatus(req.principal!.accountId, req.body)),
    );

    app.post(
      '/routes/my/bulk-terms',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary:
            'Set the same terms on many own listings (up to 5,000; dry run): capacity, CPS, CLI type, media mode, stated figures',
          description:
            'Only the terms given change (null clears a limit or a stated figure); calls set up after the change use them.',
          body: Type.Object(
            {
              routeIds: RouteIds,
              terms: Type.Object(
                {
                  capacity: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 100000 }))),
                  maxCps: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 10000 }))),
                  cliType: Type.Optional(Nullable(Type.String({ maxLength: 32 }))),
                  mediaMode: Type.Optional(Type.Union([Type.Literal('direct'), Type.Literal('proxy')])),
                  expectedAsr: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 100 }))),
                  expectedAcd: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 100000 }))),
                  expectedPdd: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 60000 }))),
                },
                { additionalProperties: false },
              ),
              dryRun: Type.Optional(Type.Boolean()),
            },
            { additionalProperties: false },
          ),
          response: {
            200: Ok(
              Type.Object({
                dryRun: Type.Boolean(),
                matched: Type.Integer(),
                updated: Type.Integer(),
                routeIds: Type.Array(Uuid()),
                notFound: Type.Array(Uuid()),
              }),
            ),
          },
        },
      },
      async (req) => ok(await tools.bulkTerms(req.principal!.accountId, req.body)),
    );

    app.put(
      '/routes/:id/notice-period',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary:
            'Set the notice buyers get before increases and removals (0 to 90 days; for changes scheduled after)',
          params: Id,
          body: Type.Object({ noticeDays: Type.Integer({ minimum: 0, maximum: 90 }) }, { additionalProperties: false }),
          response: { 200: Ok(RouteSchema) },
        },
      },
      async (req) => ok(await tools.setNoticePeriod(req.principal!.accountId, req.params.id, req.body.noticeDays)),
    );

    app.get(
      '/routes/:id/sms-delivery',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "An own SMS listing's delivery as saved (secrets never shown; an HTTPS URL without its query)",
          params: Id,
          response: {
            200: Ok(
              Type.Object({
                routeId: Uuid(),
                kind: Nullable(Type.String()),
                host: Type.Optional(Nullable(Type.String())),
                port: Type.Optional(Nullable(Type.Integer())),
                systemId: Type.Optional(Nullable(Type.String())),
                systemType: Type.Optional(Nullable(Type.String())),
                tls: Type.Optional(Type.Boolean()),
                hasPassword: Type.Optional(Type.Boolean()),
                url: Type.Optional(Nullable(Type.String())),
                hasAuthorization: Type.Optional(Type.Boolean()),
                hasSigningSecret: Type.Optional(Type.Boolean()),
              }),
            ),
          },
        },
      },
      async (req) => ok(await tools.smsDelivery(req.principal!.accountId, req.params.id)),
    );

    app.get(
      '/routes/my/export',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The seller's listings as CSV (terms, rate count, active purchases)",
        },
      },
      async (req, reply) => {
        const rows = await tools.exportRows(req.principal!.accountId);
        const cols = [
          'id',
          'name',
          'type',
          'country',
          'visibility',
          'status',
          'cli_type',
          'billing_increment',
          'capacity',
          'max_cps',
          'notice_days',
          'media_mode',
          'rate_count',
          'active_purchases',
          'created_at',
        ] as const;
        const csv = createCsvWriter(cols, ['capacity', 'max_cps', 'notice_days', 'rate_count', 'active_purchases']);
        reply.type('text/csv; charset=utf-8').header('content-disposition', 'attachment; filename="listings.csv"');
        for (const r of rows)
          csv.write({
            id: r.id,
            name: r.name,
            type: r.type,
            country: r.country ?? '',
            visibility: r.visibility,
            status: r.status,
            cli_type: r.cliType ?? '',
            billing_increment: r.billingIncrement,
            capacity: r.capacity ?? '',
            max_cps: r.maxCps ?? '',
            notice_days: r.noticeDays,
            media_mode: r.mediaMode,
            rate_count: r.rateCount,
            active_purchases: r.activePurchases,
            created_at: r.createdAt.toISOString(),
          });
        csv.end();
        return reply.send(csv as unknown as never);
      },
    );

    app.get(
      '/routes/:id/sales',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "One own listing's sales: buyers holding it, traffic and revenue (buyers never named)",
          params: Id,
          querystring: Days,
          response: { 200: Ok(Type.Object({ days: Type.Integer(), since: DateTime(), ...SalesRow.properties })) },
        },
      },
      async (req) => {
        const all = await life.sales(req.principal!.accountId, req.query.days ?? 30);
        const row = all.routes.find((r) => r.routeId === req.params.id);
        if (row === undefined) throw notFound('Route');
        return ok({ days: all.days, since: all.since, ...row });
      },
    );

    app.get(
      '/routes/my/sales/daily',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The seller's traffic and revenue per UTC day (all own listings, or one)",
          querystring: Type.Object({ ...Days.properties, routeId: Type.Optional(Uuid()) }),
          response: {
            200: Ok(
              Type.Object({
                days: Type.Integer(),
                since: DateTime(),
                routeId: Nullable(Uuid()),
                rows: Type.Array(
                  Type.Object({
                    day: Type.String({ description: 'YYYY-MM-DD' }),
                    calls: Type.Integer(),
                    answeredCalls: Type.Integer(),
                    billedMinutes: Type.Number(),
                    messages: Type.Integer(),
                    revenue: Money(),
                  }),
                ),
              }),
            ),
          },
        },
      },
      async (req) =>
        ok(
          await tools.dailySales(req.principal!.accountId, {
            days: req.query.days ?? 30,
            ...(req.query.routeId === undefined ? {} : { routeId: req.query.routeId }),
          }),
        ),
    );

    app.get(
      '/routes/my/buyers',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Buyers of own listings as labels (never the account), with their traffic and revenue over `days`',
          querystring: Type.Object({ ...OffsetQuery(25, 100), ...Days.properties, routeId: Type.Optional(Uuid()) }),
          response: {
            200: OffsetPage(
              Type.Object({
                buyer: Type.String({ description: 'a label per purchase, e.g. Buyer 3F2A9C' }),
                routeId: Uuid(),
                routeName: Type.String(),
                status: Type.String(),
                since: DateTime(),
                calls: Type.Integer(),
                messages: Type.Integer(),
                revenue: Money(),
              }),
            ),
          },
        },
      },
      async (req) =>
        ok(
          await tools.buyers(req.principal!.accountId, {
            days: req.query.days ?? 30,
            ...(req.query.routeId === undefined ? {} : { routeId: req.query.routeId }),
            limit: req.query.limit ?? 25,
            offset: req.query.offset ?? 0,
          }),
        ),
    );

    app.get(
      '/routes/my/summary',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary:
            "The seller's dashboard: listings by state, buyers, scheduled changes, watchers, open reports, revenue",
          response: {
            200: Ok(
              Type.Object({
                listings: Type.Object({
                  active: Type.Integer(),
                  paused: Type.Integer(),
                  suspended: Type.Integer(),
                  public: Type.Integer(),
                  private: Type.Integer(),
                }),
                buyers: Type.Integer(),
                activePurchases: Type.Integer(),
                scheduledChanges: Type.Integer(),
                watchers: Type.Integer(),
                openReports: Type.Integer(),
                revenue30d: Money(),
              }),
            ),
          },
        },
      },
      async (req) => ok(await tools.summary(req.principal!.accountId)),
    );

    app.get(
      '/routes/my/watchers',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'How many accounts watch each own listing (never who)',
          response: {
            200: Ok(Type.Array(Type.Object({ routeId: Uuid(), name: Type.String(), watchers: Type.Integer() }))),
          },
        },
      },
      async (req) => ok(await tools.watchers(req.principal!.accountId)),
    );

    app.put(
      '/routes/:id/watch',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Watch a listing the caller can see (idempotent)',
          params: Id,
          response: { 200: Ok(Type.Object({ routeId: Uuid(), watching: Type.Boolean(), since: DateTime() })) },
        },
      },
      async (req) => ok(await tools.watch(req.principal!.accountId, req.params.id)),
    );

    app.delete(
      '/routes/:id/watch',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Stop watching a listing',
          params: Id,
          response: { 200: Ok(Type.Object({ routeId: Uuid(), watching: Type.Boolean() })) },
        },
      },
      async (req) => ok(await tools.unwatch(req.principal!.accountId, req.params.id)),
    );

    app.get(
      '/routes/watchlist',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The caller's watched listings it can still see, newest watch first",
          querystring: Type.Object(OffsetQuery(25, 100)),
          response: { 200: OffsetPage(Type.Object({ watchedAt: DateTime(), route: RouteSchema })) },
        },
      },
      async (req) =>
        ok(
          await tools.watchlist(req.principal!.accountId, {
            limit: req.query.limit ?? 25,
            offset: req.query.offset ?? 0,
          }),
        ),
    );

    app.get(
      '/routes/cli-types',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'CLI types: the catalogue and the values stated on active public listings, with counts',
          response: {
            200: Ok(
              Type.Array(
                Type.Object({
                  cliType: Type.String(),
                  description: Nullable(Type.String()),
                  voiceRoutes: Type.Integer(),
                  smsRoutes: Type.Integer(),
                }),
              ),
            ),
          },
        },
      },
      async () => ok(await tools.cliTypes()),
    );

    app.get(
      '/routes/facets',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Counts behind the search filters over the active listings the caller can see',
          querystring: Type.Object({ type: Type.Optional(RouteType) }),
          response: {
            200: Ok(
              Type.Object({
                type: Nullable(Type.String()),
                routes: Type.Integer(),
                types: Facet,
                countries: Facet,
                cliTypes: Facet,
                billingIncrements: Facet,
                mediaModes: Facet,
              }),
            ),
          },
        },
      },
      async (req) => ok(await tools.facets(req.principal!.accountId, req.query.type)),
    );

    app.get(
      '/routes/:id/similar',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Other active listings of the same type and country the caller can see, cheapest first',
          params: Id,
          querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 25, default: 10 })) }),
          response: { 200: Ok(Type.Array(RouteSchema)) },
        },
      },
      async (req) => ok(await tools.similar(req.principal!.accountId, req.params.id, req.query.limit ?? 10)),
    );

    app.get(
      '/routes/compare',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: `Up to ${MAX_COMPARE} listings side by side for one number: buyer price (fee included), increment, stated figures`,
          querystring: Type.Object({
            ids: Type.String({
              pattern: '^[0-9a-fA-F-]{36}(,[0-9a-fA-F-]{36}){0,9}$',
              description: 'route ids, comma-separated',
            }),
            number: Type.String({ minLength: 1, maxLength: 32 }),
            type: Type.Optional(RouteType),
          }),
          response: {
            200: Ok(
              Type.Object({
                number: Type.String(),
                type: Type.String(),
                routes: Type.Array(
                  Type.Object({
                    routeId: Type.String(),
                    found: Type.Boolean({ description: 'false: not a listing of the type the caller can see' }),
                    covered: Type.Boolean(),
                    name: Nullable(Type.String()),
                    matchedPrefix: Nullable(Type.String()),
                    destination: Nullable(Type.String()),
                    price: Nullable(Money()),
                    billingIncrement: Nullable(Type.String()),
                    expectedAsr: Nullable(Type.Number()),
                    expectedAcd: Nullable(Type.Number()),
                    cliType: Nullable(Type.String()),
                  }),
                ),
              }),
            ),
          },
        },
      },
      async (req) =>
        ok(
          await tools.compare(
            req.principal!.accountId,
            req.query.ids.split(','),
            req.query.number,
            req.query.type ?? 'voice',
          ),
        ),
    );

    app.get(
      '/routes/:id/quality',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "A listing's measured figures over 1, 7 and 30 days, from real buyer calls",
          description:
            'For others than the seller a window shows figures only with at least 50 calls from 2 buyers (`enoughData`), as the listing’s `measured` does.',
          params: Id,
          response: {
            200: Ok(
              Type.Object({
                routeId: Uuid(),
                windows: Type.Array(
                  Type.Object({
                    days: Type.Integer(),
                    calls: Nullable(Type.Integer()),
                    asr: Nullable(Type.Number({ description: 'percent' })),
                    acd: Nullable(Type.Number({ description: 'seconds' })),
                    medianPddMs: Nullable(Type.Integer()),
                    enoughData: Type.Boolean(),
                  }),
                ),
              }),
            ),
          },
        },
      },
      async (req) => {
        const r = await routes.visibleRoute(req.params.id, req.principal!.accountId);
        if (r === undefined || r.type !== 'voice') throw notFound('Voice route');
        const own = r.sellerId === req.principal!.accountId;
        return ok({ routeId: r.id, windows: await qualityWindows(deps.sql, r.id, deps.clock.now(), own) });
      },
    );
  };
}
