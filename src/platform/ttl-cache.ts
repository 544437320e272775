import { systemClock, type Clock } from './clock.js';
import { createGrowingLru } from './growing-lru.js';

/**
 * An expiring, bounded map whose time comes from the daemon's clock, so tests that move a manual
 * clock expire entries without waiting. A ttl of 0 or less disables it: nothing is kept. Values
 * may be null (a cached "not found"): lru-cache refuses null and undefined, so each value is
 * boxed. Past `maxEntries` the least recently used entry goes.
 */
export function createTtlCache<K extends NonNullable<unknown>, V>(ttlMs: number, clock: Clock, maxEntries = 50_000) {
  // The system clock's reading without a Date per look-up: the credential caches are read
  // several times by every API request.
  const now = clock === systemClock ? Date.now : () => clock.now().getTime();
  const lru =
    ttlMs > 0
      ? createGrowingLru<K, { value: V }>(maxEntries, {
          ttl: ttlMs,
          // Ask the clock on every look-up: lru-cache's default reuses a reading for 1 ms behind a
          // timer, which a manual clock moved between two calls would not see.
          ttlResolution: 0,
          perf: { now },
        })
      : null;
  return {
    get(key: K): V | undefined {
      return lru?.get(key)?.value;
    },
    /** `ttl` (ms, at most the cache's own) overrides the cache's for this entry. */
    set(key: K, value: V, ttl?: number): void {
      lru?.set(key, { value }, ttl);
    },
    delete(key: K): void {
      lru?.delete(key);
    },
    clear(): void {
      lru?.clear();
    },
  };
}
