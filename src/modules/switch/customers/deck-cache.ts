import type { Sql } from '../../../db/connection.js';
import { createNotifiedCache } from '../../../db/cache-listener.js';
import type { Clock } from '../../../platform/clock.js';
import { buildDeck, matchDeck, type DeckRow, type SellDeck, type SellKind, type SellMatch } from './deck.js';

/** Sent by the trigger on switch_sell_rates (migration 278), payload the customer id. */
export const SELL_RATES_CHANNEL = 'svc_sell_rates';

/**
 * Every customer's sell-rate deck, kept in process for the call and SMS paths: read once per
 * customer (an account without a deck caches `null`), dropped when a NOTIFY names the customer.
 * Versions carry their effective time, so a scheduled increase starts applying without a change.
 */
export function createSellRateDecks(deps: { sql: Sql; clock: Clock }) {
  const { sql, clock } = deps;
  const load = async (customerId: string): Promise<SellDeck | null> => {
    const rows = await sql<DeckRow[]>`
      select kind, prefix, rate::text, billing_increment, effective_from from switch_sell_rates
      where customer_id = ${customerId} and cancelled_at is null`;
    return buildDeck(rows, clock.now().getTime());
  };
  const cache = createNotifiedCache(sql, SELL_RATES_CHANNEL, load);
  return {
    /** The sell rate `customerId` pays for `number` now (longest prefix), or null: base plus markup applies. */
    async match(customerId: string, kind: SellKind, number: string): Promise<SellMatch | null> {
      return matchDeck(await cache.get(customerId), kind, number, clock.now().getTime());
    },
    /** This daemon's own change, forgotten before its NOTIFY arrives. */
    changed: (customerId: string) => cache.changed(customerId),
    start: () => cache.start(),
    stop: () => cache.stop(),
  };
}

export type SellRateDecks = ReturnType<typeof createSellRateDecks>;
/** What the call and SMS paths ask of the decks. */
export type SellRateLookup = Pick<SellRateDecks, 'match'>;
