import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { CursorPage, DateTime, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { cursorPage, CursorQuery } from '../../http/pagination.js';
import { MAX_ATTEMPTS } from '../../webhooks/worker.js';
import type { WebhooksService } from './service.js';

const TAGS = ['Webhooks'];
const READ = { auth: 'required', scope: 'account:read' } as const;
const WRITE = { auth: 'required', scope: 'webhooks:write' } as const;

const EVENTS_DOC =
  'Event names to deliver (spec "Subscribable events", plus `call.ringing`, `call.answered`, `call.gathered`, ' +
  '`sms.delivered`, `sms.failed`); `"*"` or no list subscribes to every event. An unknown name is a ' +
  'VALIDATION_ERROR naming it.';

const DELIVERY_DOC =
  'Each delivery is an HTTPS POST of `{ id, event, data, timestamp }` where `id` equals the `X-Webhook-Id` header ' +
  '(unique per delivery, the same on its retries, so the de-duplication key is covered by the signature) and ' +
  '`timestamp` is when the event happened. Headers: `X-Webhook-Event`, `X-Webhook-Id`, `X-Svc-Timestamp` (Unix ' +
  'seconds of this attempt), `X-Svc-Signature: v1=<hex HMAC-SHA256 of "<timestamp>.<raw body>">`, legacy ' +
  '`X-Webhook-Signature: sha256=<hex HMAC-SHA256 of the raw body>`. A 2xx within 10 seconds acknowledges; ' +
  `otherwise up to ${MAX_ATTEMPTS} attempts in all, the next after 1, 4, 9 and 16 minutes. Redirects are not ` +
  'followed. After `webhooks.disable_after_failures` (default 20) deliveries in a row fail all their attempts, ' +
  'the endpoint is disabled and the owner notified.';

const Endpoint = Type.Object({
  id: Uuid(),
  url: Type.String(),
  description: Type.String(),
  events: Type.Array(Type.String()),
  status: Type.Union([Type.Literal('active'), Type.Literal('disabled')]),
  disabledReason: Nullable(Type.String()),
  disabledAt: Nullable(DateTime()),
  consecutiveFailures: Type.Integer({ description: 'deliveries in a row that failed all attempts' }),
  secretLast4: Type.String({ description: 'last 4 characters of the signing secret' }),
  secretRotatedAt: Nullable(DateTime()),
  createdAt: DateTime(),
  updatedAt: DateTime(),
});
const WithSecret = Type.Intersect([
  Endpoint,
  Type.Object({ secret: Type.String({ description: 'the signing secret, shown once' }) }),
]);

const Attempt = Type.Object({
  attempt: Type.Integer(),
  startedAt: DateTime(),
  finishedAt: Nullable(DateTime()),
  outcome: Nullable(
    Type.String({
      description:
        'ok, http_status, redirect, timeout, connect_error, tls_error, refused_target, worker_lost, endpoint_inactive',
    }),
  ),
  statusCode: Nullable(Type.Integer()),
  error: Nullable(Type.String()),
  responseExcerpt: Nullable(Type.String({ description: 'the first 1 KiB of the response body' })),
  durationMs: Nullable(Type.Integer()),
});
const Delivery = Type.Object({
  id: Uuid('X-Webhook-Id and body `id`'),
  endpointId: Uuid(),
  eventId: Uuid(),
  event: Type.String(),
  state: Type.Union([
    Type.Literal('pending'),
    Type.Literal('in_flight'),
    Type.Literal('succeeded'),
    Type.Literal('failed'),
  ]),
  attempts: Type.Integer(),
  nextAttemptAt: Nullable(DateTime()),
  lastStatus: Nullable(Type.Integer()),
  lastError: Nullable(Type.String()),
  resentFrom: Nullable(Uuid()),
  createdAt: DateTime(),
  completedAt: Nullable(DateTime()),
  attemptLog: Type.Array(Attempt),
});
const DeliveryDetail = Type.Intersect([
  Delivery,
  Type.Object({
    payload: Type.Object(
      {},
      { additionalProperties: true, description: 'the body sent: { id, event, data, timestamp }' },
    ),
  }),
]);

const Id = Type.Object({ id: Uuid() });
const DeliveryId = Type.Object({ deliveryId: Uuid() });
const DeliveryQuery = Type.Object({
  ...CursorQuery(),
  state: Type.Optional(
    Type.Union([Type.Literal('pending'), Type.Literal('in_flight'), Type.Literal('succeeded'), Type.Literal('failed')]),
  ),
  event: Type.Optional(Type.String({ maxLength: 64 })),
});
const Url = Type.String({ minLength: 1, maxLength: 2048, description: 'https:// address of the receiver' });
const Events = Type.Array(Type.String({ maxLength: 64 }), { minItems: 1, maxItems: 64, description: EVENTS_DOC });
const Description = Type.String({ maxLength: 500 });

export function webhooksRoutes(webhooks: WebhooksService) {
  return (app: App) => {
    app.post(
      '/account/webhooks',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Register a webhook endpoint (the signing secret is returned once)',
          description: DELIVERY_DOC,
          body: Type.Object(
            { url: Url, events: Type.Optional(Events), description: Type.Optional(Description) },
            { additionalProperties: false },
          ),
          response: { 201: Ok(WithSecret) },
        },
      },
      async (req, reply) => {
        const { endpoint, secret } = await webhooks.createEndpoint(req.principal!.accountId, req.body);
        return reply.code(201).send(ok({ ...endpoint, secret }));
      },
    );

    app.get(
      '/account/webhooks',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'List webhook endpoints (secrets as their last 4 characters)',
          response: { 200: Ok(Type.Array(Endpoint)) },
        },
      },
      async (req) => ok(await webhooks.listEndpoints(req.principal!.accountId)),
    );

    // Registered before /account/webhooks/:id so "deliveries" is never read as an endpoint id.
    app.get(
      '/account/webhooks/deliveries',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Deliveries to all endpoints, newest first, with every attempt',
          querystring: DeliveryQuery,
          response: { 200: CursorPage(Delivery) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        return cursorPage(await webhooks.listDeliveries(req.principal!.accountId, { ...req.query, limit }), limit);
      },
    );

    app.get(
      '/account/webhooks/deliveries/:deliveryId',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'One delivery: its body and every attempt',
          params: DeliveryId,
          response: { 200: Ok(DeliveryDetail) },
        },
      },
      async (req) => ok(await webhooks.getDelivery(req.principal!.accountId, req.params.deliveryId)),
    );

    app.post(
      '/account/webhooks/deliveries/:deliveryId/resend',
      {
        config: { access: WRITE, rateLimit: { points: 10, seconds: 1 } },
        schema: {
          tags: TAGS,
          summary: 'Resend a delivery',
          description:
            'Queues a new delivery of the same event to the same endpoint. It has a new id (`X-Webhook-Id`), so a ' +
            'receiver that de-duplicates does not drop it, and `resentFrom` names the original. Signed with the current secret.',
          params: DeliveryId,
          response: { 202: Ok(DeliveryDetail) },
        },
      },
      async (req, reply) =>
        reply.code(202).send(ok(await webhooks.resend(req.principal!.accountId, req.params.deliveryId))),
    );

    app.get(
      '/account/webhooks/:id',
      {
        config: { access: READ },
        schema: { tags: TAGS, summary: 'One webhook endpoint', params: Id, response: { 200: Ok(Endpoint) } },
      },
      async (req) => ok(await webhooks.getEndpoint(req.principal!.accountId, req.params.id)),
    );

    app.patch(
      '/account/webhooks/:id',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Change a webhook endpoint; `enabled: true` re-enables a disabled one',
          params: Id,
          body: Type.Object(
            {
              url: Type.Optional(Url),
              events: Type.Optional(Events),
              description: Type.Optional(Description),
              enabled: Type.Optional(Type.Boolean()),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Endpoint) },
        },
      },
      async (req) => ok(await webhooks.updateEndpoint(req.principal!.accountId, req.params.id, req.body)),
    );

    app.delete(
      '/account/webhooks/:id',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Delete a webhook endpoint; its pending deliveries are not sent',
          params: Id,
          response: { 200: Ok(Endpoint) },
        },
      },
      async (req) => ok(await webhooks.deleteEndpoint(req.principal!.accountId, req.params.id)),
    );

    app.post(
      '/account/webhooks/:id/rotate-secret',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Rotate the signing secret (the new one is returned once)',
          description:
            'No overlap: the old secret stops signing at once, and every attempt from now on (retries of earlier ' +
            'deliveries included) is signed with the new one. To rotate without dropping deliveries, accept both ' +
            'secrets in your receiver for a few minutes.',
          params: Id,
          response: { 200: Ok(WithSecret) },
        },
      },
      async (req) => {
        const { endpoint, secret } = await webhooks.rotateSecret(req.principal!.accountId, req.params.id);
        return ok({ ...endpoint, secret });
      },
    );

    app.post(
      '/account/webhooks/:id/test',
      {
        config: { access: WRITE, rateLimit: { points: 5, seconds: 1 } },
        schema: {
          tags: TAGS,
          summary: 'Send a test ping (event `ping`, empty `data`)',
          description:
            'Queued like any delivery and sent at once by the worker; follow it with GET /account/webhooks/deliveries/{deliveryId}.',
          params: Id,
          response: { 202: Ok(DeliveryDetail) },
        },
      },
      async (req, reply) => reply.code(202).send(ok(await webhooks.sendTest(req.principal!.accountId, req.params.id))),
    );

    app.get(
      '/account/webhooks/:id/deliveries',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Deliveries to one endpoint, newest first, with every attempt',
          params: Id,
          querystring: DeliveryQuery,
          response: { 200: CursorPage(Delivery) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        return cursorPage(
          await webhooks.listDeliveries(req.principal!.accountId, { ...req.query, endpointId: req.params.id, limit }),
          limit,
        );
      },
    );
  };
}
