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

/** What a message gets when its route accepts it. */
export interface SentFields {
  routeId: string | null;
  sellerId: string | null;
  networkPriceApplied: boolean;
  pricePerSegment: string;
  cost: string;
  chargePostingId: string;
  markupPostingId: string | null;
  supplierMessageIds: string[];
  sentAt: Date;
  receiptDueAt: Date | null;
}

const messageColumns = (db: Db) => db`
  id, account_id, operator_id, source, to_number, from_sender, segments, encoding, data_coding, route_id, seller_id,
  mcc_mnc, network_name, network_price_applied, status, error_code, supplier_message_ids,
  cost::numeric(20,6)::text as cost, hold_id, charge_posting_id, markup_posting_id, refund_posting_id, simulated,
  queued_at, sent_at, delivered_at, failed_at, receipt_due_at, customer_part_ids`;

/** A stored early HTTPS receipt (053). */
export interface EarlyReceipt {
  routeId: string;
  supplierMessageId: string;
  reference: string | null;
  stat: string;
  err: string;
  doneAt: Date | null;
  receivedAt: Date;
}

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

    /** Many new rows in one statement (the rows of one money batch); each row as `insert` writes it. */
    async insertMany(ms: (NewMessage & { holdId?: string | null })[], tx: Db = db): Promise<void> {
      if (ms.length === 0) return;
      const rows = ms.map((m) => ({
        id: m.id,
        account_id: m.accountId,
        operator_id: m.operatorId,
        source: m.source,
        to_number: m.toNumber,
        from_sender: m.fromSender,
        text_sha256: m.textSha256,
        text_units: m.textUnits,
        encoding: m.encoding,
        data_coding: m.dataCoding,
        segments: m.segments,
        mcc_mnc: m.mccMnc,
        network_name: m.networkName,
        registered_delivery: m.registeredDelivery,
        simulated: m.simulated,
        queued_at: m.queuedAt.toISOString(),
        hold_id: m.holdId ?? null,
        customer_part_ids: m.customerPartIds ?? [],
      }));
      await tx`
        insert into messages (id, account_id, operator_id, source, to_number, from_sender, text_sha256, text_units, encoding,
                              data_coding, segments, mcc_mnc, network_name, status, registered_delivery, simulated, queued_at, hold_id,
                              customer_part_ids)
        select id, account_id, operator_id, source, to_number, from_sender, text_sha256, text_units, encoding,
               data_coding, segments, mcc_mnc, network_name, 'queued', registered_delivery, simulated, queued_at, hold_id, customer_part_ids
        from jsonb_to_recordset(${tx.json(rows as never)}) as x(
          id uuid, account_id uuid, operator_id uuid, source text, to_number text, from_sender text, text_sha256 text, text_units integer,
          encoding text, data_coding integer, segments integer, mcc_mnc text, network_name text, registered_delivery boolean,
          simulated boolean, queued_at timestamptz, hold_id uuid, customer_part_ids text[])`;
    },

    /** `markSent` of many messages in one statement (money as 6-place strings, exact through numeric). */
    async markSentMany(list: (SentFields & { id: string })[], tx: Db = db): Promise<void> {
      if (list.length === 0) return;
      const rows = list.map((f) => ({
        id: f.id,
        route_id: f.routeId,
        seller_id: f.sellerId,
        network_price_applied: f.networkPriceApplied,
        price_per_segment: f.pricePerSegment,
        cost: f.cost,
        charge_posting_id: f.chargePostingId,
        markup_posting_id: f.markupPostingId,
        supplier_message_ids: f.supplierMessageIds,
        sent_at: f.sentAt.toISOString(),
        receipt_due_at: f.receiptDueAt?.toISOString() ?? null,
      }));
      await tx`
        update messages m set status = 'sent', route_id = x.route_id, seller_id = x.seller_id, network_price_applied = x.network_price_applied,
               price_per_segment = x.price_per_segment, cost = x.cost, charge_posting_id = x.charge_posting_id,
               markup_posting_id = x.markup_posting_id, supplier_message_ids = x.supplier_message_ids, sent_at = x.sent_at,
               receipt_due_at = x.receipt_due_at
        from jsonb_to_recordset(${tx.json(rows as never)}) as x(
          id uuid, route_id uuid, seller_id uuid, network_price_applied boolean, price_per_segment numeric, cost numeric,
          charge_posting_id uuid, markup_posting_id uuid, supplier_message_ids text[], sent_at timestamptz, receipt_due_at timestamptz)
        where m.id = x.id and m.status = 'queued'
          -- The ids again as an array: the record set alone is estimated at 100 rows, and a plan kept
          -- from when the table was small joins it to a scan of all of messages on every batch.
          and m.id = any(${tx.array(list.map((f) => f.id))}::uuid[])`;
    },

    /** The supplier parts of many messages in one statement. */
    async insertPartsMany(
      parts: { messageId: string; seq: number; supplierMessageId: string; matchKeys: string[] }[],
      tx: Db = db,
    ): Promise<void> {
      if (parts.length === 0) return;
      const rows = parts.map((p) => ({
        message_id: p.messageId,
        seq: p.seq,
        supplier_message_id: p.supplierMessageId,
        match_keys: p.matchKeys,
      }));
      await tx`
        insert into message_parts (message_id, seq, supplier_message_id, match_keys)
        select message_id, seq, supplier_message_id, match_keys
        from jsonb_to_recordset(${tx.json(rows as never)}) as x(message_id uuid, seq integer, supplier_message_id text, match_keys text[])`;
    },

    async setHold(id: string, holdId: string, tx: Db = db): Promise<void> {
      await tx`update messages set hold_id = ${holdId} where id = ${id}`;
    },

    async markSent(id: string, f: SentFields, tx: Db = db): Promise<void> {
      await tx`
        update messages set status = 'sent', route_id = ${f.routeId}, seller_id = ${f.sellerId}, network_price_applied = ${f.networkPriceApplied},
               price_per_segment = ${f.pricePerSegment}::numeric, cost = ${f.cost}::numeric, charge_posting_id = ${f.chargePostingId},
               markup_posting_id = ${f.markupPostingId}, supplier_message_ids = ${f.supplierMessageIds}::text[], sent_at = ${f.sentAt},
               receipt_due_at = ${f.receiptDueAt}
        where id = ${id} and status = 'queued'`;
    },

    async insertParts(
      id: string,
      parts: { seq: number; supplierMessageId: string; matchKeys: string[] }[],
      tx: Db = db,
    ): Promise<void> {
      if (parts.length === 0) return;
      const rows = parts.map((p) => ({
        message_id: id,
        seq: p.seq,
        supplier_message_id: p.supplierMessageId,
        match_keys: p.matchKeys,
      }));
      await tx`insert into message_parts ${tx(rows, 'message_id', 'seq', 'supplier_message_id', 'match_keys')}`;
    },

    async markFailedAtSend(
      id: string,
      f: { routeId: string | null; errorCode: string; detail: string; at: Date },
      tx: Db = db,
    ): Promise<void> {
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
    async findPart(
      keys: string[],
      messageId: string | null,
      tx: Db = db,
      routeId: string | null = null,
    ): Promise<{ messageId: string; seq: number } | null> {
      const [r] = await tx<{ messageId: string; seq: number }[]>`
        select message_id, seq from message_parts p
        where match_keys && ${keys}::text[] ${messageId ? tx`and message_id = ${messageId}` : tx``}
          ${routeId ? tx`and exists (select 1 from messages m where m.id = p.message_id and m.route_id = ${routeId})` : tx``}
        order by message_id desc, seq limit 1`;
      return r ?? null;
    },

    async recordPartReceipt(
      messageId: string,
      seq: number,
      stat: string,
      err: string,
      at: Date,
      tx: Db,
    ): Promise<{ total: number; delivered: number }> {
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

    async markFailedAfterSend(
      id: string,
      f: { errorCode: string; detail: string; refundPostingId: string | null; at: Date },
      tx: Db,
    ): Promise<void> {
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
    /** An HTTPS receipt kept until the send it names commits (053). */
    async storeEarlyReceipt(r: EarlyReceipt): Promise<string> {
      const [row] = await db<{ id: string }[]>`
        insert into sms_early_receipts (route_id, supplier_message_id, reference, stat, err, done_at, received_at)
        values (${r.routeId}, ${r.supplierMessageId}, ${r.reference}, ${r.stat}, ${r.err}, ${r.doneAt}, ${r.receivedAt})
        returning id`;
      return row!.id;
    },
    async earlyReceiptsSince(since: Date): Promise<(EarlyReceipt & { id: string })[]> {
      return db<(EarlyReceipt & { id: string })[]>`
        select id, route_id, supplier_message_id, reference, stat, err, done_at, received_at
        from sms_early_receipts where received_at >= ${since} order by received_at`;
    },
    async deleteEarlyReceipts(ids: string[]): Promise<void> {
      if (ids.length) await db`delete from sms_early_receipts where id = any(${ids}::uuid[])`;
    },
    async deleteEarlyReceiptsBefore(before: Date): Promise<void> {
      await db`delete from sms_early_receipts where received_at < ${before}`;
    },
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
