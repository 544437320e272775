import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { CursorPage, DateTime, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { requireOperator } from '../../http/operator.js';
import { CursorQuery, cursorPage } from '../../http/pagination.js';
import type { StatusService } from './service.js';

const TAGS = ['Status'];
const PUBLIC = { auth: 'public' } as const;
const Kind = Type.Union([Type.Literal('incident'), Type.Literal('maintenance')]);
const IncidentStatus = Type.Union([
  Type.Literal('investigating'),
  Type.Literal('identified'),
  Type.Literal('monitoring'),
  Type.Literal('resolved'),
  Type.Literal('scheduled'),
  Type.Literal('in_progress'),
  Type.Literal('completed'),
]);
const Impact = Type.Union([
  Type.Literal('none'),
  Type.Literal('minor'),
  Type.Literal('major'),
  Type.Literal('critical'),
  Type.Literal('maintenance'),
]);
const ComponentId = Type.Union([
  Type.Literal('api'),
  Type.Literal('sip'),
  Type.Literal('smpp'),
  Type.Literal('media'),
  Type.Literal('database'),
]);
const Incident = Type.Object({
  id: Uuid(),
  kind: Kind,
  title: Type.String(),
  status: IncidentStatus,
  impact: Impact,
  components: Type.Array(Type.String()),
  startsAt: DateTime(),
  endsAt: Nullable(DateTime()),
  resolvedAt: Nullable(DateTime()),
  createdAt: DateTime(),
  updatedAt: DateTime(),
  updates: Type.Array(
    Type.Object({ id: Uuid(), status: Type.String(), message: Type.String(), createdAt: DateTime() }),
  ),
});

export function statusPageRoutes(status: StatusService, uptimeDays: number) {
  return (app: App) => {
    app.get(
      '/status/components',
      {
        config: { access: PUBLIC },
        schema: {
          tags: TAGS,
          summary: 'Components (API, SIP, SMPP, media, database) with live health and the incidents in effect',
          response: {
            200: Ok(
              Type.Object({
                indicator: Type.Union([
                  Type.Literal('none'),
                  Type.Literal('maintenance'),
                  Type.Literal('minor'),
                  Type.Literal('major'),
                  Type.Literal('critical'),
                ]),
                description: Type.String(),
                updatedAt: DateTime(),
                components: Type.Array(
                  Type.Object({
                    id: Type.String(),
                    name: Type.String(),
                    status: Type.String({
                      description:
                        'operational, degraded_performance, partial_outage, major_outage, under_maintenance or unknown',
                    }),
                    live: Nullable(Type.Object({ ok: Type.Boolean() })),
                    incidentIds: Type.Array(Uuid()),
                  }),
                ),
              }),
            ),
          },
        },
      },
      async (_req, reply) => reply.header('cache-control', 'public, max-age=15').send(ok(await status.components())),
    );

    app.get(
      '/status/uptime',
      {
        config: { access: PUBLIC },
        schema: {
          tags: TAGS,
          summary: 'Uptime per component by UTC day, from health samples',
          querystring: Type.Object({
            days: Type.Optional(Type.Integer({ minimum: 1, maximum: uptimeDays, default: Math.min(90, uptimeDays) })),
          }),
          response: {
            200: Ok(
              Type.Object({
                days: Type.Integer(),
                components: Type.Array(
                  Type.Object({
                    id: Type.String(),
                    name: Type.String(),
                    uptimePct: Nullable(Type.Number({ description: 'display number; null without samples' })),
                    points: Type.Array(
                      Type.Object({
                        date: Type.String({ format: 'date' }),
                        uptimePct: Nullable(Type.Number()),
                        samples: Type.Integer(),
                      }),
                    ),
                  }),
                ),
              }),
            ),
          },
        },
      },
      async (req) => ok(await status.uptime(req.query.days ?? Math.min(90, uptimeDays))),
    );

    app.get(
      '/status/incidents',
      {
        config: { access: PUBLIC },
        schema: {
          tags: TAGS,
          summary: 'Incidents and maintenance windows with their updates, newest first',
          querystring: Type.Object({
            ...CursorQuery(),
            kind: Type.Optional(Kind),
            state: Type.Optional(
              Type.Union([Type.Literal('active'), Type.Literal('upcoming'), Type.Literal('resolved')]),
            ),
          }),
          response: { 200: CursorPage(Incident) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        return cursorPage(
          await status.incidents({ kind: req.query.kind, state: req.query.state, cursor: req.query.cursor, limit }),
          limit,
        );
      },
    );

    app.post(
      '/status/incidents',
      {
        config: { access: { auth: 'session' } },
        schema: {
          tags: TAGS,
          summary: 'Operators: post an incident or schedule a maintenance window (subscribers are e-mailed)',
          body: Type.Object(
            {
              kind: Kind,
              title: Type.String({ minLength: 3, maxLength: 200 }),
              message: Type.String({ minLength: 1, maxLength: 5000 }),
              impact: Type.Optional(Impact),
              components: Type.Array(ComponentId, { minItems: 1, maxItems: 5, uniqueItems: true }),
              status: Type.Optional(IncidentStatus),
              startsAt: Type.Optional(Type.String({ format: 'date-time' })),
              endsAt: Type.Optional(Type.String({ format: 'date-time' })),
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Incident) },
        },
      },
      async (req, reply) => {
        const op = requireOperator(req.principal);
        return reply.code(201).send(ok(await status.createIncident(op.accountId, req.body)));
      },
    );

    app.post(
      '/status/incidents/:id/updates',
      {
        config: { access: { auth: 'session' } },
        schema: {
          tags: TAGS,
          summary: 'Operators: post an update; resolved (incident) or completed (maintenance) closes it',
          params: Type.Object({ id: Uuid() }),
          body: Type.Object(
            {
              status: IncidentStatus,
              message: Type.String({ minLength: 1, maxLength: 5000 }),
              impact: Type.Optional(Impact),
              endsAt: Type.Optional(Type.String({ format: 'date-time' })),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Incident) },
        },
      },
      async (req) => {
        const op = requireOperator(req.principal);
        return ok(await status.postUpdate(op.accountId, req.params.id, req.body));
      },
    );

    app.post(
      '/status/subscriptions',
      {
        config: { access: PUBLIC, rateLimit: { points: 5, seconds: 3600 } },
        schema: {
          tags: TAGS,
          summary: 'Subscribe an e-mail address to incident and maintenance updates (confirmed by e-mail)',
          description: 'The answer is the same whether or not the address is subscribed already.',
          body: Type.Object(
            { email: Type.String({ format: 'email', maxLength: 254 }) },
            { additionalProperties: false },
          ),
          response: { 202: Ok(Type.Object({ message: Type.String() })) },
        },
      },
      async (req, reply) => {
        await status.subscribe(req.body.email);
        return reply.code(202).send(ok({ message: 'Check your inbox: the e-mail we sent confirms the subscription' }));
      },
    );

    app.post(
      '/status/subscriptions/manage',
      {
        config: { access: PUBLIC, rateLimit: { points: 30, seconds: 60 } },
        schema: {
          tags: TAGS,
          summary: 'Confirm a subscription, or unsubscribe, with the token from its e-mails',
          body: Type.Object(
            {
              token: Type.String({ minLength: 20, maxLength: 100 }),
              action: Type.Union([Type.Literal('confirm'), Type.Literal('unsubscribe')]),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Type.Object({ subscribed: Type.Boolean(), confirmedAt: Nullable(DateTime()) })) },
        },
      },
      async (req) => ok(await status.manageSubscription(req.body.token, req.body.action)),
    );
  };
}
