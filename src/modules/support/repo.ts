import type { Db } from '../../db/connection.js';

export type TicketStatus = 'open' | 'answered' | 'closed';

export interface TicketRow {
  id: string;
  accountId: string;
  subject: string;
  category: string;
  priority: string;
  status: TicketStatus;
  createdAt: Date;
  updatedAt: Date;
  closedAt: Date | null;
}

export interface MessageRow {
  id: string;
  ticketId: string;
  authorId: string;
  fromOperator: boolean;
  body: string;
  createdAt: Date;
}

export interface AttachmentRow {
  id: string;
  ticketId: string;
  messageId: string;
  fileName: string;
  contentType: string;
  sizeBytes: number;
  sha256: string;
  storageKey: string;
  createdAt: Date;
}

export function createSupportRepo(db: Db) {
  return {
    async openCount(accountId: string, tx: Db = db): Promise<number> {
      const [row] = await tx<
        { n: string }[]
      >`select count(*) as n from support_tickets where account_id = ${accountId} and status <> 'closed'`;
      return Number(row!.n);
    },
    async insertTicket(t: Omit<TicketRow, 'updatedAt' | 'closedAt'>, tx: Db) {
      await tx`
        insert into support_tickets (id, account_id, subject, category, priority, status, created_at, updated_at)
        values (${t.id}, ${t.accountId}, ${t.subject}, ${t.category}, ${t.priority}, ${t.status}, ${t.createdAt}, ${t.createdAt})`;
    },
    async ticket(id: string, tx: Db = db): Promise<TicketRow | undefined> {
      const [row] = await tx<TicketRow[]>`select * from support_tickets where id = ${id}`;
      return row;
    },
    async lockTicket(id: string, tx: Db): Promise<TicketRow | undefined> {
      const [row] = await tx<TicketRow[]>`select * from support_tickets where id = ${id} for update`;
      return row;
    },
    async setStatus(id: string, status: TicketStatus, now: Date, tx: Db) {
      await tx`
        update support_tickets set status = ${status}, updated_at = ${now},
          closed_at = ${status === 'closed' ? now : null}
        where id = ${id}`;
    },
    async insertMessage(m: MessageRow, tx: Db) {
      await tx`
        insert into support_messages (id, ticket_id, author_id, from_operator, body, created_at)
        values (${m.id}, ${m.ticketId}, ${m.authorId}, ${m.fromOperator}, ${m.body}, ${m.createdAt})`;
    },
    async insertAttachments(rows: AttachmentRow[], tx: Db) {
      if (rows.length === 0) return;
      const values = rows.map((a) => ({
        id: a.id,
        ticket_id: a.ticketId,
        message_id: a.messageId,
        file_name: a.fileName,
        content_type: a.contentType,
        size_bytes: a.sizeBytes,
        sha256: a.sha256,
        storage_key: a.storageKey,
        created_at: a.createdAt,
      }));
      await tx`insert into support_attachments ${tx(values, 'id', 'ticket_id', 'message_id', 'file_name', 'content_type', 'size_bytes', 'sha256', 'storage_key', 'created_at')}`;
    },
    async messages(ticketId: string): Promise<MessageRow[]> {
      return db<MessageRow[]>`select * from support_messages where ticket_id = ${ticketId} order by id`;
    },
    async attachments(ticketId: string): Promise<AttachmentRow[]> {
      return db<AttachmentRow[]>`select * from support_attachments where ticket_id = ${ticketId} order by id`;
    },
    async attachment(ticketId: string, id: string): Promise<AttachmentRow | undefined> {
      const [row] = await db<
        AttachmentRow[]
      >`select * from support_attachments where id = ${id} and ticket_id = ${ticketId}`;
      return row;
    },
    async list(q: {
      accountId: string | null;
      status?: TicketStatus | undefined;
      cursor?: string | undefined;
      limit: number;
    }) {
      return db<(TicketRow & { messageCount: number; lastMessageAt: Date })[]>`
        select t.*, (select count(*)::int from support_messages m where m.ticket_id = t.id) as message_count,
               (select max(created_at) from support_messages m where m.ticket_id = t.id) as last_message_at
        from support_tickets t
        where true ${q.accountId ? db`and t.account_id = ${q.accountId}` : db``}
          ${q.status ? db`and t.status = ${q.status}` : db``}
          ${q.cursor ? db`and t.id < ${q.cursor}` : db``}
        order by t.id desc limit ${q.limit + 1}`;
    },
  };
}
