import { createHash } from 'node:crypto';
import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import type { Sql, TransactionSql } from '../../db/connection.js';
import { AppError, InsufficientBalanceError, notFound } from '../../http/errors.js';
import type { Ledger } from '../../ledger/ledger.js';
import { Money } from '../../ledger/money.js';
import { countSegments, SMPP_STATUS, type MobileOriginated } from '../../messaging/index.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { emit } from '../../webhooks/emit.js';
import type { ApplicationService } from '../application/service.js';
import { chargeMarkup, markupOn, markupPctOn } from '../cdrs/index.js';
import { createFeeSplit } from './fee.js';
import { isBalanceRefusal } from './orders.js';

/** A payer's reseller markups (Application Manager's one look-up): a sub-account renter pays its operator's. */
export type PayerMarkupsOf = ApplicationService['payerMarkups'];

/** Whether `routeId` is an SMS route of `sellerId` (the marketplace's answer). */
export type SellerSmsRoute = (routeId: string, sellerId: string) => Promise<boolean>;

export interface InboundSms {
  from: string;
  to: string;
  text: string;
  /** The seller's id of the message (HTTPS callbacks): a repeat is a no-op. SMPP's deliver_sm carries none. */
  supplierMessageId?: string;
  /**
   * What makes an SMPP re-send recognisable without a message id (concatenation reference; null for
   * a single part): the same route, source, destination, reference and text within the window is one message.
   */
  smppReference?: string | null;
}

const digits = (n: string) => n.replace(/^\+/, '');

/**
 * A mobile-originated SMS that a number's seller delivers to one of its numbers: kept as a
 * received message of the number's conversation with the sender and, in the same transaction,
 * the group's inbound SMS price charged to the renter (the seller credited less the platform
 * fee, a sub-account renter's reseller markup on top, paid to its operator) and `number.sms.received` for the owner (the outbox sends it signed to the owner's
 * endpoints). The seller's supplier message id, or for SMPP the re-send key, makes a repeated
 * delivery a no-op.
 */
