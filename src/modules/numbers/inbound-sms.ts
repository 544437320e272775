import type { Logger } from 'pino';
import type { Sql } from '../../db/connection.js';
import { AppError, notFound } from '../../http/errors.js';
import { countSegments, SMPP_STATUS, type MobileOriginated } from '../../messaging/index.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { emit } from '../../webhooks/emit.js';

/** Whether `routeId` is an SMS route of `sellerId` (the marketplace's answer). */
export type SellerSmsRoute = (routeId: string, sellerId: string) => Promise<boolean>;

export interface InboundSms {
  from: string;
  to: string;
  text: string;
  /** The seller's id of the message (HTTPS callbacks): a repeat is a no-op. SMPP's deliver_sm carries none. */
  supplierMessageId?: string;
}

const digits = (n: string) => n.replace(/^\+/, '');

/**
 * A mobile-originated SMS that a number's seller delivers to one of its numbers: kept as a
 * received message of the number's conversation with the sender and, in the same transaction,
 * `number.sms.received` for the owner (the outbox sends it signed to the owner's endpoints).
 * The seller's supplier message id makes a retried delivery a no-op.
 */
export function createInboundSms(deps: { sql: Sql; clock: Clock; log: Logger; sellerSmsRoute: SellerSmsRoute }) {
  const { sql, clock, log } = deps;
  const receiver = {
    async receive(routeId: string, sms: InboundSms): Promise<{ messageId: string; duplicate: boolean }> {
      const to = digits(sms.to);
      const [did] = await sql<{ id: string; accountId: string; sellerId: string; number: string }[]>`
        select id, account_id, seller_id, number from dids where number = ${to} and status = 'active'`;
      // A number not rented, or rented from another seller, is not this route's to deliver to.
      if (!did || !(await deps.sellerSmsRoute(routeId, did.sellerId))) throw notFound('Active number');
      const key = sms.supplierMessageId === undefined ? null : `in:${sms.supplierMessageId}`;
      const from = digits(sms.from);
      const at = clock.now();
      const id = newId();
      const segments = countSegments(sms.text).segments;
      const stored = await sql.begin(async (tx) => {
        const res = await tx`
          insert into did_messages (id, did_id, account_id, direction, from_number, to_number, peer, body, segments,
                                    status, provider_message_id, idempotency_key, created_at)
          values (${id}, ${did.id}, ${did.accountId}, 'in', ${from}, ${to}, ${from}, ${sms.text}, ${segments},
                  'received', ${sms.supplierMessageId ?? null}, ${key}, ${at})
          on conflict (did_id, idempotency_key) where idempotency_key is not null do nothing`;
        if (res.count === 0) return false;
        await emit(tx, {
          accountId: did.accountId,
          event: 'number.sms.received',
          data: {
            didId: did.id,
            messageId: id,
            number: to,
            from,
            to,
            body: sms.text,
            segments,
            receivedAt: at.toISOString(),
          },
          at,
        });
        return true;
      });
      if (!stored && key !== null) {
        const [first] = await sql<{ id: string }[]>`
          select id from did_messages where did_id = ${did.id} and idempotency_key = ${key}`;
        return { messageId: first!.id, duplicate: true };
      }
      log.info({ didId: did.id, messageId: id }, 'SMS received on a number');
      return { messageId: id, duplicate: false };
    },

    /**
     * A mobile-originated message over one of the seller's SMPP binds: kept as the callback's are,
     * answered ESME_ROK once committed, ESME_RINVDSTADR for a number not rented from this seller.
     */
    async fromSmsc(routeId: string, mo: MobileOriginated): Promise<number> {
      try {
        await receiver.receive(routeId, { from: mo.source, to: mo.destination, text: mo.text });
        return SMPP_STATUS.ESME_ROK;
      } catch (err) {
        if (err instanceof AppError && err.code === 'NOT_FOUND') return SMPP_STATUS.ESME_RINVDSTADR;
        throw err;
      }
    },

    /** Sellers whose numbers are rented: their SMPP binds are kept open for the messages to those numbers. */
    async sellersWithNumbers(): Promise<string[]> {
      const rows = await sql<{ sellerId: string }[]>`
        select distinct seller_id from dids where status in ('active', 'suspended')`;
      return rows.map((r) => r.sellerId);
    },
  };
  return receiver;
}

export type InboundSmsReceiver = ReturnType<typeof createInboundSms>;
