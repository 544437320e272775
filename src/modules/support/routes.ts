import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { CursorPage, DateTime, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { isOperator } from '../../http/operator.js';
import { CursorQuery, cursorPage } from '../../http/pagination.js';
import type { Principal } from '../../http/access.js';
import type { SupportService } from './service.js';

const TAGS = ['Support'];
const READ = { auth: 'required', scope: 'account:read' } as const;
const WRITE = { auth: 'required', scope: 'account:write' } as const;
const Status = Type.Union([Type.Literal('open'), Type.Literal('answered'), Type.Literal('closed')]);
const Attachment = Type.Object({
  id: Uuid(),
  messageId: Uuid(),
  fileName: Type.String(),
  contentType: Type.String(),
  sizeBytes: Type.Integer(),
  sha256: Type.String(),
  createdAt: DateTime(),
});
const TicketFields = {
  id: Uuid(),
  accountId: Uuid(),
  subject: Type.String(),
  category: Type.String(),
  priority: Type.String(),
  status: Status,
  createdAt: DateTime(),
  updatedAt: DateTime(),
  closedAt: Nullable(DateTime()),
};
const Ticket = Type.Object({
  ...TicketFields,
  messages: Type.Array(
    Type.Object({
      id: Uuid(),
      fromOperator: Type.Boolean(),
      body: Type.String(),
      createdAt: DateTime(),
      attachments: Type.Array(Attachment),
    }),
  ),
});
const AttachmentsIn = Type.Optional(
  Type.Array(
    Type.Object(
      {
        fileName: Type.String({ minLength: 1, maxLength: 200 }),
        contentBase64: Type.String({ minLength: 4, description: 'standard base64' }),
      },
      { additionalProperties: false },
    ),
    { maxItems: 20 },
  ),
);

const viewer = (p: Principal) => ({ accountId: p.accountId, operator: isOperator(p) });

export function supportRoutes(support: SupportService, limits: { maxAttachmentBytes: number; perMessage: number }) {
  // Base64 is 4/3 of the files; room for the JSON around them.
  const bodyLimit = Math.ceil((limits.maxAttachmentBytes * Math.max(1, limits.perMessage) * 4) / 3) + 128 * 1024;
  const attachmentsDoc = `Attachments: at most ${limits.perMessage} per message, ${limits.maxAttachmentBytes} bytes each once decoded; PDF, PNG, JPEG, WebP or plain text, told by the bytes.`;
  return (app: App) => {
    app.post(
      '/support/tickets',
      {
        config: { access: WRITE, rateLimit: { points: 10, seconds: 3600 } },
        bodyLimit,
        schema: {
          tags: TAGS,
          summary: 'Open a support ticket with a first message',
          description: attachmentsDoc,
          body: Type.Object(
            {
              subject: Type.String({ minLength: 3, maxLength: 200 }),
              category: Type.Union(
                ['billing', 'technical', 'routes', 'numbers', 'account', 'compliance', 'other'].map((c) =>
                  Type.Literal(c),
                ),
              ),
              priority: Type.Optional(Type.Union(['low', 'normal', 'high', 'urgent'].map((c) => Type.Literal(c)))),
              message: Type.String({ minLength: 1, maxLength: 20000 }),
              attachments: AttachmentsIn,
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Ticket) },
        },
      },
      async (req, reply) =>
        reply.code(201).send(
          ok(
            await support.open(req.principal!.accountId, {
              subject: req.body.subject,
              category: req.body.category,
              priority: req.body.priority ?? 'normal',
              message: req.body.message,
              attachments: req.body.attachments ?? [],
            }),
          ),
        ),
    );

    app.get(
      '/support/tickets',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The account's tickets, newest first (operators: all=true for every account's)",
          querystring: Type.Object({
            ...CursorQuery(),
            status: Type.Optional(Status),
            all: Type.Optional(Type.Boolean({ default: false })),
          }),
          response: {
            200: CursorPage(Type.Object({ ...TicketFields, messageCount: Type.Integer(), lastMessageAt: DateTime() })),
          },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        const rows = await support.list(viewer(req.principal!), {
          all: req.query.all ?? false,
          status: req.query.status,
          cursor: req.query.cursor,
          limit,
        });
        return cursorPage(rows, limit);
      },
    );

    app.get(
      '/support/tickets/:id',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'One ticket with its messages and attachments',
          params: Type.Object({ id: Uuid() }),
          response: { 200: Ok(Ticket) },
        },
      },
      async (req) => ok(await support.get(req.params.id, viewer(req.principal!))),
    );

    app.post(
      '/support/tickets/:id/messages',
      {
        config: { access: WRITE, rateLimit: { points: 60, seconds: 3600 } },
        bodyLimit,
        schema: {
          tags: TAGS,
          summary: 'Reply on a ticket, and/or close or reopen it',
          description: `An operator's reply marks the ticket answered and notifies the customer (event support_ticket.replied); the customer's reply reopens it. ${attachmentsDoc}`,
          params: Type.Object({ id: Uuid() }),
          body: Type.Object(
            {
              body: Type.Optional(Type.String({ minLength: 1, maxLength: 20000 })),
              attachments: AttachmentsIn,
              status: Type.Optional(Type.Union([Type.Literal('open'), Type.Literal('closed')])),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Ticket) },
        },
      },
      async (req) =>
        ok(
          await support.post(req.params.id, viewer(req.principal!), {
            body: req.body.body,
            attachments: req.body.attachments ?? [],
            status: req.body.status,
          }),
        ),
    );

    app.get(
      '/support/tickets/:id/attachments/:attachmentId',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Download an attachment',
          params: Type.Object({ id: Uuid(), attachmentId: Uuid() }),
        },
      },
      async (req, reply) => {
        const { attachment, bytes } = await support.attachment(
          req.params.id,
          req.params.attachmentId,
          viewer(req.principal!),
        );
        return reply
          .type(attachment.contentType)
          .header('content-disposition', `attachment; filename="${attachment.fileName}"`)
          .header('x-content-type-options', 'nosniff')
          .header('cache-control', 'private, no-store')
          .send(bytes);
      },
    );
  };
}
