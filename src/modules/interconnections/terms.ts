import { Decimal } from 'decimal.js';
import type { Sql } from '../../db/connection.js';
import { createNotifiedCache } from '../../db/cache-listener.js';
import type { Clock } from '../../platform/clock.js';
import type { PeeringSource, PeeringTerm } from '../marketplace/index.js';

export const INTERCONNECTIONS_CHANNEL = 'svc_interconnections';

type Terms = ReadonlyMap<string, PeeringTerm>;
const NONE: Terms = new Map();

/**
 * Each account's interconnection terms in force, by the other side's account, kept in process for
 * the rating path (an account without any costs one map look-up). The table's trigger notifies
 * every daemon on commit (migration 246); until LISTEN is up the cache reads through. Built before
 * the marketplace, which prices with it, from this module's own table only.
 */
export function createPeeringTerms(deps: { sql: Sql; clock: Clock }): PeeringSource & {
  changed(accountId: string): void;
  start(): Promise<void>;
  stop(): Promise<void>;
} {
  const { sql, clock } = deps;

  const load = async (accountId: string): Promise<Terms> => {
    const rows = await sql<
      { id: string; otherId: string; discountPct: string; services: string[]; validUntil: Date }[]
    >`
      select id,
             case when requester_id = ${accountId} then peer_id else requester_id end as other_id,
             (case when requester_id = ${accountId} then requester_discount_pct else peer_discount_pct end)::text
               as discount_pct,
             services, valid_until
      from interconnections
      where (requester_id = ${accountId} or peer_id = ${accountId})
        and status = 'active' and valid_until > ${clock.now()}`;
    if (rows.length === 0) return NONE;
    return new Map(
      rows.map((r) => [
        r.otherId,
        {
          interconnectionId: r.id,
          discountPct: new Decimal(r.discountPct),
          services: new Set(r.services as ('voice' | 'sms')[]),
          validUntil: r.validUntil,
        },
      ]),
    );
  };
  const cache = createNotifiedCache(sql, INTERCONNECTIONS_CHANNEL, load);
  return {
    forBuyer: (accountId) => cache.get(accountId),
    changed: cache.changed,
    start: () => cache.start(),
    stop: () => cache.stop(),
  };
}
