import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Db, Sql } from '../../db/connection.js';
import { conflict, notFound, ruleError, validationError } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { cleanFileName, decodeBase64, sniffType, type FileStore } from '../../platform/file-store.js';
import { newId } from '../../platform/ids.js';
import { emit } from '../../webhooks/emit.js';
import { createSupportRepo, type AttachmentRow, type TicketRow, type TicketStatus } from './repo.js';

export interface AttachmentInput {
  fileName: string;
  contentBase64: string;
}
export interface Viewer {
  accountId: string;
  operator: boolean;
}

const attachmentOut = (a: AttachmentRow) => ({
  id: a.id,
  messageId: a.messageId,
  fileName: a.fileName,
  contentType: a.contentType,
  sizeBytes: a.sizeBytes,
  sha256: a.sha256,
  createdAt: a.createdAt.toISOString(),
});
const ticketOut = (t: TicketRow) => ({
  id: t.id,
  accountId: t.accountId,
  subject: t.subject,
  category: t.category,
  priority: t.priority,
  status: t.status,
  createdAt: t.createdAt.toISOString(),
  updatedAt: t.updatedAt.toISOString(),
  closedAt: t.closedAt?.toISOString() ?? null,
});

/**
 * Support tickets: a customer opens one with a first message, either side writes messages with
 * attachments (checked by size and by their bytes, kept under `<state>/support/`), an operator's
 * reply marks it answered and tells the customer (event `support_ticket.replied`).
 */
