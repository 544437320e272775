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
