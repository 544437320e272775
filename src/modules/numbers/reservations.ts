import type { Logger } from 'pino';
import type { Sql } from '../../db/connection.js';
import { conflict, notFound, ruleError } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import * as catalogRepo from './catalog-repo.js';
import type { Orders } from './orders.js';
import * as holds from './reservation-repo.js';
import type { ReservationRow } from './reservation-repo.js';

const present = (r: ReservationRow) => ({
  id: r.id,
  groupId: r.groupId,
  numberId: r.numberId,
  number: r.number,
  status: r.status,
  didId: r.didId,
  expiresAt: r.expiresAt.toISOString(),
  createdAt: r.createdAt.toISOString(),
});

/**
 * Holds on numbers (as Telnyx number reservations): a chosen number leaves the catalogue for a few
 * minutes so a buyer can decide, then is bought, cancelled, or put back on sale by the sweep.
 */
export function createReservations(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  orders: Orders;
  maxMinutes: number;
  perAccount: number;
}) {
  const { sql, clock, log, orders } = deps;
  return {
    async hold(accountId: string, input: { groupId: string; numberId?: string | undefined; minutes?: number }) {
      const minutes = input.minutes ?? Math.min(15, deps.maxMinutes);
      if (minutes > deps.maxMinutes) throw ruleError(`minutes must be at most ${deps.maxMinutes}`);
      const group = await catalogRepo.group(sql, input.groupId);
      if (!group || group.status !== 'active') throw notFound('Catalogue group');
      if (group.sellerId === accountId) throw ruleError('These numbers are your own listing');
      const at = clock.now();
      const r = await sql.begin(async (tx) => {
        // Serialises one account's holds so the limit is exact under concurrent requests.
        await tx`select pg_advisory_xact_lock(hashtextextended(${`did-holds:${accountId}`}, 0))`;
        if ((await holds.countHeld(tx, accountId, at)) >= deps.perAccount)
          throw ruleError(`At most ${deps.perAccount} numbers can be held at once`);
        return holds.hold(tx, {
          id: newId(),
          accountId,
          groupId: group.groupId,
          numberId: input.numberId ?? null,
          expiresAt: new Date(at.getTime() + minutes * 60_000),
          at,
        });
      });
      if (!r)
        throw conflict(input.numberId ? 'The number is not available' : 'No numbers left in this catalogue group');
      log.info({ reservationId: r.id, groupId: r.groupId }, 'number held');
      return present(r);
    },

    list: async (accountId: string) => (await holds.heldBy(sql, accountId, clock.now())).map(present),

    async cancel(accountId: string, id: string) {
      const closed = await sql.begin((tx) => holds.close(tx, id, 'cancelled', clock.now(), accountId));
      if (!closed) throw notFound('Held reservation');
      return present((await holds.byId(sql, id))!);
    },

    /** Buys the held number as `POST /dids/buy` would (same prices, checks and money). */
    async buy(accountId: string, id: string, input: { skuId: string; subAccountId?: string | undefined }) {
      const r = await holds.byId(sql, id);
      if (!r) throw notFound('Held reservation');
      return orders.buy(accountId, { ...input, groupId: r.groupId }, { reservationId: id });
    },

    /** Puts the numbers of expired holds back on sale; returns how many. */
    async expire(limit = 500): Promise<number> {
      return sql.begin(async (tx) => {
        const at = clock.now();
        const ids = await holds.lockExpired(tx, at, limit);
        for (const id of ids) await holds.close(tx, id, 'expired', at);
        return ids.length;
      });
    },
  };
}

export type Reservations = ReturnType<typeof createReservations>;