export function createSupportService(deps: {
  sql: Sql;
  config: Readonly<Config>;
  clock: Clock;
  log: Logger;
  files: FileStore;
}) {
  const { sql, config, clock, log, files } = deps;
  const repo = createSupportRepo(sql);
  const limits = config.support;

  function decodeAll(inputs: AttachmentInput[]) {
    if (inputs.length > limits.max_attachments_per_message)
      throw validationError([
        { path: 'attachments', message: `at most ${limits.max_attachments_per_message} per message` },
      ]);
    return inputs.map((a, i) => {
      const path = `attachments/${i}/contentBase64`;
      const bytes = decodeBase64(a.contentBase64);
      if (!bytes || bytes.length === 0) throw validationError([{ path, message: 'must be non-empty standard base64' }]);
      if (bytes.length > limits.max_attachment_bytes)
        throw validationError([{ path, message: `must decode to at most ${limits.max_attachment_bytes} bytes` }]);
      const type = sniffType(bytes);
      if (!type) throw validationError([{ path, message: 'must be a PDF, PNG, JPEG, WebP or plain text file' }]);
      return { id: newId(), fileName: cleanFileName(a.fileName), type, bytes };
    });
  }

  /** Writes the files first, then the rows in the caller's transaction; files of a failed write are removed. */
  async function withAttachments<T>(
    owner: string,
    inputs: AttachmentInput[],
    write: (rows: (ticketId: string, messageId: string, now: Date) => AttachmentRow[]) => Promise<T>,
  ): Promise<T> {
    const decoded = decodeAll(inputs);
    const stored: (ReturnType<typeof decodeAll>[number] & { key: string; sha256: string })[] = [];
    try {
      for (const a of decoded) stored.push({ ...a, ...(await files.save(owner, a.id, a.bytes)) });
      return await write((ticketId, messageId, now) =>
        stored.map((a) => ({
          id: a.id,
          ticketId,
          messageId,
          fileName: a.fileName,
          contentType: a.type,
          sizeBytes: a.bytes.length,
          sha256: a.sha256,
          storageKey: a.key,
          createdAt: now,
        })),
      );
    } catch (err) {
      await Promise.all(stored.map((a) => files.remove(a.key)));
      throw err;
    }
  }

  async function visible(id: string, viewer: Viewer, tx: Db = sql) {
    const t = await repo.ticket(id, tx);
    if (!t || (!viewer.operator && t.accountId !== viewer.accountId)) throw notFound('Ticket');
    return t;
  }

  async function full(id: string) {
    const [t, messages, attachments] = await Promise.all([repo.ticket(id), repo.messages(id), repo.attachments(id)]);
    return {
      ...ticketOut(t!),
      messages: messages.map((m) => ({
        id: m.id,
        fromOperator: m.fromOperator,
        body: m.body,
        createdAt: m.createdAt.toISOString(),
        attachments: attachments.filter((a) => a.messageId === m.id).map(attachmentOut),
      })),
    };
  }

  return {
    async open(
      accountId: string,
      input: { subject: string; category: string; priority: string; message: string; attachments: AttachmentInput[] },
    ) {
      if ((await repo.openCount(accountId)) >= limits.open_tickets_per_account)
        throw ruleError(`At most ${limits.open_tickets_per_account} open tickets; close one first`);
      const ticketId = newId();
      const messageId = newId();
      await withAttachments(accountId, input.attachments, (rows) =>
        sql.begin(async (tx) => {
          const now = clock.now();
          await repo.insertTicket(
            {
              id: ticketId,
              accountId,
              subject: input.subject,
              category: input.category,
              priority: input.priority,
              status: 'open',
              createdAt: now,
            },
            tx,
          );
          await repo.insertMessage(
            { id: messageId, ticketId, authorId: accountId, fromOperator: false, body: input.message, createdAt: now },
            tx,
          );
          await repo.insertAttachments(rows(ticketId, messageId, now), tx);
        }),
      );
      log.info({ accountId, ticketId }, 'support ticket opened');
      return full(ticketId);
    },

    async list(
      viewer: Viewer,
      q: { all: boolean; status?: TicketStatus | undefined; cursor?: string | undefined; limit: number },
    ) {
      const rows = await repo.list({
        accountId: q.all && viewer.operator ? null : viewer.accountId,
        status: q.status,
        cursor: q.cursor,
        limit: q.limit,
      });
      return rows.map((r) => ({
        ...ticketOut(r),
        messageCount: r.messageCount,
        lastMessageAt: r.lastMessageAt.toISOString(),
      }));
    },

    async get(id: string, viewer: Viewer) {
      await visible(id, viewer);
      return full(id);
    },

    /**
     * A message on a ticket (its owner or an operator), and/or a status change: an operator's
     * message marks it answered, the customer's reopens it; `status: closed` closes it.
     */
    async post(
      id: string,
      viewer: Viewer,
      input: { body?: string | undefined; attachments: AttachmentInput[]; status?: 'open' | 'closed' | undefined },
    ) {
      if (!input.body && input.status === undefined)
        throw validationError([{ path: 'body', message: 'send a message body, a status, or both' }]);
      if (!input.body && input.attachments.length)
        throw validationError([{ path: 'body', message: 'attachments go with a message' }]);
      const ticket = await visible(id, viewer);
      const fromOperator = viewer.operator && ticket.accountId !== viewer.accountId;
      await withAttachments(ticket.accountId, input.attachments, (rows) =>
        sql.begin(async (tx) => {
          const now = clock.now();
          const t = (await repo.lockTicket(id, tx))!;
          if (t.status === 'closed' && input.status !== 'open' && !input.body)
            throw conflict('The ticket is closed already');
          let status: TicketStatus = input.status ?? t.status;
          if (input.body) {
            const messageId = newId();
            await repo.insertMessage(
              {
                id: messageId,
                ticketId: id,
                authorId: viewer.accountId,
                fromOperator,
                body: input.body,
                createdAt: now,
              },
              tx,
            );
            await repo.insertAttachments(rows(id, messageId, now), tx);
            if (input.status !== 'closed') status = fromOperator ? 'answered' : 'open';
            if (fromOperator)
              await emit(tx, {
                accountId: t.accountId,
                event: 'support_ticket.replied',
                data: { ticketId: id, subject: t.subject, messageId, status },
                at: now,
              });
          }
          await repo.setStatus(id, status, now, tx);
        }),
      );
      return full(id);
    },

    async attachment(ticketId: string, attachmentId: string, viewer: Viewer) {
      await visible(ticketId, viewer);
      const a = await repo.attachment(ticketId, attachmentId);
      if (!a) throw notFound('Attachment');
      return { attachment: attachmentOut(a), bytes: await files.read(a.storageKey) };
    },
  };
}

export type SupportService = ReturnType<typeof createSupportService>;