export function createInboundSms(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  ledger: Ledger;
  sellerSmsRoute: SellerSmsRoute;
  payerMarkups: PayerMarkupsOf;
  platformFeePercent: string;
  dedupWindowSeconds: number;
  /** `[numbers] ported_inbound_trunk`: the carrier bringing ported numbers' traffic in (empty: none). */
  portedInboundTrunk?: string;
}) {
  const { sql, clock, log, ledger } = deps;
  const portedCarrier = deps.portedInboundTrunk ? deps.portedInboundTrunk : null;
  const split = createFeeSplit(deps.platformFeePercent);

  /**
   * Claims an SMPP message's re-send key for `messageId`; false when the same message was kept
   * within the window. A claim older than the window is taken over: the same words sent again
   * later are a new message.
   */
  async function claimResend(tx: TransactionSql, key: string, messageId: string, at: Date): Promise<boolean> {
    const since = new Date(at.getTime() - deps.dedupWindowSeconds * 1000);
    const rows = await tx`
      insert into did_mo_seen (key, message_id, seen_at) values (${key}, ${messageId}, ${at})
      on conflict (key) do update set message_id = excluded.message_id, seen_at = excluded.seen_at
        where did_mo_seen.seen_at < ${since}
      returning message_id`;
    return rows.length === 1;
  }

  /** The group's price of a received message; null when the group sets none (or 0). */
  function priceOf(did: LiveDid): Money | null {
    if (did.inboundSmsRate === null) return null;
    const price = Money.parse(did.inboundSmsRate);
    return price.isZero() ? null : price;
  }

  /**
   * What a priced message costs the renter: the group's price, and for a sub-account its reseller's
   * markup on it (rounded once to 6 places, as calls and sent messages), paid to the operator. The
   * number is the "route" of the markup look-up, as on the number's inbound calls.
   */
  async function renterPrice(did: LiveDid): Promise<RenterPrice | null> {
    const price = priceOf(did);
    // A ported number has no seller to earn from its messages (nor a group to price them): free.
    if (price === null || did.sellerId === null) return null;
    const m = await deps.payerMarkups(did.accountId);
    const markup = m.operatorId ? markupOn(price.value, markupPctOn(m, did.id)) : new Decimal(0);
    return { price, sellerId: did.sellerId, operatorId: m.operatorId, markup };
  }

  /**
   * The renter pays the priced message: the seller its part and the platform its fee in one
   * charge, the operator its markup right behind it; either refused by the balance refuses the message.
   */
  async function charge(tx: TransactionSql, did: LiveDid, messageId: string, p: RenterPrice) {
    const { fee, seller } = split(p.price);
    const postingKey = `did:${did.id}:sms-in:${messageId}`;
    const context = {
      reference: 'Phone number: SMS received',
      relatedEntityType: 'did_message',
      relatedEntityId: messageId,
    };
    try {
      const paid = await ledger.charge(
        {
          postingKey,
          accountId: did.accountId,
          sellerId: p.sellerId,
          amount: seller.toString(),
          fee: fee.toString(),
          ...context,
        },
        tx,
      );
      await chargeMarkup(ledger, tx, {
        key: postingKey,
        payer: did.accountId,
        operatorId: p.operatorId,
        markup: p.markup.toFixed(6),
        context,
      });
      return { postingId: paid.postingId, cost: p.price.value.plus(p.markup).toFixed(6) };
    } catch (err) {
      if (isBalanceRefusal(err))
        throw new InsufficientBalanceError(
          "Insufficient balance: the number's owner cannot pay for received messages",
          'balance',
        );
      throw err;
    }
  }

  const receiver = {
    async receive(routeId: string, sms: InboundSms): Promise<{ messageId: string; duplicate: boolean }> {
      const to = digits(sms.to);
      // A ported number's messages come from the carrier its port-in named (or the default one), as its calls do.
      const [did] = await sql<LiveDid[]>`
        select d.id, d.account_id, d.seller_id, d.number, g.inbound_sms_rate::text,
               case when d.origin = 'ported' then coalesce(d.inbound_carrier_id, ${portedCarrier}::uuid)
                    else d.seller_id end as carrier_id
        from dids d left join did_groups g on g.id = d.group_id
        where d.number = ${to} and d.status = 'active'`;
      // A number not rented (or ported), or brought in by another seller or carrier, is not this route's to deliver to.
      if (!did || did.carrierId === null || !(await deps.sellerSmsRoute(routeId, did.carrierId)))
        throw notFound('Active number');
      const key = sms.supplierMessageId === undefined ? null : `in:${sms.supplierMessageId}`;
      const from = digits(sms.from);
      const resendKey =
        sms.smppReference === undefined
          ? null
          : createHash('sha256')
              .update([routeId, from, to, sms.smppReference ?? '', sms.text].join('\u0000'))
              .digest('hex');
      const at = clock.now();
      const id = newId();
      const segments = countSegments(sms.text).segments;
      const priced = await renterPrice(did);
      const stored = await sql.begin(async (tx) => {
        if (resendKey !== null && !(await claimResend(tx, resendKey, id, at))) return false;
        const res = await tx`
          insert into did_messages (id, did_id, account_id, direction, from_number, to_number, peer, body, segments,
                                    status, provider_message_id, idempotency_key, created_at)
          values (${id}, ${did.id}, ${did.accountId}, 'in', ${from}, ${to}, ${from}, ${sms.text}, ${segments},
                  'received', ${sms.supplierMessageId ?? null}, ${key}, ${at})
          on conflict (did_id, idempotency_key) where idempotency_key is not null do nothing`;
        if (res.count === 0) return false;
        const paid = priced && (await charge(tx, did, id, priced));
        if (paid)
          await tx`
            update did_messages set cost = ${paid.cost}::numeric, posting_id = ${paid.postingId}
            where id = ${id}`;
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
      if (!stored) {
        const [first] =
          key !== null
            ? await sql<{ id: string }[]>`
                select id from did_messages where did_id = ${did.id} and idempotency_key = ${key}`
            : await sql<{ id: string }[]>`select message_id as id from did_mo_seen where key = ${resendKey}`;
        log.info({ didId: did.id, messageId: first!.id }, 'repeated SMS delivery to a number ignored');
        return { messageId: first!.id, duplicate: true };
      }
      log.info({ didId: did.id, messageId: id }, 'SMS received on a number');
      return { messageId: id, duplicate: false };
    },

    /**
     * A mobile-originated message over one of the seller's SMPP binds: kept as the callback's are,
     * answered ESME_ROK once committed (and for a re-send already kept), ESME_RINVDSTADR for a
     * number not rented from this seller, ESME_RX_P_APPN (permanent: no retry) when the renter
     * cannot pay the number's inbound SMS price.
     */
    async fromSmsc(routeId: string, mo: MobileOriginated): Promise<number> {
      try {
        await receiver.receive(routeId, {
          from: mo.source,
          to: mo.destination,
          text: mo.text,
          smppReference: mo.reference,
        });
        return SMPP_STATUS.ESME_ROK;
      } catch (err) {
        if (err instanceof AppError && err.code === 'NOT_FOUND') return SMPP_STATUS.ESME_RINVDSTADR;
        if (err instanceof InsufficientBalanceError) return SMPP_STATUS.ESME_RX_P_APPN;
        throw err;
      }
    },

    /**
     * Sellers whose numbers are rented, and carriers of ported numbers: their SMPP binds are kept open
     * for the messages to those numbers.
     */
    async sellersWithNumbers(): Promise<string[]> {
      const rows = await sql<{ sellerId: string }[]>`
        select distinct coalesce(seller_id, inbound_carrier_id, ${portedCarrier}::uuid) as seller_id
        from dids where status in ('active', 'suspended')
          and coalesce(seller_id, inbound_carrier_id, ${portedCarrier}::uuid) is not null`;
      return rows.map((r) => r.sellerId);
    },

    /** Forgets re-send keys older than the window (they no longer stop anything). */
    async forgetOldResends(): Promise<number> {
      const since = new Date(clock.now().getTime() - deps.dedupWindowSeconds * 1000);
      return (await sql`delete from did_mo_seen where seen_at < ${since}`).count;
    },
  };
  return receiver;
}

interface RenterPrice {
  price: Money;
  sellerId: string;
  /** The sub-account renter's operator, paid `markup`; null when the renter is not a sub-account. */
  operatorId: string | null;
  markup: Decimal;
}

interface LiveDid {
  id: string;
  accountId: string;
  /** Null on a ported number. */
  sellerId: string | null;
  number: string;
  inboundSmsRate: string | null;
  /** Who may deliver its messages: the seller, or a ported number's carrier (null: nobody named). */
  carrierId: string | null;
}

export type InboundSmsReceiver = ReturnType<typeof createInboundSms>;
