import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import type { Sql } from '../../../db/connection.js';
import { createCacheListener } from '../../../db/cache-listener.js';
import { BLEND_CHANNEL, loadBlends, type BlendRow, type BlendStrategy } from './repo.js';

/** A blend as routing uses it: the rule, the margin and the members in position order. */
export interface Blend {
  id: string;
  ownerId: string;
  type: 'voice' | 'sms';
  name: string;
  strategy: BlendStrategy;
  margin: Decimal;
  members: readonly { routeId: string; position: number; percent: number }[];
}

const toBlend = (r: BlendRow): Blend => ({
  id: r.id,
  ownerId: r.ownerId,
  type: r.type,
  name: r.name,
  strategy: r.strategy,
  margin: new Decimal(r.margin),
  members: [...r.members]
    .sort((a, b) => a.position - b.position)
    .map((m) => ({ routeId: m.memberId, position: m.position, percent: m.percent })),
});

/**
 * Every blend in memory, so the call and SMS paths tell a blend from a route without a read. A write
 * on any daemon notifies `svc_route_blends` (migration 230) and each daemon reloads that blend; the
 * writing service also calls `changed` after its commit. Until LISTEN is up the cache reads through.
 */
export interface BlendCache {
  /** The blends among `routeIds` (none for plain routes). */
  blendsAmong(routeIds: readonly string[]): Promise<Map<string, Blend>>;
  isBlend(routeId: string): Promise<boolean>;
  changed(blendId: string): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function createBlendCache(deps: { sql: Sql; log: Logger }): BlendCache {
  const { sql, log } = deps;
  const blends = new Map<string, Blend>();
  let loaded: Promise<void> | null = null;

  const reloadOne = async (id: string): Promise<void> => {
    const [row] = await loadBlends(sql, [id]);
    if (row === undefined) blends.delete(id);
    else blends.set(id, toBlend(row));
  };
  const loadAll = async (): Promise<void> => {
    const rows = await loadBlends(sql, null);
    blends.clear();
    for (const r of rows) blends.set(r.id, toBlend(r));
  };
  const listener = createCacheListener(
    sql,
    BLEND_CHANNEL,
    (id) => {
      reloadOne(id).catch((err: unknown) => log.error({ err, blendId: id }, 'blend reload failed'));
    },
    () => {
      loaded = null;
    },
  );
  const ensureLoaded = (): Promise<void> => {
    loaded ??= loadAll().catch((err: unknown) => {
      loaded = null;
      throw err;
    });
    return loaded;
  };

  return {
    async blendsAmong(routeIds) {
      const out = new Map<string, Blend>();
      if (routeIds.length === 0) return out;
      if (!listener.listening) {
        for (const r of await loadBlends(sql, routeIds)) out.set(r.id, toBlend(r));
        return out;
      }
      await ensureLoaded();
      for (const id of routeIds) {
        const b = blends.get(id);
        if (b !== undefined) out.set(id, b);
      }
      return out;
    },
    async isBlend(routeId) {
      return (await this.blendsAmong([routeId])).has(routeId);
    },
    async changed(blendId) {
      if (listener.listening) await reloadOne(blendId);
    },
    async start() {
      await listener.start();
      await ensureLoaded();
    },
    stop: () => listener.stop(),
  };
}
