import type { Db } from '../../db/connection.js';
import { communicationsHistory, type HistoryFilter } from '../../ledger/history.js';

/** A `messages` row as the service reads it (money as 6-place strings). */
export interface MessageRow {
  id: string;
  accountId: string;
  operatorId: string | null;
  source: 'api' | 'smpp';
  toNumber: string;
  fromSender: string;
  segments: number;
  encoding: string;
  dataCoding: number;
  routeId: string | null;
  sellerId: string | null;
  mccMnc: string | null;
  networkName: string | null;
  networkPriceApplied: boolean;
  status: 'queued' | 'sent' | 'delivered' | 'failed';
  errorCode: string | null;
  supplierMessageIds: string[];
  cost: string;
  holdId: string | null;
  chargePostingId: string | null;
  markupPostingId: string | null;
  refundPostingId: string | null;
  simulated: boolean;
  queuedAt: Date;
  sentAt: Date | null;
  deliveredAt: Date | null;
  failedAt: Date | null;
  receiptDueAt: Date | null;
  /** Ids our SMPP server answered the earlier parts of a concatenated submit with. */
  customerPartIds: string[];
}

export interface NewMessage {
  id: string;
  accountId: string;
  operatorId: string | null;
  source: 'api' | 'smpp';
  toNumber: string;
  fromSender: string;
  textSha256: string;
  textUnits: number;
  encoding: string;
  dataCoding: number;
  segments: number;
  mccMnc: string | null;
  networkName: string | null;
  registeredDelivery: boolean;
  simulated: boolean;
  queuedAt: Date;
  customerPartIds?: string[];
}

export type { HistoryRow } from '../../ledger/history.js';

const messageColumns = (db: Db) => db`
  id, account_id, operator_id, source, to_number, from_sender, segments, encoding, data_coding, route_id, seller_id,
  mcc_mnc, network_name, network_price_applied, status, error_code, supplier_message_ids,
  cost::numeric(20,6)::text as cost, hold_id, charge_posting_id, markup_posting_id, refund_posting_id, simulated,
  queued_at, sent_at, delivered_at, failed_at, receipt_due_at, customer_part_ids`;

