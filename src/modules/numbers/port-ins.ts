import type { Logger } from 'pino';
import type { Db, Sql } from '../../db/connection.js';
import { conflict, notFound, ruleError, validationError } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { emit } from '../../webhooks/emit.js';
import * as dids from './did-repo.js';
import * as repo from './port-in-repo.js';
import { addMonths } from './present.js';
import type { PortInInput, PortInRow, PortInStatus } from './port-in-repo.js';

/** Which states each step leaves from (docs/numbers.md "Port-in orders"). */
const FROM: Record<'review' | 'approve' | 'reject' | 'complete' | 'cancel', readonly PortInStatus[]> = {
  review: ['submitted'],
  approve: ['submitted', 'in_review'],
  reject: ['submitted', 'in_review'],
  complete: ['approved'],
  cancel: ['submitted', 'in_review', 'approved'],
};
const TO = {
  review: 'in_review',
  approve: 'approved',
  reject: 'rejected',
  complete: 'completed',
  cancel: 'cancelled',
} as const satisfies Record<keyof typeof FROM, PortInStatus>;

export type PortInStep = keyof typeof FROM;

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

/** The buyer's view: everything but the carrier PIN (`pinProvided` says whether one was given). */
const present = (r: PortInRow) => ({
  id: r.id,
  status: r.status,
  numbers: r.numbers,
  losingCarrier: r.losingCarrier,
  carrierAccountNumber: r.carrierAccountNumber,
  pinProvided: r.carrierPin !== null,
  authorizedName: r.authorizedName,
  documentsRef: r.documentsRef,
  desiredDate: r.desiredDate,
  reviewNote: r.reviewNote,
  submittedAt: r.submittedAt.toISOString(),
  reviewedAt: iso(r.reviewedAt),
  completedAt: iso(r.completedAt),
  cancelledAt: iso(r.cancelledAt),
});

/** The operator's view adds the account and the PIN it needs to ask the losing carrier for the numbers. */
const presentForOperator = (r: PortInRow) => ({ ...present(r), accountId: r.accountId, carrierPin: r.carrierPin });

export type PortInView = ReturnType<typeof present>;
export type PortInReview = ReturnType<typeof presentForOperator>;

/**
 * Port-in orders: a buyer asks to bring numbers it holds at another carrier into the exchange; the
 * operator takes the order in review, approves or rejects it, and completes it once the losing
 * carrier has released the numbers; the buyer may cancel until then. Every step commits with its
 * `number.port_in.updated` event (outbox and in-app feed). A number is in one open order at a
 * time, and a number rented here or already ported cannot be ordered (409).
 */
