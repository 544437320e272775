import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import type { Sql } from '../../../db/connection.js';
import { createNotifiedCache } from '../../../db/cache-listener.js';
import type { Clock } from '../../../platform/clock.js';

export const PRIVATE_RATES_CHANNEL = 'svc_private_rates';

export interface PrivateRate {
  prefix: string;
  rate: Decimal;
  offerId: string;
  validFrom: Date;
  validUntil: Date;
}

/** One buyer's private rates: by route, then by prefix. */
export type BuyerPrivateRates = ReadonlyMap<string, ReadonlyMap<string, PrivateRate>>;

const NONE: BuyerPrivateRates = new Map();

/** The private rate of the longest prefix of `digits` in force at `now` (`rates`: one route's). */
export function lookupPrivateRate(
  rates: ReadonlyMap<string, PrivateRate> | undefined,
  digits: string,
  now: Date,
): PrivateRate | undefined {
  if (rates === undefined) return undefined;
  const t = now.getTime();
  for (let n = Math.min(digits.length, 15); n >= 1; n--) {
    const r = rates.get(digits.slice(0, n));
    if (r !== undefined && r.validFrom.getTime() <= t && r.validUntil.getTime() > t) return r;
  }
  return undefined;
}

/**
 * Each buyer's private rates from accepted offers, kept in process for the rating path (a buyer
 * without any costs one map look-up). Triggers on `private_rates` notify every daemon on commit
 * (migration 231); until LISTEN is up the cache reads through.
 */
export function createPrivateRateCache(deps: { sql: Sql; clock: Clock; log: Logger }) {
  const { sql, clock } = deps;

  const load = async (accountId: string): Promise<BuyerPrivateRates> => {
    const rows = await sql<
      { routeId: string; prefix: string; rate: string; offerId: string; validFrom: Date; validUntil: Date }[]
    >`
      select route_id, prefix, rate::numeric(20,6)::text as rate, offer_id, valid_from, valid_until
      from private_rates where account_id = ${accountId} and valid_until > ${clock.now()}`;
    if (rows.length === 0) return NONE;
    const out = new Map<string, Map<string, PrivateRate>>();
    for (const r of rows) {
      let m = out.get(r.routeId);
      if (m === undefined) out.set(r.routeId, (m = new Map()));
      m.set(r.prefix, {
        prefix: r.prefix,
        rate: new Decimal(r.rate),
        offerId: r.offerId,
        validFrom: r.validFrom,
        validUntil: r.validUntil,
      });
    }
    return out;
  };
  const cache = createNotifiedCache(sql, PRIVATE_RATES_CHANNEL, load);

  return {
    forAccount: (accountId: string): Promise<BuyerPrivateRates> => cache.get(accountId),
    lookup: lookupPrivateRate,
    changed: cache.changed,
    start: () => cache.start(),
    stop: () => cache.stop(),
  };
}

export type PrivateRateCache = ReturnType<typeof createPrivateRateCache>;
