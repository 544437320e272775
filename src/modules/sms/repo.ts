import type { Db } from '../../db/connection.js';
import { supplierIdKeys } from '../../messaging/index.js';
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

/**
 * A message as it is first written: once its send is decided (sent, or failed at send), in the
 * transaction that settles or releases its hold. Money as 6-place strings.
 */
export interface StoredMessage extends NewMessage {
  status: 'sent' | 'failed';
  holdId: string | null;
  routeId: string | null;
  sellerId: string | null;
  networkPriceApplied: boolean;
  pricePerSegment: string | null;
  cost: string;
  chargePostingId: string | null;
  markupPostingId: string | null;
  supplierMessageIds: string[];
  /** Every key of every supplier id (supplierIdKeys): how a receipt finds its message. */
  matchKeys: string[] | null;
  sentAt: Date | null;
  receiptDueAt: Date | null;
  errorCode: string | null;
  errorDetail: string | null;
  failedAt: Date | null;
}

/** What a send decided about a message: its status and the fields that outcome sets. */
export type SendOutcome = Pick<StoredMessage, 'status'> & Partial<Omit<StoredMessage, keyof NewMessage | 'status'>>;

/**
 * The row of a message whose send is decided, in one object literal. A field its outcome does not
 * set is null (or empty). Not `{ ...message, ...unsent, ...outcome }`: V8 copies a second large
 * spread property by property through new hidden classes, about 17 µs and 26 KB of garbage per
 * message on the send path (bench/sms/rest-e2e's heap profile).
 */
export function storedMessage(m: NewMessage, o: SendOutcome): StoredMessage {
  return {
    id: m.id,
    accountId: m.accountId,
    operatorId: m.operatorId,
    source: m.source,
    toNumber: m.toNumber,
    fromSender: m.fromSender,
    textSha256: m.textSha256,
    textUnits: m.textUnits,
    encoding: m.encoding,
    dataCoding: m.dataCoding,
    segments: m.segments,
    mccMnc: m.mccMnc,
    networkName: m.networkName,
    registeredDelivery: m.registeredDelivery,
    simulated: m.simulated,
    queuedAt: m.queuedAt,
    customerPartIds: m.customerPartIds ?? [],
    status: o.status,
    holdId: o.holdId ?? null,
    routeId: o.routeId ?? null,
    sellerId: o.sellerId ?? null,
    networkPriceApplied: o.networkPriceApplied ?? false,
    pricePerSegment: o.pricePerSegment ?? null,
    cost: o.cost ?? '0.000000',
    chargePostingId: o.chargePostingId ?? null,
    markupPostingId: o.markupPostingId ?? null,
    supplierMessageIds: o.supplierMessageIds ?? [],
    matchKeys: o.matchKeys ?? null,
    sentAt: o.sentAt ?? null,
    receiptDueAt: o.receiptDueAt ?? null,
    errorCode: o.errorCode ?? null,
    errorDetail: o.errorDetail ?? null,
    failedAt: o.failedAt ?? null,
  };
}

const messageColumns = (db: Db) => db`
  id, account_id, operator_id, source, to_number, from_sender, segments, encoding, data_coding, route_id, seller_id,
  mcc_mnc, network_name, network_price_applied, status, error_code, supplier_message_ids,
  cost::numeric(20,6)::text as cost, hold_id, charge_posting_id, markup_posting_id, refund_posting_id, simulated,
  queued_at, sent_at, delivered_at, failed_at, receipt_due_at, customer_part_ids`;

