import type { Clock } from '../platform/clock.js';
import { createTtlCache } from '../platform/ttl-cache.js';
import type { Sql } from './connection.js';

/**
 * The LISTEN side of an in-process cache that NOTIFY keeps correct. Until the listen is up, and
 * after stop, `listening` is false and the cache must read through. Notifications missed while the
 * listening connection was down are unknown, so `reset` runs whenever the listen is (re)established,
 * and again at stop.
 */
export function createCacheListener(sql: Sql, channel: string, onNotify: (payload: string) => void, reset: () => void) {
  let listening = false;
  let unlisten: (() => Promise<void>) | null = null;
  return {
    get listening(): boolean {
      return listening;
    },
    async start(): Promise<void> {
      const sub = await sql.listen(channel, onNotify, reset);
      listening = true;
      unlisten = () => sub.unlisten();
    },
    async stop(): Promise<void> {
      listening = false;
      if (unlisten !== null) await unlisten();
      unlisten = null;
      reset();
    },
  };
}

/**
 * A per-key cache of `load` kept correct by NOTIFY on `channel` (the payload is the key): reads go
 * through until the listen is up; a failed load is not kept.
 */
export function createNotifiedCache<V>(sql: Sql, channel: string, load: (key: string) => Promise<V>) {
  const byKey = new Map<string, Promise<V>>();
  const listener = createCacheListener(
    sql,
    channel,
    (key) => byKey.delete(key),
    () => byKey.clear(),
  );
  return {
    get(key: string): Promise<V> {
      if (!listener.listening) return load(key);
      let hit = byKey.get(key);
      if (hit === undefined) {
        hit = load(key);
        byKey.set(key, hit);
        hit.catch(() => byKey.delete(key));
      }
      return hit;
    },
    /** Forgets one key at once (this daemon's own change, before its NOTIFY arrives). */
    changed: (key: string) => void byKey.delete(key),
    start: () => listener.start(),
    stop: () => listener.stop(),
  };
}

/**
 * Credential look-ups (API keys, accounts) for the authentication path: one load per key at a
 * time (concurrent requests share it, so an expiry never sends a burst of identical queries),
 * kept `listeningTtlMs` while NOTIFY on `channel` tells of every change, else only `ttlMs` (the
 * staleness a daemon accepts without it: `[auth] credential_cache_seconds`). A notification
 * drops the key it names (`forget: 'key'`) or every entry (`'all'`, for caches keyed by
 * something the payload does not name). A ttl of 0 disables the cache. A failed load is not kept.
 */
export function createCredentialCache<V extends NonNullable<unknown> | null>(opts: {
  sql: Sql;
  channel: string;
  clock: Clock;
  ttlMs: number;
  listeningTtlMs: number;
  forget: 'key' | 'all';
  load: (key: string) => Promise<V>;
}) {
  const ttl = opts.ttlMs > 0 ? Math.max(opts.ttlMs, opts.listeningTtlMs) : 0;
  const entries = createTtlCache<string, Promise<V>>(ttl, opts.clock);
  const listener = createCacheListener(
    opts.sql,
    opts.channel,
    (key) => (opts.forget === 'key' ? entries.delete(key) : entries.clear()),
    () => entries.clear(),
  );
  // The value of each load that has resolved, so a hit can be answered without a promise turn.
  const settled = new WeakMap<Promise<V>, { value: V }>();
  const remember = (p: Promise<V>, value: V) => void settled.set(p, { value });
  return {
    get(key: string): Promise<V> {
      if (ttl === 0) return opts.load(key);
      let hit = entries.get(key);
      if (hit === undefined) {
        const loading = opts.load(key);
        hit = loading;
        entries.set(key, hit, listener.listening ? opts.listeningTtlMs : opts.ttlMs);
        hit.then(
          (value) => remember(loading, value),
          () => entries.delete(key),
        );
      }
      return hit;
    },
    /** The cached value when its load has finished; undefined when `get` must be awaited. */
    peek(key: string): { value: V } | undefined {
      const hit = ttl === 0 ? undefined : entries.get(key);
      return hit === undefined ? undefined : settled.get(hit);
    },
    /** This daemon's own change, known before its NOTIFY arrives. */
    set: (key: string, value: V) => {
      const p = Promise.resolve(value);
      remember(p, value);
      entries.set(key, p, opts.ttlMs);
    },
    delete: (key: string) => entries.delete(key),
    start: () => listener.start(),
    stop: () => listener.stop(),
  };
}
