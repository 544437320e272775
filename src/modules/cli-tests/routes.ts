import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import type { Principal } from '../../http/access.js';
import { CursorPage, DateTime, Money, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { forbidden } from '../../http/errors.js';
import { cursorPage, CursorQuery } from '../../http/pagination.js';
import type { HandsetRow } from './repo.js';
import type { CliTestsService } from './service.js';

const TAGS = ['CLI tests'];
const Status = Type.Union([
  Type.Literal('scheduled'),
  Type.Literal('pending'),
  Type.Literal('dispatching'),
  Type.Literal('in_progress'),
  Type.Literal('completed'),
  Type.Literal('failed'),
  Type.Literal('not_tested'),
  Type.Literal('cancelled'),
]);
const Recurrence = Type.Union([Type.Literal('none'), Type.Literal('daily'), Type.Literal('weekly')]);

const fields = {
  id: Uuid(),
  routeId: Nullable(Uuid()),
  blendRouteId: Nullable(Uuid()),
  displayCli: Type.String(),
  testCountry: Type.String(),
  testNumber: Nullable(Type.String()),
  status: Status,
  recurrence: Recurrence,
  scheduledAt: Nullable(DateTime()),
  reportedCli: Nullable(Type.String({ description: 'the caller ID the handset displayed' })),
  displayedCorrectly: Nullable(Type.Boolean()),
  resultNotes: Nullable(Type.String()),
  dispatchedAt: Nullable(DateTime()),
  completedAt: Nullable(DateTime()),
  createdAt: DateTime(),
  rang: Nullable(Type.Boolean()),
  ringMs: Nullable(Type.Integer({ description: 'ms from dialling to ringing at the handset' })),
  answerMs: Nullable(Type.Integer()),
  sipCode: Nullable(Type.Integer()),
  failureCause: Nullable(Type.String()),
  cost: Money('0.50 when the call rang the handset, else 0'),
  batchId: Nullable(Uuid()),
};
const CliTest = Type.Object(fields);
const RouteRef = Type.Object({ country: Type.String(), destinationName: Type.String() });
const ListedTest = Type.Object({ ...fields, route: Type.Optional(RouteRef) });
const Batch = Type.Object({
  id: Uuid(),
  status: Type.Union([Type.Literal('running'), Type.Literal('completed'), Type.Literal('cancelled')]),
  displayCli: Type.String(),
  routeIds: Type.Array(Uuid()),
  createdAt: DateTime(),
  completedAt: Nullable(DateTime()),
  summary: Type.Object({
    tests: Type.Integer(),
    rang: Type.Integer(),
    displayedCorrectly: Type.Integer(),
    notTested: Type.Integer(),
    open: Type.Integer(),
    totalCost: Money(),
  }),
  tests: Type.Array(ListedTest),
});
const IdParams = Type.Object({ id: Uuid() });
const Handset = Type.Object({
  id: Uuid(),
  number: Type.String(),
  country: Type.String(),
  label: Nullable(Type.String()),
  createdAt: DateTime(),
});
const handsetView = (h: HandsetRow) => ({ ...h, number: `+${h.number}`, createdAt: h.createdAt.toISOString() });
const tester = (p: Principal) => ({ accountId: p.accountId, mode: p.mode });
const DIALER = { auth: 'required', scope: 'dialer:write' } as const;

function operatorOnly(p: Principal | null | undefined): void {
  if (p?.role !== 'admin') throw forbidden('Only the platform operator manages test handsets');
}

export function cliTestsRoutes(svc: CliTestsService) {
  return (app: App) => {
    app.post(
      '/cli-tests',
      {
        config: { access: { ...DIALER, testKeys: 'simulate' } },
        schema: {
          tags: TAGS,
          summary: 'Test caller ID on a real handset through a route (now, at scheduledAt, or recurring)',
          description:
            'The exchange calls a test handset in `testCountry` through the route presenting `displayCli`, and records the caller ID ' +
            'that arrived (`reportedCli`, `displayedCorrectly`), ringing and answer times and the failure cause. Charged `costPerTest` ' +
            '(GET /cli-tests/quota) only when the call rang the handset; hourly quota per account (429). A test key simulates.',
          body: Type.Object(
            {
              routeId: Type.Optional(Uuid()),
              blendRouteId: Type.Optional(Uuid()),
              displayCli: Type.String({ minLength: 1, maxLength: 32 }),
              testCountry: Type.String({ minLength: 1, maxLength: 100 }),
              testNumber: Type.Optional(Type.String({ maxLength: 32 })),
              scheduledAt: Type.Optional(Type.String({ format: 'date-time' })),
              recurrence: Type.Optional(Recurrence),
            },
            { additionalProperties: false },
          ),
          response: {
            201: Ok(Type.Object({ ...fields, tests: Type.Array(CliTest), skippedTrunks: Type.Array(Type.String()) })),
          },
        },
      },
      async (req, reply) => reply.code(201).send(ok(await svc.create(tester(req.principal!), req.body))),
    );

    app.get(
      '/cli-tests',
      {
        config: { access: { ...DIALER, fullAccessOnly: true } },
        schema: {
          tags: TAGS,
          summary: 'Caller-ID tests of the account, newest first',
          querystring: Type.Object({
            routeId: Type.Optional(Uuid()),
            blendRouteId: Type.Optional(Uuid()),
            status: Type.Optional(Status),
            ...CursorQuery(),
          }),
          response: { 200: CursorPage(ListedTest) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        return cursorPage(await svc.list(req.principal!.accountId, { ...req.query, limit }), limit);
      },
    );

    app.get(
      '/cli-tests/quota',
      {
        config: { access: DIALER },
        schema: {
          tags: TAGS,
          summary: 'Price per test and the hourly quota',
          description:
            'costPerTest is the price this account pays: a sub-account pays its reseller markup on top ' +
            '(its markup on routeId when one is given and set, else its own).',
          querystring: Type.Object({ routeId: Type.Optional(Type.String({ format: 'uuid' })) }),
          response: {
            200: Ok(
              Type.Object({
                costPerTest: Type.Number(),
                usedThisHour: Type.Integer(),
                limitPerHour: Type.Integer(),
                remaining: Type.Integer(),
              }),
            ),
          },
        },
      },
      async (req) => {
        const q = req.query as { routeId?: string };
        return ok(await svc.quota(req.principal!.accountId, q.routeId ?? null));
      },
    );

    app.get(
      '/cli-tests/availability',
      {
        config: { access: DIALER },
        schema: {
          tags: TAGS,
          summary: 'Whether caller-ID testing is available (handsets registered and the voice plane up)',
          response: { 200: Ok(Type.Object({ enabled: Type.Boolean() })) },
        },
      },
      async () => ok(await svc.availability()),
    );

    app.get(
      '/cli-tests/countries',
      {
        config: { access: DIALER },
        schema: {
          tags: TAGS,
          summary: 'Countries with a test handset online; all null when testing is unavailable',
          response: {
            200: Ok(
              Type.Object({
                countries: Nullable(Type.Array(Type.String())),
                dialCodes: Nullable(Type.Array(Type.String())),
                checkedAt: Nullable(DateTime()),
              }),
            ),
          },
        },
      },
      async () => ok(await svc.countriesOnline()),
    );

    app.post(
      '/cli-tests/batches/preview',
      {
        config: { access: { ...DIALER, testKeys: 'allow' } },
        schema: {
          tags: TAGS,
          summary: 'What a route liveness batch would test, cost and take; writes nothing, charges nothing',
          body: Type.Object(
            { routeIds: Type.Array(Uuid(), { minItems: 1, maxItems: 100 }) },
            { additionalProperties: false },
          ),
          response: {
            200: Ok(
              Type.Object({
                enabled: Type.Boolean(),
                routes: Type.Array(
                  Type.Object({
                    id: Uuid(),
                    name: Type.String(),
                    country: Type.String(),
                    testable: Type.Boolean(),
                    reason: Nullable(Type.String()),
                  }),
                ),
                testableCount: Type.Integer(),
                minRoutes: Type.Integer(),
                maxRoutes: Type.Integer(),
                costPerTest: Type.Number(),
                maxCost: Type.String(),
                balance: Money(),
                quota: Type.Object({
                  usedThisHour: Type.Integer(),
                  capPerHour: Type.Integer(),
                  remaining: Type.Integer(),
                }),
                countries: Type.Array(
                  Type.Object({
                    country: Type.String(),
                    routes: Type.Integer(),
                    handsets: Type.Integer(),
                    parallel: Type.Integer(),
                    seconds: Type.Integer(),
                  }),
                ),
                estimatedSeconds: Type.Integer(),
                noHandsetCountries: Type.Array(Type.String()),
                handsetWaitMinutes: Type.Integer(),
                gapSeconds: Type.Integer(),
                maxParallel: Type.Integer(),
                runningBatchId: Nullable(Uuid()),
              }),
            ),
          },
        },
      },
      async (req) => ok(await svc.preview(tester(req.principal!), req.body.routeIds)),
    );

    app.post(
      '/cli-tests/batches',
      {
        config: { access: { ...DIALER, testKeys: 'simulate' } },
        schema: {
          tags: TAGS,
          summary: 'Run a route liveness batch: one caller-ID test per route (2 to 20), one running batch at a time',
          body: Type.Object(
            {
              routeIds: Type.Array(Uuid(), { minItems: 1, maxItems: 100 }),
              displayCli: Type.Optional(Type.String({ maxLength: 32 })),
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Batch) },
        },
      },
      async (req, reply) => reply.code(201).send(ok(await svc.startBatch(tester(req.principal!), req.body))),
    );

    app.get(
      '/cli-tests/batches',
      {
        config: { access: DIALER },
        schema: {
          tags: TAGS,
          summary: 'Batches of the account, newest first',
          querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })) }),
          response: { 200: Ok(Type.Array(Batch)) },
        },
      },
      async (req) => ok(await svc.batches(req.principal!.accountId, req.query.limit ?? 20)),
    );

    app.get(
      '/cli-tests/batches/:id',
      {
        config: { access: DIALER },
        schema: { tags: TAGS, summary: 'A batch and its tests', params: IdParams, response: { 200: Ok(Batch) } },
      },
      async (req) => ok(await svc.batch(req.principal!.accountId, req.params.id)),
    );

    app.post(
      '/cli-tests/batches/:id/cancel',
      {
        config: { access: DIALER },
        schema: {
          tags: TAGS,
          summary: 'Cancel a batch: routes not yet called are stopped',
          params: IdParams,
          response: { 200: Ok(Batch) },
        },
      },
      async (req) => ok(await svc.cancelBatch(req.principal!.accountId, req.params.id)),
    );

    app.get(
      '/cli-tests/:id',
      {
        config: { access: DIALER },
        schema: { tags: TAGS, summary: 'A caller-ID test', params: IdParams, response: { 200: Ok(CliTest) } },
      },
      async (req) => ok(await svc.get(req.principal!.accountId, req.params.id)),
    );

    app.post(
      '/cli-tests/:id/cancel',
      {
        config: { access: DIALER },
        schema: {
          tags: TAGS,
          summary: 'Cancel a scheduled or pending test (a recurring series stops with it)',
          params: IdParams,
          response: { 200: Ok(CliTest) },
        },
      },
      async (req) => ok(await svc.cancel(req.principal!.accountId, req.params.id)),
    );

    app.post(
      '/cli-tests/:id/retry',
      {
        config: { access: { ...DIALER, testKeys: 'simulate' } },
        schema: {
          tags: TAGS,
          summary: 'Run a finished test again now (same route, caller ID and country)',
          params: IdParams,
          response: { 201: Ok(CliTest) },
        },
      },
      async (req, reply) => reply.code(201).send(ok(await svc.retry(tester(req.principal!), req.params.id))),
    );

    // Operator (session of the platform operator, role admin): the test handsets.
    app.get(
      '/operator/cli-handsets',
      {
        config: { access: { auth: 'session' } },
        schema: {
          tags: TAGS,
          summary: 'Caller-ID test handsets (platform operator)',
          response: { 200: Ok(Type.Array(Handset)) },
        },
      },
      async (req) => {
        operatorOnly(req.principal);
        return ok((await svc.handsets()).map(handsetView));
      },
    );
    app.post(
      '/operator/cli-handsets',
      {
        config: { access: { auth: 'session' } },
        schema: {
          tags: TAGS,
          summary:
            'Register a test handset: a number hosted on this exchange, observed as calls arrive (platform operator)',
          body: Type.Object(
            {
              number: Type.String({ maxLength: 32 }),
              country: Type.String({ minLength: 2, maxLength: 2 }),
              label: Type.Optional(Type.String({ maxLength: 120 })),
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Handset) },
        },
      },
      async (req, reply) => {
        operatorOnly(req.principal);
        return reply.code(201).send(ok(handsetView(await svc.addHandset(req.body))));
      },
    );
    app.delete(
      '/operator/cli-handsets/:id',
      {
        config: { access: { auth: 'session' } },
        schema: {
          tags: TAGS,
          summary: 'Remove a test handset (platform operator)',
          params: IdParams,
          response: { 200: Ok(Handset) },
        },
      },
      async (req) => {
        operatorOnly(req.principal);
        return ok(handsetView(await svc.removeHandset(req.params.id)));
      },
    );
  };
}
