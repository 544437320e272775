import { LRUCache } from 'lru-cache';
import type { Clock } from './clock.js';

/**
 * Where a cache starts: lru-cache allocates its bound's worth of slots up front (four arrays of
 * `max` entries), and a daemon makes about 18 caches bounded at 50,000, most of which hold a few
 * entries; allocating and collecting those arrays was about 7 % of a short daemon test's CPU.
 */
const INITIAL_CAPACITY = 256;

/**
 * An expiring, bounded map (lru-cache) whose time comes from the daemon's clock, so tests that
 * move a manual clock expire entries without waiting. A ttl of 0 or less disables it: nothing is
 * kept. Values may be null (a cached "not found"): lru-cache refuses null and undefined, so each
 * value is boxed. It starts small and grows (×4) up to `maxEntries` when full of live entries;
 * past that bound the least recently used entry goes.
 */
export function createTtlCache<K extends NonNullable<unknown>, V>(ttlMs: number, clock: Clock, maxEntries = 50_000) {
  const make = (max: number) =>
    new LRUCache<K, { value: V }>({
      max,
      ttl: ttlMs,
      // Ask the clock on every look-up: lru-cache's default reuses a reading for 1 ms behind a
      // timer, which a manual clock moved between two calls would not see.
      ttlResolution: 0,
      perf: { now: () => clock.now().getTime() },
    });
  let capacity = Math.min(maxEntries, INITIAL_CAPACITY);
  let lru = ttlMs > 0 ? make(capacity) : null;

  function grow(full: LRUCache<K, { value: V }>): LRUCache<K, { value: V }> {
    capacity = Math.min(maxEntries, capacity * 4);
    const bigger = make(capacity);
    // Least recently used first, so the order of use (what a full cache evicts) carries over, and
    // each entry keeps the time it had left.
    for (const key of full.rkeys()) {
      const entry = full.peek(key);
      const left = full.getRemainingTTL(key);
      if (entry !== undefined && left > 0) bigger.set(key, entry, { ttl: left });
    }
    return bigger;
  }

  return {
    get(key: K): V | undefined {
      return lru?.get(key)?.value;
    },
    /** `ttl` (ms, at most the cache's own) overrides the cache's for this entry. */
    set(key: K, value: V, ttl?: number): void {
      if (!lru) return;
      if (lru.size >= capacity && capacity < maxEntries && !lru.has(key)) {
        // Expired entries still take slots until looked up: drop them before deciding to grow.
        lru.purgeStale();
        if (lru.size >= capacity) lru = grow(lru);
      }
      lru.set(key, { value }, ttl === undefined ? undefined : { ttl });
    },
    delete(key: K): void {
      lru?.delete(key);
    },
    clear(): void {
      lru?.clear();
    },
  };
}
