import { createMediaPool, type MediaPool, type MediaPoolOptions } from './pool.js';

/**
 * The daemon's one media pool over the configured RTP port range, shared by calls the platform
 * places (API calls) and trunk calls whose route relays media. Started on first use: a daemon
 * that never needs media starts no worker threads.
 */
export function createSharedMediaPool(options: MediaPoolOptions) {
  let pool: MediaPool | null = null;
  return {
    get(): MediaPool {
      pool ??= createMediaPool(options);
      return pool;
    },
    /** The pool when a call has started it; null before first use (health reads it without starting it). */
    running(): MediaPool | null {
      return pool;
    },
    async close(): Promise<void> {
      const p = pool;
      pool = null;
      await p?.close();
    },
  };
}

export type SharedMediaPool = ReturnType<typeof createSharedMediaPool>;
