import type { Logger } from 'pino';
import type { Sql } from '../../db/connection.js';
import { createCacheListener } from '../../db/cache-listener.js';
import { createGrowingLru } from '../../platform/growing-lru.js';

/** Sent by triggers on accounts, sub_accounts and application_settings (migration 041). */
export const CALL_TERMS_CHANNEL = 'svc_call_terms';
export const CALL_TERMS_TTL_MS = 10_000;

export interface PayerTermsRow {
  status: string;
  parentId: string | null;
  markupPct: string | null;
  maxConcurrentCalls: number | null;
  defaultMarkupPct: string | null;
  /** A sub-account's markups per route (null: none). */
  routeMarkups: { routeId: string; markupPct: string }[] | null;
}

/**
 * A paying account's call terms, read for every trunk call, kept in process. Correctness comes from
 * invalidation: triggers notify every daemon on commit (`a:<account>`, `o:<operator>` for an
 * operator's default markup); the TTL is only a safety net. Until LISTEN is up, and whenever it is
 * re-established (notifications may have been missed), everything is read through or dropped.
 *
 * A load in flight when an invalidation comes is dropped from the map, so a call arriving after
 * the invalidation never joins a read that may have started before the commit.
 */
export function createPayerTermsCache(deps: {
  sql: Sql;
  log: Logger;
  load: (accountId: string) => Promise<PayerTermsRow | null>;
  ttlMs?: number;
  now?: () => number;
  /** Called after a notification was applied (tests await it instead of sleeping). */
  onNotify?: (payload: string) => void;
}) {
  const ttl = deps.ttlMs ?? CALL_TERMS_TTL_MS;
  const now = deps.now ?? Date.now;
  // Bounded against a flood of distinct payers: the least recently used entry goes first.
  const map = createGrowingLru<string, { at: number; value: Promise<PayerTermsRow | null> }>(50_000);

  const changed = (payload: string) => {
    const id = payload.slice(2);
    // `o:` (sub-accounts following an operator's default markup) is rare: everything goes.
    if (payload.startsWith('a:')) map.delete(id);
    else map.clear();
    deps.onNotify?.(payload);
  };
  const listener = createCacheListener(deps.sql, CALL_TERMS_CHANNEL, changed, () => {
    map.clear();
    deps.log.debug('payer terms cache reset');
  });

  return {
    get(accountId: string): Promise<PayerTermsRow | null> {
      if (!listener.listening) return deps.load(accountId);
      const t = now();
      const hit = map.get(accountId);
      if (hit !== undefined && t - hit.at < ttl) return hit.value;
      const entry = { at: t, value: deps.load(accountId) };
      map.set(accountId, entry);
      entry.value.then(
        (v) => {
          // Unknown accounts are not kept: the next call reads again.
          if (v === null && map.get(accountId) === entry) map.delete(accountId);
        },
        () => {
          if (map.get(accountId) === entry) map.delete(accountId);
        },
      );
      return entry.value;
    },
    start: () => listener.start(),
    stop: () => listener.stop(),
  };
}

export type PayerTermsCache = ReturnType<typeof createPayerTermsCache>;
