import type { Clock } from './clock.js';

/**
 * A small expiring map for the authentication hot path. Bounded: when full it drops the
 * oldest entries (insertion order), which is enough for credentials seen seconds ago.
 */
export function createTtlCache<K, V>(ttlMs: number, clock: Clock, maxEntries = 50_000) {
  const map = new Map<K, { value: V; until: number }>();
  return {
    get(key: K): V | undefined {
      if (ttlMs <= 0) return undefined;
      const e = map.get(key);
      if (!e) return undefined;
      if (e.until <= clock.now().getTime()) {
        map.delete(key);
        return undefined;
      }
      return e.value;
    },
    set(key: K, value: V): void {
      if (ttlMs <= 0) return;
      map.delete(key);
      map.set(key, { value, until: clock.now().getTime() + ttlMs });
      if (map.size > maxEntries) {
        const first = map.keys().next();
        if (!first.done) map.delete(first.value);
      }
    },
    delete(key: K): void {
      map.delete(key);
    },
  };
}
