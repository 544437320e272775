import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { CursorPage, DateTime, Money, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { forbidden, validationError } from '../../http/errors.js';
import { cursorPage, CursorQuery } from '../../http/pagination.js';
import type { Principal } from '../../http/access.js';
import type { RouteChecksService, TestLine } from './service.js';

const TAGS = ['Route checks'];
const Result = Type.Union([
  Type.Literal('pending'),
  Type.Literal('checking'),
  Type.Literal('working'),
  Type.Literal('no_capacity'),
  Type.Literal('not_delivered'),
  Type.Literal('false_answer'),
  Type.Literal('inconclusive'),
  Type.Literal('accepts'),
  Type.Literal('accepted'),
  Type.Literal('delivered'),
  Type.Literal('refused'),
]);

const CheckLeg = Type.Object({
  position: Type.Integer(),
  role: Type.Union([Type.Literal('primary'), Type.Literal('backup')]),
  routeId: Uuid(),
  routeName: Type.String(),
  country: Type.String(),
  ownRoute: Type.Boolean(),
  result: Result,
  message: Type.String(),
  checkType: Nullable(
    Type.Union([
      Type.Literal('full'),
      Type.Literal('light'),
      Type.Literal('ring_me'),
      Type.Literal('sms'),
      Type.Literal('simulated'),
    ]),
  ),
  destination: Nullable(Type.String()),
  lineType: Nullable(Type.Union([Type.Literal('fixed'), Type.Literal('mobile')])),
  rang: Nullable(Type.Boolean()),
  answered: Nullable(Type.Boolean()),
  pddMs: Nullable(Type.Integer()),
  sipCode: Nullable(Type.Integer()),
  billableSeconds: Type.Integer(),
  cost: Money(),
  paidFrom: Nullable(Type.Union([Type.Literal('test_credit'), Type.Literal('balance'), Type.Literal('mixed')])),
  answerMs: Nullable(Type.Integer()),
  completedAt: Nullable(DateTime()),
  messageRef: Nullable(Type.String()),
  sender: Nullable(Type.String()),
  errorCode: Nullable(
    Type.Union([
      Type.Literal('SELLER_REJECTED'),
      Type.Literal('NO_ENDPOINT'),
      Type.Literal('UNDELIVERABLE'),
      Type.Literal('EXPIRED'),
      Type.Literal('REJECTED'),
    ]),
  ),
  carrierStatus: Nullable(Type.String()),
  carrierError: Nullable(Type.String()),
  acceptedAt: Nullable(DateTime()),
  receiptAt: Nullable(DateTime()),
  routeReturnsReceipts: Nullable(Type.Boolean()),
});

export const RouteCheck = Type.Object({
  id: Uuid(),
  status: Type.Union([Type.Literal('running'), Type.Literal('done')]),
  mode: Type.Union([Type.Literal('network'), Type.Literal('ring_me'), Type.Literal('sms')]),
  simulated: Type.Boolean(),
  number: Nullable(Type.String()),
  createdAt: DateTime(),
  completedAt: Nullable(DateTime()),
  totalCost: Money(),
  routes: Type.Array(CheckLeg),
  working: Type.Array(Uuid()),
});

const CheckStarted = Ok(Type.Object({ checkId: Uuid() }));
const IdParams = Type.Object({ id: Uuid() });

const TestLineView = Type.Object({
  id: Uuid(),
  number: Type.String(),
  country: Type.String(),
  lineType: Type.Union([Type.Literal('fixed'), Type.Literal('mobile')]),
  label: Nullable(Type.String()),
  createdAt: DateTime(),
});
const testLineView = (l: TestLine) => ({ ...l, number: `+${l.number}`, createdAt: l.createdAt.toISOString() });

const checker = (p: Principal) => ({ accountId: p.accountId, parentId: p.parentId, mode: p.mode });

function routeIdList(raw: string): string[] {
  const ids = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
  if (ids.length < 1 || ids.length > 3 || ids.some((id) => !uuid.test(id))) {
    throw validationError([{ path: 'routeIds', message: 'must be 1 to 3 comma-separated route ids' }]);
  }
  return ids;
}

function operatorOnly(p: Principal | null | undefined): void {
  if (p?.role !== 'admin') throw forbidden('Only the platform operator manages test lines');
}

export function routeChecksRoutes(svc: RouteChecksService) {
  return (app: App) => {
    app.post(
      '/routes/check',
      {
        config: { access: { auth: 'required', scope: 'voice:send', testKeys: 'simulate' }, idempotent: true },
        schema: {
          tags: TAGS,
          summary: 'Check up to three routes with a short real call (network or ring_me mode)',
          description:
            'network: one call per route to a self-answering test line covered by the route (answered, held about two seconds, ended), ' +
            'else a light check (INVITE until a provisional answer, then CANCEL) to `number` when it is a full number. ring_me: the route calls ' +
            'your own phone; ringing counts as working. Connected legs cost the route rate plus the platform fee for billable seconds, from test ' +
            'credit first, then balance; unanswered legs, suspected false answers and own listings are free. 10 checks a minute, 60 an hour per ' +
            'account (429); ring-me: 3 calls an hour per number, 3 numbers a day per account; limiter unreachable: 503.',
          body: Type.Object(
            {
              routeIds: Type.Array(Uuid(), {
                minItems: 1,
                maxItems: 3,
                description: 'first is primary, the rest backups',
              }),
              number: Type.Optional(Type.String({ maxLength: 32 })),
              mode: Type.Optional(Type.Union([Type.Literal('network'), Type.Literal('ring_me')])),
            },
            { additionalProperties: false },
          ),
          response: { 202: CheckStarted },
        },
      },
      async (req, reply) => reply.code(202).send(ok(await svc.start(checker(req.principal!), req.body))),
    );

    app.post(
      '/routes/check/sms',
      {
        config: { access: { auth: 'required', scope: 'sms:send', testKeys: 'simulate' }, idempotent: true },
        schema: {
          tags: TAGS,
          summary: 'Send one fixed test message over exactly one SMS listing to your own mobile',
          description:
            'Fixed text ending in a 4-character reference, fixed sender (numeric on numeric-only routes), never via Smart Routing. ' +
            "Refused with 400: number not covered, premium-rate, satellite, special-service or short-code ranges. Billed the route's " +
            'one-message price plus fee from test credit first; a refused message is not charged, a failed receipt is refunded, ' +
            'own listing free. 3 test messages per number an hour (all accounts), 5 numbers and 20 messages per account a day (429).',
          body: Type.Object(
            {
              routeId: Uuid('an SMS listing'),
              number: Type.String({ minLength: 1, maxLength: 32, description: 'your own mobile, E.164' }),
            },
            { additionalProperties: false },
          ),
          response: { 202: CheckStarted },
        },
      },
      async (req, reply) => reply.code(202).send(ok(await svc.startSms(checker(req.principal!), req.body))),
    );

    app.get(
      '/routes/check/coverage',
      {
        config: { access: { auth: 'required', scope: 'routes:read' } },
        schema: {
          tags: TAGS,
          summary: 'Whether a registered public test line exists for each route’s destination',
          querystring: Type.Object({
            routeIds: Type.String({ description: 'comma-separated, 1 to 3' }),
            number: Type.Optional(Type.String({ maxLength: 32 })),
          }),
          response: { 200: Ok(Type.Array(Type.Object({ routeId: Uuid(), testLine: Type.Boolean() }))) },
        },
      },
      async (req) =>
        ok(await svc.coverage(req.principal!.accountId, routeIdList(req.query.routeIds), req.query.number ?? null)),
    );

    app.get(
      '/routes/check/limits',
      {
        config: { access: { auth: 'required', scope: 'routes:read' } },
        schema: {
          tags: TAGS,
          summary: 'What the account has left under the route-check limits',
          response: {
            200: Ok(
              Type.Object({
                checks: Type.Array(
                  Type.Object({
                    window: Type.String(),
                    limit: Type.Integer(),
                    used: Type.Integer(),
                    remaining: Type.Integer(),
                  }),
                ),
                ringMe: Type.Object({
                  perNumberPerHour: Type.Integer(),
                  numbersPerDay: Type.Integer(),
                  numbersUsedToday: Type.Integer(),
                }),
              }),
            ),
          },
        },
      },
      async (req) => ok(await svc.limits(req.principal!.accountId)),
    );

    app.get(
      '/routes/check/:id',
      {
        config: { access: { auth: 'required', scope: 'routes:read' } },
        schema: {
          tags: TAGS,
          summary: 'A route check: per-route verdicts in the order given',
          params: IdParams,
          response: { 200: Ok(RouteCheck) },
        },
      },
      async (req) => ok(await svc.get(req.principal!.accountId, req.params.id)),
    );

    app.get(
      '/routes/checks',
      {
        config: { access: { auth: 'required', scope: 'routes:read' } },
        schema: {
          tags: TAGS,
          summary: 'Route checks of the account, newest first (test SMS included, mode sms)',
          querystring: Type.Object({
            ...CursorQuery(),
            mode: Type.Optional(Type.Union([Type.Literal('network'), Type.Literal('ring_me'), Type.Literal('sms')])),
          }),
          response: { 200: CursorPage(RouteCheck) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        return cursorPage(
          await svc.list(req.principal!.accountId, { cursor: req.query.cursor, mode: req.query.mode, limit }),
          limit,
        );
      },
    );

    app.post(
      '/routes/check/:id/purchase',
      {
        config: { access: { auth: 'required', scope: 'purchases:write' } },
        schema: {
          tags: TAGS,
          summary: 'Buy the routes that passed a check and put them at the top of the routing order, primary first',
          params: IdParams,
          response: {
            200: Ok(
              Type.Object({
                checkId: Uuid(),
                purchased: Type.Array(Type.Object({ routeId: Uuid(), purchaseId: Uuid(), created: Type.Boolean() })),
                routingOrder: Type.Array(
                  Type.Object({
                    routeId: Uuid(),
                    position: Type.Integer(),
                    routeName: Type.String(),
                    type: Type.String(),
                  }),
                ),
              }),
            ),
          },
        },
      },
      async (req) => ok(await svc.purchase(req.principal!.accountId, req.params.id)),
    );

    // Operator (session of the platform operator, role admin): the public self-answering test lines checks call.
    app.get(
      '/operator/route-test-lines',
      {
        config: { access: { auth: 'session' } },
        schema: {
          tags: TAGS,
          summary: 'Route-check test lines (platform operator)',
          response: { 200: Ok(Type.Array(TestLineView)) },
        },
      },
      async (req) => {
        operatorOnly(req.principal);
        return ok((await svc.testLines()).map(testLineView));
      },
    );
    app.post(
      '/operator/route-test-lines',
      {
        config: { access: { auth: 'session' } },
        schema: {
          tags: TAGS,
          summary: 'Register a self-answering test line (platform operator)',
          body: Type.Object(
            {
              number: Type.String({ maxLength: 32 }),
              country: Type.String({ minLength: 2, maxLength: 2 }),
              lineType: Type.Union([Type.Literal('fixed'), Type.Literal('mobile')]),
              label: Type.Optional(Type.String({ maxLength: 120 })),
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(TestLineView) },
        },
      },
      async (req, reply) => {
        operatorOnly(req.principal);
        return reply.code(201).send(ok(testLineView(await svc.addTestLine(req.body))));
      },
    );
    app.delete(
      '/operator/route-test-lines/:id',
      {
        config: { access: { auth: 'session' } },
        schema: {
          tags: TAGS,
          summary: 'Remove a test line (platform operator)',
          params: IdParams,
          response: { 200: Ok(TestLineView) },
        },
      },
      async (req) => {
        operatorOnly(req.principal);
        return ok(testLineView(await svc.removeTestLine(req.params.id)));
      },
    );
  };
}
