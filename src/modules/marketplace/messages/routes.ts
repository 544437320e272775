import { Type } from 'typebox';
import type { App } from '../../../http/app.js';
import { CursorPage, DateTime, Nullable, Ok, Uuid, ok } from '../../../http/envelope.js';
import { cursorPage, CursorQuery } from '../../../http/pagination.js';
import type { MessagesService } from './service.js';

const TAGS = ['Route messages'];
const READ = { auth: 'required', scope: 'routes:read' } as const;
const WRITE = { auth: 'required', scope: 'routes:write' } as const;
const Side = Type.Union([Type.Literal('buyer'), Type.Literal('seller')]);

const Message = Type.Object({
  id: Uuid(),
  threadId: Uuid(),
  routeId: Uuid(),
  from: Side,
  body: Type.String(),
  createdAt: DateTime(),
  readAt: Nullable(DateTime()),
});

export function messagesRoutes(messages: MessagesService) {
  return (app: App) => {
    app.post(
      '/routes/:id/messages',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: "Write to a route's seller, or (seller) answer a buyer's thread",
          description:
            'A buyer writes on a route it can see (public, granted or bought); its thread with the seller starts with the first message. ' +
            'The seller answers with `threadId`. The other side is told (`route.message_received`). The seller sees a buyer label, never the account; the buyer never sees the seller.',
          params: Type.Object({ id: Uuid() }),
          body: Type.Object(
            { body: Type.String({ minLength: 1, maxLength: 4000 }), threadId: Type.Optional(Uuid()) },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Message) },
        },
      },
      async (req, reply) =>
        reply.code(201).send(ok(await messages.post(req.principal!.accountId, req.params.id, req.body))),
    );

    app.get(
      '/routes/:id/messages',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "A route's message thread, newest first (the buyer's own; the seller names `threadId`)",
          description: "Reading marks the other side's messages read.",
          params: Type.Object({ id: Uuid() }),
          querystring: Type.Object({ ...CursorQuery(), threadId: Type.Optional(Uuid()) }),
          response: { 200: CursorPage(Message) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        return cursorPage(await messages.read(req.principal!.accountId, req.params.id, { ...req.query, limit }), limit);
      },
    );

    app.get(
      '/routes/messages/threads',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The caller's message threads as buyer and as seller, newest first, with unread counts",
          querystring: Type.Object({ ...CursorQuery(), role: Type.Optional(Side), routeId: Type.Optional(Uuid()) }),
          response: {
            200: CursorPage(
              Type.Object({
                id: Uuid(),
                routeId: Uuid(),
                routeName: Type.String(),
                role: Side,
                buyer: Type.String({ description: 'a label for the buyer; never its account' }),
                lastMessageAt: DateTime(),
                lastMessage: Nullable(Type.String()),
                unread: Type.Integer(),
                createdAt: DateTime(),
              }),
            ),
          },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        return cursorPage(await messages.threads(req.principal!.accountId, { ...req.query, limit }), limit);
      },
    );
  };
}
