import { LRUCache } from 'lru-cache';

/**
 * Where a map starts: lru-cache allocates its bound's worth of slots up front (four arrays of
 * `max` entries), and a daemon makes about 20 maps bounded at 10,000–50,000, most of which hold a
 * few entries; allocating and collecting those arrays was about 7 % of a short daemon test's CPU.
 */
const INITIAL_CAPACITY = 256;

type Options<K extends NonNullable<unknown>, V extends NonNullable<unknown>> = Omit<
  LRUCache.Options<K, V, unknown>,
  'max' | 'maxSize' | 'sizeCalculation' | 'dispose' | 'disposeAfter' | 'fetchMethod' | 'memoMethod'
>;

/**
 * A least-recently-used map (lru-cache, with its `ttl` options) bounded at `maxEntries`, which
 * starts small and grows (×4) when full of live entries; past the bound the least recently used
 * entry goes. Growing keeps each entry's value, remaining time and order of use.
 */
export function createGrowingLru<K extends NonNullable<unknown>, V extends NonNullable<unknown>>(
  maxEntries: number,
  options: Options<K, V> = {},
) {
  let capacity = Math.min(maxEntries, INITIAL_CAPACITY);
  let lru = new LRUCache<K, V>({ ...options, max: capacity });

  function grow(full: LRUCache<K, V>): LRUCache<K, V> {
    capacity = Math.min(maxEntries, capacity * 4);
    const bigger = new LRUCache<K, V>({ ...options, max: capacity });
    // Least recently used first, so the order of use (what a full map evicts) carries over.
    for (const key of full.rkeys()) {
      const value = full.peek(key);
      const left = full.getRemainingTTL(key);
      if (value === undefined || left <= 0) continue;
      bigger.set(key, value, Number.isFinite(left) ? { ttl: left } : {});
    }
    return bigger;
  }

  return {
    get(key: K): V | undefined {
      return lru.get(key);
    },
    /** `ttl` (ms) overrides the map's for this entry. */
    set(key: K, value: V, ttl?: number): void {
      if (lru.size >= capacity && capacity < maxEntries && !lru.has(key)) {
        // Expired entries still take slots until looked up: drop them before deciding to grow.
        if (options.ttl) lru.purgeStale();
        if (lru.size >= capacity) lru = grow(lru);
      }
      lru.set(key, value, ttl === undefined ? undefined : { ttl });
    },
    delete(key: K): void {
      lru.delete(key);
    },
    clear(): void {
      lru.clear();
    },
  };
}

export type GrowingLru<K extends NonNullable<unknown>, V extends NonNullable<unknown>> = ReturnType<
  typeof createGrowingLru<K, V>
>;
