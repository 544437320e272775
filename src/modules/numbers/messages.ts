import type { Logger } from 'pino';
import type { Sql } from '../../db/connection.js';
import type { Principal } from '../../http/access.js';
import { ruleError } from '../../http/errors.js';
import { money6 } from '../../ledger/money.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import type { NumberManagement } from './manage.js';

/** The SMS send path (the sms module's `send`), with the number as sender. */
export type SmsSend = (
  sender: { accountId: string; parentId: string | null; mode: 'live' | 'test'; source: 'api' },
  input: { to: string; from: string; message: string },
) => Promise<{ messageId: string; status: 'sent' | 'failed'; segments: number; cost: string; errorCode?: string }>;

interface MessageRow {
  id: string;
  direction: 'in' | 'out';
  fromNumber: string;
  toNumber: string;
  peer: string;
  body: string;
  segments: number;
  status: 'received' | 'queued' | 'sent' | 'delivered' | 'failed';
  error: string | null;
  providerMessageId: string | null;
  readAt: Date | null;
  deliveredAt: Date | null;
  createdAt: Date;
  cost: string;
}

const present = (m: MessageRow) => ({
  id: m.id,
  direction: m.direction,
  from: m.fromNumber,
  to: m.toNumber,
  peer: m.peer,
  body: m.body,
  segments: m.segments,
  status: m.status,
  error: m.error,
  providerMessageId: m.providerMessageId,
  readAt: m.readAt === null ? null : m.readAt.toISOString(),
  deliveredAt: m.deliveredAt === null ? null : m.deliveredAt.toISOString(),
  createdAt: m.createdAt.toISOString(),
  cost: money6(m.cost),
});

export type NumberMessage = ReturnType<typeof present>;

const digits = (n: string) => n.replace(/^\+/, '');

/** SMS on a rented number: sending from it, its conversations and threads, marking them read. */
export function createNumberMessages(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  manage: NumberManagement;
  smsSend: SmsSend;
}) {
  const { sql, clock, log, manage } = deps;
  const COLUMNS = sql`
    id, direction, from_number, to_number, peer, body, segments, status, error, provider_message_id, read_at,
    delivered_at, created_at, cost::text`;

  const byKey = async (didId: string, key: string) => {
    const [row] = await sql<MessageRow[]>`
      select ${COLUMNS} from did_messages where did_id = ${didId} and idempotency_key = ${key}`;
    return row;
  };

  /**
   * Links the number message to the SMS path's message, taking its current state. The SMS row is
   * read under a share lock: a receipt applied before this link is seen here, one applied after it
   * waits for the link and is copied by the receipt trigger (282_numbers_api.sql).
   */
  async function followSend(id: string, r: Awaited<ReturnType<SmsSend>>) {
    await sql.begin(async (tx) => {
      const [m] = await tx<{ status: string; deliveredAt: Date | null; errorCode: string | null; refunded: boolean }[]>`
        select status, delivered_at, error_code, refund_posting_id is not null as refunded
        from messages where id = ${r.messageId} for share`;
      const status = m && (m.status === 'delivered' || m.status === 'failed') ? m.status : r.status;
      await tx`
        update did_messages set status = ${status}, segments = ${r.segments},
                                cost = ${m?.refunded ? '0' : r.cost}::numeric, provider_message_id = ${r.messageId},
                                error = ${m?.errorCode ?? r.errorCode ?? null}, delivered_at = ${m?.deliveredAt ?? null}
        where id = ${id}`;
    });
  }

  return {
    /**
     * Sends `body` to `to` from the number through the SMS send path (priced and charged there).
     * With an idempotency key the same key answers the first message and sends once.
     */
    async send(p: Principal, didId: string, input: { to: string; body: string; idempotencyKey: string | null }) {
      const d = await manage.own(p.accountId, didId);
      if (d.status !== 'active' || d.number === null) throw ruleError(`The number is ${d.status}`);
      const to = digits(input.to);
      if (!/^\d{6,15}$/.test(to)) throw ruleError('to must be an E.164 number');
      const key = input.idempotencyKey;
      if (key !== null) {
        const first = await byKey(didId, key);
        if (first) return { message: present(first), created: false };
      }
      const id = newId();
      // The claim row makes a concurrent retry with the same key find this message, not send again.
      const claimed = await sql`
        insert into did_messages (id, did_id, account_id, direction, from_number, to_number, peer, body, status,
                                  idempotency_key, created_at)
        values (${id}, ${didId}, ${d.accountId}, 'out', ${d.number}, ${to}, ${to}, ${input.body}, 'queued', ${key},
                ${clock.now()})
        on conflict (did_id, idempotency_key) where idempotency_key is not null do nothing`;
      if (claimed.count === 0) return { message: present((await byKey(didId, key!))!), created: false };
      const sender = {
        accountId: d.accountId,
        // An operator sending for its sub-account's number sends as the sub-account.
        parentId: d.accountId === p.accountId ? p.parentId : p.accountId,
        mode: p.mode,
        source: 'api' as const,
      };
      try {
        const r = await deps.smsSend(sender, { to, from: d.number, message: input.body });
        await followSend(id, r);
      } catch (err) {
        // Refused before anything was sent (balance, route, validation): no message is kept.
        await sql`delete from did_messages where id = ${id}`;
        throw err;
      }
      log.info({ didId, messageId: id }, 'SMS sent from a number');
      const [row] = await sql<MessageRow[]>`select ${COLUMNS} from did_messages where id = ${id}`;
      return { message: present(row!), created: true };
    },

    async thread(
      viewerId: string,
      didId: string,
      q: { peer?: string | undefined; cursor?: string | undefined; limit: number },
    ) {
      await manage.own(viewerId, didId);
      const rows = await sql<MessageRow[]>`
        select ${COLUMNS} from did_messages where did_id = ${didId}
          ${q.peer ? sql`and peer = ${digits(q.peer)}` : sql``} ${q.cursor ? sql`and id < ${q.cursor}` : sql``}
        order by id desc limit ${q.limit + 1}`;
      return rows.map(present);
    },

    async conversations(viewerId: string, didId: string) {
      await manage.own(viewerId, didId);
      const rows = await sql<
        { peer: string; messages: number; unread: number; lastAt: Date; lastBody: string; lastDirection: string }[]
      >`
        select peer, count(*)::int as messages,
               count(*) filter (where direction = 'in' and read_at is null)::int as unread,
               max(created_at) as last_at,
               (array_agg(body order by id desc))[1] as last_body,
               (array_agg(direction order by id desc))[1] as last_direction
        from did_messages where did_id = ${didId} group by peer order by max(id::text) desc`;
      return rows.map((r) => ({
        peer: r.peer,
        messages: r.messages,
        unread: r.unread,
        lastMessageAt: r.lastAt.toISOString(),
        lastBody: r.lastBody,
        lastDirection: r.lastDirection,
      }));
    },

    /** Marks the received messages of one conversation read. */
    async markRead(viewerId: string, didId: string, peer: string) {
      await manage.own(viewerId, didId);
      const res = await sql`
        update did_messages set read_at = ${clock.now()}
        where did_id = ${didId} and peer = ${digits(peer)} and direction = 'in' and read_at is null`;
      return { updated: res.count };
    },
  };
}

export type NumberMessages = ReturnType<typeof createNumberMessages>;