export function createSmsRepo(db: Db) {
  return {
    async insert(m: NewMessage & { holdId?: string | null }, tx: Db = db): Promise<void> {
      await tx`
        insert into messages (id, account_id, operator_id, source, to_number, from_sender, text_sha256, text_units, encoding,
                              data_coding, segments, mcc_mnc, network_name, status, registered_delivery, simulated, queued_at, hold_id,
                              customer_part_ids)
        values (${m.id}, ${m.accountId}, ${m.operatorId}, ${m.source}, ${m.toNumber}, ${m.fromSender}, ${m.textSha256}, ${m.textUnits},
                ${m.encoding}, ${m.dataCoding}, ${m.segments}, ${m.mccMnc}, ${m.networkName}, 'queued', ${m.registeredDelivery},
                ${m.simulated}, ${m.queuedAt}, ${m.holdId ?? null}, ${m.customerPartIds ?? []}::text[])`;
    },

    async setHold(id: string, holdId: string, tx: Db = db): Promise<void> {
      await tx`update messages set hold_id = ${holdId} where id = ${id}`;
    },

    async markSent(id: string, f: {
      routeId: string | null; sellerId: string | null; networkPriceApplied: boolean; pricePerSegment: string; cost: string;
      chargePostingId: string; markupPostingId: string | null; supplierMessageIds: string[]; sentAt: Date; receiptDueAt: Date | null;
    }, tx: Db = db): Promise<void> {
      await tx`
        update messages set status = 'sent', route_id = ${f.routeId}, seller_id = ${f.sellerId}, network_price_applied = ${f.networkPriceApplied},
               price_per_segment = ${f.pricePerSegment}::numeric, cost = ${f.cost}::numeric, charge_posting_id = ${f.chargePostingId},
               markup_posting_id = ${f.markupPostingId}, supplier_message_ids = ${f.supplierMessageIds}::text[], sent_at = ${f.sentAt},
               receipt_due_at = ${f.receiptDueAt}
        where id = ${id} and status = 'queued'`;
    },

    async insertParts(id: string, parts: { seq: number; supplierMessageId: string; matchKeys: string[] }[], tx: Db = db): Promise<void> {
      if (parts.length === 0) return;
      const rows = parts.map((p) => ({ message_id: id, seq: p.seq, supplier_message_id: p.supplierMessageId, match_keys: p.matchKeys }));
      await tx`insert into message_parts ${tx(rows, 'message_id', 'seq', 'supplier_message_id', 'match_keys')}`;
    },

    async markFailedAtSend(id: string, f: { routeId: string | null; errorCode: string; detail: string; at: Date }, tx: Db = db): Promise<void> {
      await tx`
        update messages set status = 'failed', route_id = ${f.routeId}, error_code = ${f.errorCode}, error_detail = ${f.detail}, failed_at = ${f.at}
        where id = ${id} and status = 'queued'`;
    },

    /** Locks the message for a state change. */
    async lock(id: string, tx: Db): Promise<MessageRow | null> {
      const [r] = await tx<MessageRow[]>`select ${messageColumns(tx)} from messages where id = ${id} for update`;
      return r ?? null;
    },

    async get(id: string): Promise<MessageRow | null> {
      const [r] = await db<MessageRow[]>`select ${messageColumns(db)} from messages where id = ${id}`;
      return r ?? null;
    },

    /** The part a receipt names: by our id when the bind matched it, else by any key of the supplier id (newest first). */
    async findPart(keys: string[], messageId: string | null, tx: Db = db, routeId: string | null = null): Promise<{ messageId: string; seq: number } | null> {
      const [r] = await tx<{ messageId: string; seq: number }[]>`
        select message_id, seq from message_parts p
        where match_keys && ${keys}::text[] ${messageId ? tx`and message_id = ${messageId}` : tx``}
          ${routeId ? tx`and exists (select 1 from messages m where m.id = p.message_id and m.route_id = ${routeId})` : tx``}
        order by message_id desc, seq limit 1`;
      return r ?? null;
    },

    async recordPartReceipt(messageId: string, seq: number, stat: string, err: string, at: Date, tx: Db): Promise<{ total: number; delivered: number }> {
      await tx`update message_parts set stat = ${stat}, err = ${err}, receipt_at = ${at} where message_id = ${messageId} and seq = ${seq}`;
      await tx`update messages set receipt_at = ${at}, receipt_stat = ${stat}, receipt_err = ${err} where id = ${messageId}`;
      const [c] = await tx<{ total: number; delivered: number }[]>`
        select count(*)::int as total, count(*) filter (where stat = 'DELIVRD')::int as delivered
        from message_parts where message_id = ${messageId}`;
      return c ?? { total: 0, delivered: 0 };
    },

    async markDelivered(id: string, at: Date, tx: Db): Promise<void> {
      await tx`update messages set status = 'delivered', delivered_at = ${at}, receipt_due_at = null where id = ${id} and status = 'sent'`;
    },

    async markFailedAfterSend(id: string, f: { errorCode: string; detail: string; refundPostingId: string | null; at: Date }, tx: Db): Promise<void> {
      await tx`
        update messages set status = 'failed', error_code = ${f.errorCode}, error_detail = ${f.detail}, refund_posting_id = ${f.refundPostingId},
               failed_at = ${f.at}, receipt_due_at = null
        where id = ${id} and status = 'sent'`;
    },

    async clearReceiptDue(id: string, tx: Db = db): Promise<void> {
      await tx`update messages set receipt_due_at = null where id = ${id}`;
    },

    async dueForExpiry(now: Date, limit: number): Promise<{ id: string; routeId: string | null }[]> {
      return db<{ id: string; routeId: string | null }[]>`
        select id, route_id from messages where status = 'sent' and receipt_due_at <= ${now} order by receipt_due_at limit ${limit}`;
    },

    /** The signing secret of a route delivered over HTTPS (null: no such route, or another delivery). */
    async httpSigningSecret(routeId: string): Promise<string | null> {
      const [r] = await db<{ secret: string | null }[]>`
        select sms_delivery->>'signingSecret' as secret from routes where id = ${routeId} and sms_delivery->>'kind' = 'http'`;
      return r?.secret ?? null;
    },

    /** Whether the route returned any receipt in the 30 days before `now`. */
    async routeReturnsReceipts(routeId: string, now: Date, tx: Db = db): Promise<boolean> {
      const [r] = await tx<{ yes: boolean }[]>`
        select exists(select 1 from messages where route_id = ${routeId} and receipt_at > ${now}::timestamptz - interval '30 days') as yes`;
      return r?.yes ?? false;
    },

    /** The customer's ledger entries for messages, newest first (spec "Communications history entry"). */
    history: (accountId: string, f: HistoryFilter) => communicationsHistory(db, accountId, ['api_sms', 'smpp_sms'], f),
  };
}

export type SmsRepo = ReturnType<typeof createSmsRepo>;
