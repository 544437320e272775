import { Type } from 'typebox';
import { HistoryEntry } from '../billing/history-entry.js';
import type { App } from '../../http/app.js';
import { CursorPage, DateTime, Money, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { cursorPage, CursorQuery } from '../../http/pagination.js';
import type { SmsService } from './service.js';

const Strategy = Type.Union([Type.Literal('cheapest'), Type.Literal('best_quality'), Type.Literal('balanced')]);
/** 10 concatenated UCS-2 parts' worth; longer texts are refused by the schema. */
const MAX_MESSAGE = 1600;

const SendBody = Type.Object(
  {
    to: Type.String({ minLength: 1, maxLength: 32, description: 'E.164' }),
    from: Type.String({
      minLength: 1,
      maxLength: 16,
      description: 'numeric up to 15 digits, or alphanumeric up to 11 characters',
    }),
    message: Type.String({ minLength: 1, maxLength: MAX_MESSAGE }),
    routeId: Type.Optional(Uuid('a purchased or own SMS route')),
    strategy: Type.Optional(Strategy),
  },
  { additionalProperties: false },
);

const BulkBody = Type.Object(
  {
    to: Type.Array(Type.String({ minLength: 1, maxLength: 32 }), {
      minItems: 1,
      maxItems: 1000,
      description: 'recipients, E.164',
    }),
    from: Type.String({ minLength: 1, maxLength: 16 }),
    message: Type.String({ minLength: 1, maxLength: MAX_MESSAGE }),
    routeId: Type.Optional(Uuid()),
    strategy: Type.Optional(Strategy),
  },
  { additionalProperties: false },
);

const Network = Type.Object({
  mccMnc: Nullable(Type.String()),
  name: Nullable(Type.String()),
  networkPriceApplied: Type.Boolean(),
});

const Sent = Type.Object({
  messageId: Uuid(),
  to: Type.String(),
  from: Type.String(),
  status: Type.Union([Type.Literal('sent'), Type.Literal('failed')]),
  segments: Type.Integer(),
  cost: Money(),
  submittedAt: DateTime(),
  network: Network,
  errorCode: Type.Optional(Type.String()),
  simulated: Type.Optional(Type.Literal(true)),
});

const Timeline = Type.Object({
  messageId: Uuid(),
  to: Type.String(),
  from: Type.String(),
  status: Type.String(),
  segments: Type.Integer(),
  cost: Money(),
  routeId: Nullable(Uuid()),
  network: Network,
  errorCode: Nullable(Type.String()),
  simulated: Type.Boolean(),
  timeline: Type.Array(Type.Object({ status: Type.String(), at: DateTime(), errorCode: Type.Optional(Type.String()) })),
  routeReturnsReceipts: Type.Boolean(),
});

const BulkResult = Type.Object({
  total: Type.Integer(),
  sent: Type.Integer(),
  failed: Type.Integer(),
  results: Type.Array(
    Type.Object({
      to: Type.String(),
      success: Type.Boolean(),
      messageId: Type.Optional(Uuid()),
      status: Type.Optional(Type.String()),
      segments: Type.Optional(Type.Integer()),
      cost: Type.Optional(Money()),
      error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String() })),
    }),
  ),
});

export function smsRoutes(svc: SmsService) {
  return (app: App) => {
    app.post(
      '/comms/sms',
      {
        config: {
          access: { auth: 'required', scope: 'sms:send', testKeys: 'simulate' },
          rateLimit: { points: 10, seconds: 1 },
          idempotent: true,
        },
        schema: {
          tags: ['Voice and SMS'],
          summary: 'Send an SMS (billed per segment; a refused message is not charged)',
          body: SendBody,
          response: { 200: Ok(Sent) },
        },
      },
      async (req) => {
        const p = req.principal!;
        return ok(
          await svc.send({ accountId: p.accountId, parentId: p.parentId, mode: p.mode, source: 'api' }, req.body),
        );
      },
    );

    app.post(
      '/comms/sms/bulk',
      {
        config: { access: { auth: 'required', scope: 'sms:send', testKeys: 'simulate' }, idempotent: true },
        schema: {
          tags: ['Voice and SMS'],
          summary: 'Send one text to up to 1,000 recipients, each on its own',
          body: BulkBody,
          response: { 200: Ok(BulkResult) },
        },
      },
      async (req) => {
        const p = req.principal!;
        return ok(
          await svc.bulk({ accountId: p.accountId, parentId: p.parentId, mode: p.mode, source: 'api' }, req.body),
        );
      },
    );

    app.get(
      '/comms/sms/:id',
      {
        config: { access: { auth: 'required' } },
        schema: {
          tags: ['Voice and SMS'],
          summary: 'An SMS and its timeline',
          params: Type.Object({ id: Uuid() }),
          response: { 200: Ok(Timeline) },
        },
      },
      async (req) => ok(await svc.get(req.principal!, req.params.id)),
    );

    app.get(
      '/comms/sms',
      {
        config: { access: { auth: 'required', fullAccessOnly: true } },
        schema: {
          tags: ['Voice and SMS'],
          summary: 'History of API and SMPP messages (ledger entries), newest first',
          querystring: Type.Object({
            from: Type.Optional(DateTime()),
            to: Type.Optional(DateTime()),
            ...CursorQuery(),
          }),
          response: { 200: CursorPage(HistoryEntry) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        const rows = await svc.history(req.principal!.accountId, {
          from: req.query.from,
          to: req.query.to,
          cursor: req.query.cursor,
          limit: limit + 1,
        });
        const page = cursorPage(rows, limit);
        return { ...page, data: page.data.map((r) => ({ ...r, createdAt: r.createdAt.toISOString() })) };
      },
    );
  };
}
