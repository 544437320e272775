import { Type } from 'typebox';
import type { FastifyRequest } from 'fastify';
import type { App } from '../../../http/app.js';
import { CursorPage, DateTime, Nullable, Ok, Uuid, ok } from '../../../http/envelope.js';
import { cursorPage, CursorQuery } from '../../../http/pagination.js';
import { MAX_EVIDENCE, REPORT_CATEGORIES } from './service.js';
import type { ReportsService } from './service.js';

const TAGS = ['Route reports'];
const READ = { auth: 'required', scope: 'routes:read' } as const;
const WRITE = { auth: 'required', scope: 'routes:write' } as const;
/** Operator decisions come from a dashboard session of an admin account. */
const OPERATOR = { auth: 'session' } as const;

const Status = Type.Union(
  ['open', 'answered', 'escalated', 'resolved', 'upheld', 'rejected', 'withdrawn'].map((s) => Type.Literal(s)),
);
const Role = Type.Union([Type.Literal('reporter'), Type.Literal('seller'), Type.Literal('operator')]);
const Report = Type.Object({
  id: Uuid(),
  routeId: Uuid(),
  routeName: Type.String(),
  role: Role,
  reporterId: Nullable(Uuid('never shown to the seller')),
  category: Type.String(),
  description: Type.String(),
  status: Type.String(),
  evidence: Type.Array(
    Type.Object({
      cdrId: Uuid(),
      kind: Type.String(),
      status: Nullable(Type.String()),
      sipCode: Nullable(Type.Integer()),
      hangupCause: Nullable(Type.String()),
      toPrefix: Nullable(Type.String({ description: 'the first six digits of the number called' })),
      cli: Nullable(Type.String()),
      durationSeconds: Nullable(Type.Integer()),
      billedSeconds: Nullable(Type.Integer()),
      pddMs: Nullable(Type.Integer()),
      answeredAt: Nullable(DateTime()),
      at: DateTime(),
    }),
  ),
  answer: Nullable(Type.String()),
  answeredAt: Nullable(DateTime()),
  outcomeNote: Nullable(Type.String()),
  decidedAt: Nullable(DateTime()),
  createdAt: DateTime(),
  updatedAt: DateTime(),
});
const Id = Type.Object({ id: Uuid() });
const Suspension = Type.Object({
  routeId: Uuid(),
  status: Type.String(),
  reason: Nullable(Type.String()),
  suspendedAt: Nullable(DateTime()),
});

const viewer = (req: FastifyRequest) => ({
  accountId: req.principal!.accountId,
  admin: req.principal!.role === 'admin',
});
const optionalBody = async (req: FastifyRequest) => {
  req.body ??= {};
};

export function reportsRoutes(reports: ReportsService) {
  return (app: App) => {
    app.post(
      '/routes/:id/reports',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Report a problem on a route, with your own records as evidence',
          description:
            '`cdrIds`: ids of your records (or your sub-accounts’) on this route, up to 20; required for every category but `fraud` and `other`. ' +
            'The seller is told (`route.report_received`) and sees the records’ facts (number cut to its first six digits), never who reported. ' +
            'One open report per route and category (409).',
          params: Id,
          body: Type.Object(
            {
              category: Type.Union(REPORT_CATEGORIES.map((c) => Type.Literal(c))),
              description: Type.String({ minLength: 1, maxLength: 4000 }),
              cdrIds: Type.Optional(Type.Array(Uuid(), { maxItems: MAX_EVIDENCE })),
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Report) },
        },
      },
      async (req, reply) =>
        reply.code(201).send(ok(await reports.create(req.principal!.accountId, req.params.id, req.body))),
    );

    app.get(
      '/routes/reports',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary:
            'Reports the caller filed or received, newest first (the operator: every report with `role=operator`)',
          querystring: Type.Object({
            ...CursorQuery(),
            role: Type.Optional(Role),
            status: Type.Optional(Status),
            routeId: Type.Optional(Uuid()),
          }),
          response: { 200: CursorPage(Report) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        return cursorPage(await reports.list(viewer(req), { ...req.query, limit }), limit);
      },
    );

    app.get(
      '/routes/reports/:id',
      {
        config: { access: READ },
        schema: { tags: TAGS, summary: 'One report', params: Id, response: { 200: Ok(Report) } },
      },
      async (req) => ok(await reports.get(viewer(req), req.params.id)),
    );

    app.post(
      '/routes/reports/:id/answer',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'The seller answers a report (the reporter is told: `route.report_answered`)',
          params: Id,
          body: Type.Object(
            { answer: Type.String({ minLength: 1, maxLength: 4000 }) },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Report) },
        },
      },
      async (req) => ok(await reports.answer(viewer(req), req.params.id, req.body.answer)),
    );

    app.post(
      '/routes/reports/:id/resolve',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: "The reporter accepts the seller's answer: the report is resolved",
          params: Id,
          response: { 200: Ok(Report) },
        },
      },
      async (req) => ok(await reports.resolve(viewer(req), req.params.id)),
    );

    app.post(
      '/routes/reports/:id/escalate',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'The reporter asks the operator to decide',
          params: Id,
          body: Type.Object({ note: Type.Optional(Type.String({ maxLength: 2000 })) }, { additionalProperties: false }),
          response: { 200: Ok(Report) },
        },
        preValidation: optionalBody,
      },
      async (req) => ok(await reports.escalate(viewer(req), req.params.id, req.body.note ?? null)),
    );

    app.post(
      '/routes/reports/:id/withdraw',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'The reporter withdraws an open report',
          params: Id,
          response: { 200: Ok(Report) },
        },
      },
      async (req) => ok(await reports.withdraw(viewer(req), req.params.id)),
    );

    app.post(
      '/routes/reports/:id/decide',
      {
        config: { access: OPERATOR },
        schema: {
          tags: TAGS,
          summary: 'The operator upholds or rejects an open report (upheld reports count against the listing’s health)',
          params: Id,
          body: Type.Object(
            {
              outcome: Type.Union([Type.Literal('upheld'), Type.Literal('rejected')]),
              note: Type.Optional(Type.String({ maxLength: 2000 })),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Report) },
        },
      },
      async (req) => ok(await reports.decide(viewer(req), req.params.id, req.body.outcome, req.body.note ?? null)),
    );

    app.post(
      '/routes/:id/suspend',
      {
        config: { access: OPERATOR },
        schema: {
          tags: TAGS,
          summary: 'The operator suspends a listing',
          description:
            'No new call or message goes over it (calls in progress end as they started), it leaves the marketplace, and the seller and every buyer holding a purchase are told (`route.suspended`).',
          params: Id,
          body: Type.Object({ reason: Type.String({ minLength: 1, maxLength: 500 }) }, { additionalProperties: false }),
          response: { 200: Ok(Suspension) },
        },
      },
      async (req) => ok(await reports.suspend(viewer(req), req.params.id, req.body.reason)),
    );

    app.post(
      '/routes/:id/reinstate',
      {
        config: { access: OPERATOR },
        schema: {
          tags: TAGS,
          summary: "The operator lifts a listing's suspension",
          params: Id,
          response: { 200: Ok(Suspension) },
        },
      },
      async (req) => ok(await reports.reinstate(viewer(req), req.params.id)),
    );
  };
}
