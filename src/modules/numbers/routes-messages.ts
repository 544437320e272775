import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { CursorPage, DateTime, Money, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { cursorPage, CursorQuery } from '../../http/pagination.js';
import type { NumberMessages } from './messages.js';
import { READ, TAGS } from './schemas.js';

const IdParams = Type.Object({ id: Uuid() });

const Message = Type.Object({
  id: Uuid(),
  direction: Type.Union([Type.Literal('in'), Type.Literal('out')]),
  from: Type.String(),
  to: Type.String(),
  peer: Type.String({ description: 'digits, the conversation key' }),
  body: Type.String(),
  segments: Type.Integer(),
  status: Type.Union([
    Type.Literal('received'),
    Type.Literal('queued'),
    Type.Literal('sent'),
    Type.Literal('delivered'),
    Type.Literal('failed'),
  ]),
  error: Nullable(Type.String()),
  providerMessageId: Nullable(Type.String()),
  readAt: Nullable(DateTime()),
  deliveredAt: Nullable(DateTime()),
  createdAt: DateTime(),
  cost: Money('0.000000 when failed and refunded'),
});

/** SMS on a number: send from it, threads, conversations, read marks. */
export function messageRoutes(messages: NumberMessages) {
  return (app: App) => {
    app.post(
      '/dids/:id/messages',
      {
        config: {
          access: { auth: 'required', scope: 'sms:send' },
          idempotent: true,
          rateLimit: { points: 10, seconds: 1 },
        },
        schema: {
          tags: TAGS,
          summary: 'Send an SMS from the number',
          description:
            'Through the SMS send path with the number as sender (priced, charged and routed as `POST /comms/sms`). ' +
            '`idempotencyKey` (or the `X-Idempotency-Key` header): the same key returns the original message.',
          params: IdParams,
          body: Type.Object(
            {
              to: Type.String({ minLength: 1, maxLength: 32 }),
              body: Type.String({ minLength: 1, maxLength: 1600 }),
              idempotencyKey: Type.Optional(Type.String({ minLength: 1, maxLength: 80 })),
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Message) },
        },
      },
      async (req, reply) => {
        const header = req.headers['x-idempotency-key'];
        const key = req.body.idempotencyKey ?? (typeof header === 'string' && header.length <= 80 ? header : null);
        const { message } = await messages.send(req.principal!, req.params.id, {
          to: req.body.to,
          body: req.body.body,
          idempotencyKey: key,
        });
        return reply.code(201).send(ok(message));
      },
    );

    app.get(
      '/dids/:id/messages',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The number's messages, newest first; `peer` keeps one conversation",
          params: IdParams,
          querystring: Type.Object({ ...CursorQuery(), peer: Type.Optional(Type.String({ maxLength: 32 })) }),
          response: { 200: CursorPage(Message) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        return cursorPage(
          await messages.thread(req.principal!.accountId, req.params.id, { ...req.query, limit }),
          limit,
        );
      },
    );

    app.get(
      '/dids/:id/conversations',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The number's conversations, latest first, with unread counts",
          params: IdParams,
          response: {
            200: Ok(
              Type.Array(
                Type.Object({
                  peer: Type.String(),
                  messages: Type.Integer(),
                  unread: Type.Integer(),
                  lastMessageAt: DateTime(),
                  lastBody: Type.String(),
                  lastDirection: Type.String(),
                }),
              ),
            ),
          },
        },
      },
      async (req) => ok(await messages.conversations(req.principal!.accountId, req.params.id)),
    );

    app.post(
      '/dids/:id/messages/read',
      {
        config: { access: { auth: 'required', scope: 'numbers:write' } },
        schema: {
          tags: TAGS,
          summary: "Mark a conversation's received messages read",
          params: IdParams,
          body: Type.Object({ peer: Type.String({ minLength: 1, maxLength: 32 }) }, { additionalProperties: false }),
          response: { 200: Ok(Type.Object({ updated: Type.Integer() })) },
        },
      },
      async (req) => ok(await messages.markRead(req.principal!.accountId, req.params.id, req.body.peer)),
    );
  };
}