/** A supplier receipt as a message keeps it. */
export interface Receipt {
  stat: string;
  err: string;
  at: Date;
}

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
    /**
     * Many messages in one statement (the rows of one money batch), each written once in its final
     * send state: no row is inserted as queued and then updated, which wrote each message twice
     * with every index entry twice (the update could not be HOT: it changes indexed columns).
     */
    async insertMany(ms: StoredMessage[], tx: Db = db): Promise<void> {
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
        status: m.status,
        registered_delivery: m.registeredDelivery,
        simulated: m.simulated,
        queued_at: m.queuedAt.toISOString(),
        hold_id: m.holdId,
        customer_part_ids: m.customerPartIds ?? [],
        route_id: m.routeId,
        seller_id: m.sellerId,
        network_price_applied: m.networkPriceApplied,
        price_per_segment: m.pricePerSegment,
        cost: m.cost,
        charge_posting_id: m.chargePostingId,
        markup_posting_id: m.markupPostingId,
        supplier_message_ids: m.supplierMessageIds,
        match_keys: m.matchKeys,
        sent_at: m.sentAt?.toISOString() ?? null,
        receipt_due_at: m.receiptDueAt?.toISOString() ?? null,
        error_code: m.errorCode,
        error_detail: m.errorDetail,
        failed_at: m.failedAt?.toISOString() ?? null,
      }));
      await tx`
        insert into messages (id, account_id, operator_id, source, to_number, from_sender, text_sha256, text_units, encoding,
                              data_coding, segments, mcc_mnc, network_name, status, registered_delivery, simulated, queued_at, hold_id,
                              customer_part_ids, route_id, seller_id, network_price_applied, price_per_segment, cost,
                              charge_posting_id, markup_posting_id, supplier_message_ids, match_keys, sent_at, receipt_due_at,
                              error_code, error_detail, failed_at)
        select id, account_id, operator_id, source, to_number, from_sender, text_sha256, text_units, encoding,
               data_coding, segments, mcc_mnc, network_name, status, registered_delivery, simulated, queued_at, hold_id,
               customer_part_ids, route_id, seller_id, network_price_applied, price_per_segment, cost,
               charge_posting_id, markup_posting_id, supplier_message_ids, match_keys, sent_at, receipt_due_at,
               error_code, error_detail, failed_at
        from jsonb_to_recordset(${tx.json(rows as never)}) as x(
          id uuid, account_id uuid, operator_id uuid, source text, to_number text, from_sender text, text_sha256 text, text_units integer,
          encoding text, data_coding integer, segments integer, mcc_mnc text, network_name text, status text, registered_delivery boolean,
          simulated boolean, queued_at timestamptz, hold_id uuid, customer_part_ids text[], route_id uuid, seller_id uuid,
          network_price_applied boolean, price_per_segment numeric, cost numeric, charge_posting_id uuid, markup_posting_id uuid,
          supplier_message_ids text[], match_keys text[], sent_at timestamptz, receipt_due_at timestamptz, error_code text, error_detail text,
          failed_at timestamptz)`;
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

    /**
     * The part a receipt names: by our id when the bind matched it, else by any key of the supplier
     * id (newest message first); the part is the first of the message's supplier ids sharing a key.
     */
    async findPart(
      keys: string[],
      messageId: string | null,
      tx: Db = db,
      routeId: string | null = null,
    ): Promise<{ messageId: string; seq: number } | null> {
      // OFFSET 0 keeps the match in its own scan of the key index: flattened, a generic plan that
      // guesses 1% of messages match reads the primary key backwards, filtering, and a receipt that
      // matches nothing (an early one) would read every message.
      const [r] = await tx<{ id: string; supplierMessageIds: string[] }[]>`
        select id, supplier_message_ids from (
          select id, supplier_message_ids from messages
          where match_keys && ${keys}::text[] ${messageId ? tx`and id = ${messageId}` : tx``}
            ${routeId ? tx`and route_id = ${routeId}` : tx``}
          offset 0) m
        order by id desc limit 1`;
      if (!r) return null;
      const wanted = new Set(keys);
      const i = r.supplierMessageIds.findIndex((sid) => supplierIdKeys(sid).some((k) => wanted.has(k)));
      // Always found (match_keys is made of these ids' keys); the first part otherwise, as a guard.
      return { messageId: r.id, seq: Math.max(i, 0) + 1 };
    },

    /**
     * A part's receipt: how many of the message's parts are delivered so far. A message of one part
     * keeps its receipt on its own row (set with its new state, or by `noteReceipt`); one of several
     * keeps each part's state in message_parts, written when that part's first receipt comes
     * (sends write no part rows).
     */
    async recordPartReceipt(
      m: { id: string; supplierMessageIds: string[] },
      seq: number,
      r: Receipt,
      tx: Db,
    ): Promise<{ total: number; delivered: number }> {
      const total = m.supplierMessageIds.length;
      if (total <= 1) return { total: 1, delivered: r.stat === 'DELIVRD' ? 1 : 0 };
      const sid = m.supplierMessageIds[seq - 1]!;
      await tx`
        insert into message_parts (message_id, seq, supplier_message_id, match_keys, stat, err, receipt_at)
        values (${m.id}, ${seq}, ${sid}, ${supplierIdKeys(sid)}::text[], ${r.stat}, ${r.err}, ${r.at})
        on conflict (message_id, seq) do update set stat = excluded.stat, err = excluded.err, receipt_at = excluded.receipt_at`;
      const [c] = await tx<{ delivered: number }[]>`
        select count(*) filter (where stat = 'DELIVRD')::int as delivered from message_parts where message_id = ${m.id}`;
      return { total, delivered: c?.delivered ?? 0 };
    },

    /** The latest receipt on a message whose state it does not change. */
    async noteReceipt(id: string, r: Receipt, tx: Db): Promise<void> {
      await tx`update messages set receipt_at = ${r.at}, receipt_stat = ${r.stat}, receipt_err = ${r.err} where id = ${id}`;
    },

    /** Delivered, with the receipt that made it so: one new row version for both. */
    async markDelivered(id: string, r: Receipt, tx: Db): Promise<void> {
      await tx`
        update messages set status = 'delivered', delivered_at = ${r.at}, receipt_due_at = null,
               receipt_at = ${r.at}, receipt_stat = ${r.stat}, receipt_err = ${r.err}
        where id = ${id} and status = 'sent'`;
    },

    /** Failed after it was sent (refunded); `receipt`: the one that failed it, kept in the same update. */
    async markFailedAfterSend(
      id: string,
      f: { errorCode: string; detail: string; refundPostingId: string | null; at: Date; receipt: Receipt | null },
      tx: Db,
    ): Promise<void> {
      const r = f.receipt;
      await tx`
        update messages set status = 'failed', error_code = ${f.errorCode}, error_detail = ${f.detail}, refund_posting_id = ${f.refundPostingId},
               failed_at = ${f.at}, receipt_due_at = null
               ${r ? tx`, receipt_at = ${r.at}, receipt_stat = ${r.stat}, receipt_err = ${r.err}` : tx``}
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
