import type { Logger } from 'pino';
import type { Sql } from '../../../db/connection.js';
import type { Clock } from '../../../platform/clock.js';
import { createDeckRegistry, createPrefixIndex, createPrefixIndexSliced } from '../../../rating/index.js';
import type { DeckRegistry, PrefixIndex } from '../../../rating/index.js';
import { DECK_CHANNEL, deckMeta, liveRows, nextTransition } from '../listings/repo.js';
import type { DeckMeta } from '../listings/repo.js';

/**
 * Every route's prefix index in memory, kept in step with PostgreSQL: an upload (on any daemon)
 * sends `pg_notify('svc_rate_deck', '<routeId>:<version>')` in its transaction, and each daemon
 * rebuilds that deck when the notification arrives; a deck is swapped whole (see DeckRegistry).
 * Scheduled increases come into force through `refreshDue`, which rebuilds decks whose next
 * transition time has passed.
 */
export interface DeckCache {
  readonly registry: DeckRegistry;
  meta(routeId: string): DeckMeta | undefined;
  /** Routes of a type that are public and active (for public price look-ups). */
  publicRoutes(type: 'voice' | 'sms'): readonly DeckMeta[];
  /** Loads every deck the first time it is called; later calls return at once. */
  ensureLoaded(): Promise<void>;
  reload(routeId: string): Promise<void>;
  /**
   * Re-reads one seller's listing facts (status, visibility, terms) in one query after a change
   * that left every row alone (bulk status and terms): indexes are kept, decks not held yet are built.
   */
  refreshListings(sellerId: string): Promise<void>;
  refreshDue(): Promise<number>;
  /** LISTEN for changes from other daemons, and rebuild due decks on an interval. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

// Smaller decks build in well under a slice; building them in one go keeps start-up loading simple.
const SLICED_BUILD_ROWS = 20_000;

export function createDeckCache(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  refreshIntervalMs?: number;
  /** Work between two turns of the event loop while a large deck is built (`[rate_sheets] slice_ms`). */
  sliceMs?: number;
  /** Called after a deck was rebuilt (tests await it instead of sleeping). */
  onReload?: (routeId: string) => void;
}): DeckCache {
  const { sql, clock, log } = deps;
  const registry = createDeckRegistry();
  const metas = new Map<string, DeckMeta>();
  const versions = new Map<string, bigint>();
  const due = new Map<string, number>();
  let publicCache: Record<'voice' | 'sms', DeckMeta[]> | null = null;
  let loading: Promise<void> | null = null;
  let timer: NodeJS.Timeout | undefined;
  let unlisten: (() => Promise<void>) | null = null;
  // One rebuild at a time per deck; a request arriving meanwhile runs once more afterwards.
  const inFlight = new Map<string, Promise<void>>();

  const build = async (meta: DeckMeta): Promise<PrefixIndex> => {
    const now = clock.now();
    const rows = await liveRows(sql, meta.routeId, now);
    // Rows as read: an empty mccMnc is a country row to the index. A large deck is built a slice
    // at a time so a 500,000-row rebuild (here and on every peer) never stalls the event loop.
    const index =
      rows.length < SLICED_BUILD_ROWS
        ? createPrefixIndex(rows)
        : await createPrefixIndexSliced(rows, { sliceMs: deps.sliceMs ?? 10 });
    const next = await nextTransition(sql, meta.routeId, now);
    if (next === null) due.delete(meta.routeId);
    else due.set(meta.routeId, next.getTime());
    return index;
  };

  const install = (meta: DeckMeta, index: PrefixIndex): void => {
    registry.set(meta.routeId, index);
    metas.set(meta.routeId, meta);
    versions.set(meta.routeId, BigInt(meta.version));
    publicCache = null;
  };

  const reloadOnce = async (routeId: string): Promise<void> => {
    const [meta] = await deckMeta(sql, [routeId]);
    if (meta === undefined) {
      registry.delete(routeId);
      metas.delete(routeId);
      versions.delete(routeId);
      due.delete(routeId);
      publicCache = null;
      return;
    }
    install(meta, await build(meta));
    deps.onReload?.(routeId);
  };

  const reload = (routeId: string): Promise<void> => {
    const running = inFlight.get(routeId);
    const next = (running ?? Promise.resolve()).then(() => reloadOnce(routeId));
    const tracked = next.finally(() => {
      if (inFlight.get(routeId) === tracked) inFlight.delete(routeId);
    });
    inFlight.set(routeId, tracked);
    return tracked;
  };

  const loadAll = async (): Promise<void> => {
    const all = await deckMeta(sql, null);
    for (const meta of all) install(meta, await build(meta));
    log.info({ decks: all.length }, 'rate decks loaded');
  };

  const refreshListings = async (sellerId: string): Promise<void> => {
    const fresh = await deckMeta(sql, null, sellerId);
    const seen = new Set<string>();
    for (const meta of fresh) {
      seen.add(meta.routeId);
      const have = versions.get(meta.routeId);
      if (have !== undefined && have > BigInt(meta.version)) continue;
      if (!registry.has(meta.routeId)) {
        await reload(meta.routeId);
        continue;
      }
      metas.set(meta.routeId, meta);
      versions.set(meta.routeId, BigInt(meta.version));
    }
    for (const [routeId, meta] of metas) {
      if (meta.sellerId !== sellerId || seen.has(routeId)) continue;
      registry.delete(routeId);
      metas.delete(routeId);
      versions.delete(routeId);
      due.delete(routeId);
    }
    publicCache = null;
  };

  const onNotify = (payload: string): void => {
    if (payload.startsWith('m:')) {
      const sellerId = payload.slice(2);
      refreshListings(sellerId).catch((err: unknown) => log.error({ err, sellerId }, 'listing refresh failed'));
      return;
    }
    const [routeId, version] = payload.split(':');
    if (routeId === undefined || version === undefined || !/^\d+$/.test(version)) return;
    const have = versions.get(routeId);
    if (have !== undefined && have >= BigInt(version)) return;
    reload(routeId).catch((err: unknown) => log.error({ err, routeId }, 'rate deck reload failed'));
  };

  return {
    registry,
    meta: (routeId) => metas.get(routeId),
    publicRoutes(type) {
      if (publicCache === null) {
        publicCache = { voice: [], sms: [] };
        for (const m of metas.values())
          if (m.visibility === 'public' && m.status === 'active') publicCache[m.type].push(m);
      }
      return publicCache[type];
    },
    ensureLoaded() {
      loading ??= loadAll().catch((err: unknown) => {
        loading = null;
        throw err;
      });
      return loading;
    },
    reload,
    refreshListings,
    async refreshDue() {
      const now = clock.now().getTime();
      const ids = [...due].filter(([, t]) => t <= now).map(([id]) => id);
      for (const id of ids) await reload(id);
      return ids.length;
    },
    async start() {
      const sub = await sql.listen(DECK_CHANNEL, onNotify);
      unlisten = () => sub.unlisten();
      await this.ensureLoaded();
      timer = setInterval(() => {
        this.refreshDue().catch((err: unknown) => log.error({ err }, 'scheduled rate change refresh failed'));
      }, deps.refreshIntervalMs ?? 5000);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      if (unlisten !== null) await unlisten();
      unlisten = null;
      await Promise.allSettled([...inFlight.values()]);
    },
  };
}