export function createPortIns(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  /** `[numbers] ported_monthly_fee` and `ported_grace_days`: a ported number's terms when it is made. */
  ported: { monthlyFee: string; graceDays: number };
}) {
  const { sql, clock, log } = deps;

  /**
   * A completed order's numbers become DIDs of the buyer, active at once and routable as rented
   * ones (docs/numbers.md "Ported numbers"), each with its history row and `number.activated`.
   */
  async function makeDids(tx: Db, r: PortInRow, at: Date, inboundCarrierId: string | null) {
    const nextRenewalAt = addMonths(at, 1);
    for (const number of r.numbers) {
      const id = newId();
      await dids.insertPorted(tx, {
        id,
        accountId: r.accountId,
        number,
        portInId: r.id,
        inboundCarrierId,
        monthlyFee: deps.ported.monthlyFee,
        graceDays: deps.ported.graceDays,
        at,
        nextRenewalAt,
      });
      await dids.event(tx, { didId: id, accountId: r.accountId, kind: 'ported_in', at, data: { portInId: r.id } });
      await emit(tx, {
        accountId: r.accountId,
        event: 'number.activated',
        data: { didId: id, number, nextRenewalAt: nextRenewalAt.toISOString() },
        at,
      });
    }
  }

  async function step(
    id: string,
    s: PortInStep,
    o: { accountId?: string; reviewer?: string; note?: string | null; inboundCarrierId?: string | null },
  ): Promise<PortInRow> {
    const at = clock.now();
    const row = await sql.begin(async (tx) => {
      const r = await repo.byId(tx, id, { forUpdate: true });
      // The buyer's own order only; the operator acts on any.
      if (!r || (o.accountId !== undefined && r.accountId !== o.accountId)) throw notFound('Port-in order');
      if (!FROM[s].includes(r.status)) throw conflict(`The port-in order is ${r.status}: it cannot be ${TO[s]}`);
      await repo.transition(tx, id, TO[s], {
        at,
        ...(o.reviewer ? { reviewer: o.reviewer } : {}),
        ...(o.note !== undefined ? { note: o.note } : {}),
      });
      if (s === 'complete') await makeDids(tx, r, at, o.inboundCarrierId ?? null);
      const next = (await repo.byId(tx, id))!;
      await emit(tx, {
        accountId: r.accountId,
        event: 'number.port_in.updated',
        data: {
          portInId: id,
          status: next.status,
          previousStatus: r.status,
          numbers: r.numbers,
          note: next.reviewNote,
        },
        at,
      });
      return next;
    });
    log.info({ portInId: id, status: row.status }, 'port-in order changed');
    return row;
  }

  return {
    async create(accountId: string, input: PortInInput): Promise<PortInView> {
      const numbers = input.numbers.map((n) => n.replace(/^\+/, ''));
      const twice = numbers.findIndex((n, i) => numbers.indexOf(n) !== i);
      if (twice >= 0) throw ruleError(`numbers/${twice}: listed twice`);
      const id = newId();
      const at = clock.now();
      try {
        await sql.begin(async (tx) => {
          const busy = await repo.taken(tx, numbers);
          if (busy.length > 0)
            throw conflict(`Already on the exchange or in an open port-in order: ${busy.sort().join(', ')}`);
          await repo.insert(tx, id, accountId, { ...input, numbers }, at);
          await emit(tx, {
            accountId,
            event: 'number.port_in.updated',
            data: { portInId: id, status: 'submitted', previousStatus: null, numbers, note: null },
            at,
          });
        });
      } catch (err) {
        // Two orders racing for one number: the live-number index lets one in.
        if ((err as { code?: string }).code === '23505')
          throw conflict('A number of the order is already in an open port-in order');
        throw err;
      }
      log.info({ accountId, portInId: id, count: numbers.length }, 'port-in order submitted');
      return present((await repo.byId(sql, id))!);
    },

    async get(accountId: string, id: string): Promise<PortInView> {
      const r = await repo.byId(sql, id);
      if (!r || r.accountId !== accountId) throw notFound('Port-in order');
      return present(r);
    },

    async list(
      accountId: string,
      q: { status?: PortInStatus | undefined; cursor?: string | undefined; limit: number },
    ): Promise<PortInView[]> {
      return (await repo.list(sql, { ...q, accountId })).map(present);
    },

    async cancel(accountId: string, id: string): Promise<PortInView> {
      return present(await step(id, 'cancel', { accountId }));
    },

    /** The operator's list of every account's orders. */
    async listAll(q: { status?: PortInStatus | undefined; cursor?: string | undefined; limit: number }) {
      return (await repo.list(sql, q)).map(presentForOperator);
    },

    /**
     * The operator's steps: `review` (in_review), `approve`, `reject`, `complete` (the numbers become
     * the buyer's DIDs; `inboundCarrierId` names the account whose trunk brings their calls in).
     */
    async decide(
      reviewerId: string,
      id: string,
      s: Exclude<PortInStep, 'cancel'>,
      note?: string | null,
      inboundCarrierId?: string | null,
    ) {
      try {
        return presentForOperator(
          await step(id, s, {
            reviewer: reviewerId,
            ...(note !== undefined ? { note } : {}),
            ...(inboundCarrierId ? { inboundCarrierId } : {}),
          }),
        );
      } catch (err) {
        // The carrier named is no account (foreign key of dids.inbound_carrier_id).
        if ((err as { code?: string }).code === '23503')
          throw validationError([{ path: 'inboundCarrierId', message: 'names no account' }]);
        throw err;
      }
    },

    /** Numbers ported into the exchange and owned by `accountId`. */
    async ported(accountId: string): Promise<string[]> {
      const rows = await sql<{ number: string }[]>`
        select number from did_port_in_numbers where account_id = ${accountId} and state = 'ported' order by number`;
      return rows.map((r) => r.number);
    },
  };
}

export type PortIns = ReturnType<typeof createPortIns>;
