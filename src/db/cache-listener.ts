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
