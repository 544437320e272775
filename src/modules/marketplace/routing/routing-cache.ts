import type { Logger } from 'pino';
import type { Sql } from '../../../db/connection.js';
import { createCacheListener } from '../../../db/cache-listener.js';
import { usableRoutes } from '../purchases/repo.js';
import type { UsableRoute } from '../purchases/repo.js';
import { endpointsFor, smsDeliveryFor, type EndpointRow } from '../listings/repo.js';

/** Sent by triggers on routes, purchases and routing_orders (migration 032): `a:<accountId>` or `r:<routeId>`. */
export const ROUTING_CHANNEL = 'svc_routing';
export const ROUTING_CACHE_TTL_MS = 60_000;

/** What the call path's limits need of a route (seller, capacity, calls per second). */
export interface RouteTerms {
  id: string;
  sellerId: string;
  capacity: number | null;
  maxCps: number | null;
  mediaMode: 'direct' | 'proxy';
}

/**
 * What routing reads per call or message, kept in process: each buyer's usable routes (purchases,
 * routing order, own routes), each route's SMS delivery details, SIP endpoints and terms. Correctness comes from
 * invalidation: triggers notify every daemon on commit, and the services that write also call
 * `accountChanged`/`routeChanged` right after their commit so this daemon's next request never waits
 * for its own notification. The TTL is only a safety net.
 *
 * A load that was in flight when an invalidation came is dropped from the map, so a request arriving
 * after the invalidation never joins a read that may have started before the commit.
 */
export interface RoutingCache {
  usableRoutes(accountId: string, type: 'voice' | 'sms'): Promise<UsableRoute[]>;
  smsDeliveryFor(routeIds: readonly string[]): Promise<Map<string, Record<string, unknown>>>;
  /** The routes' SIP endpoints by route, priority, id (credentials included: internal use only); a new array per call. */
  endpointsFor(routeIds: readonly string[]): Promise<EndpointRow[]>;
  routeTerms(routeIds: readonly string[]): Promise<RouteTerms[]>;
  accountChanged(accountId: string): void;
  /** A route row changed: its delivery, and whose usable set it is in (status, type, seller), may differ. */
  routeChanged(routeId: string): void;
  clear(): void;
  start(): Promise<void>;
  stop(): Promise<void>;
}

interface Entry<T> {
  at: number;
  value: Promise<T>;
}

export function createRoutingCache(deps: {
  sql: Sql;
  log: Logger;
  ttlMs?: number;
  /** Called after a notification was applied (tests await it instead of sleeping). */
  onNotify?: (payload: string) => void;
}): RoutingCache {
  const { sql, log } = deps;
  const ttl = deps.ttlMs ?? ROUTING_CACHE_TTL_MS;
  const usable = new Map<string, Entry<UsableRoute[]>>();
  const delivery = new Map<string, Entry<Record<string, unknown> | null>>();
  const endpoints = new Map<string, Entry<EndpointRow[]>>();
  const terms = new Map<string, Entry<RouteTerms | null>>();

  const cached = <T>(map: Map<string, Entry<T>>, key: string, load: () => Promise<T>): Promise<T> => {
    if (!listener.listening) return load();
    const now = Date.now();
    const hit = map.get(key);
    if (hit !== undefined && now - hit.at < ttl) return hit.value;
    const entry: Entry<T> = { at: now, value: load() };
    map.set(key, entry);
    entry.value.catch(() => {
      if (map.get(key) === entry) map.delete(key);
    });
    return entry.value;
  };

  /** Per-route entries: one read for every route not held, each missing route's entry sharing it. */
  const perRoute = async <T>(
    map: Map<string, Entry<T>>,
    routeIds: readonly string[],
    loadMany: (ids: readonly string[]) => Promise<Map<string, T>>,
    none: T,
  ): Promise<T[]> => {
    if (!listener.listening) {
      const m = await loadMany(routeIds);
      return routeIds.map((id) => m.get(id) ?? none);
    }
    const now = Date.now();
    const missing = routeIds.filter((id) => {
      const hit = map.get(id);
      return hit === undefined || now - hit.at >= ttl;
    });
    if (missing.length > 0) {
      const read = loadMany(missing);
      for (const id of missing) {
        const entry: Entry<T> = { at: now, value: read.then((m) => m.get(id) ?? none) };
        map.set(id, entry);
        entry.value.catch(() => {
          if (map.get(id) === entry) map.delete(id);
        });
      }
    }
    return Promise.all(routeIds.map((id) => map.get(id)?.value ?? loadMany([id]).then((m) => m.get(id) ?? none)));
  };
  const loadEndpoints = async (ids: readonly string[]) => {
    const m = new Map<string, EndpointRow[]>();
    for (const e of await endpointsFor(sql, ids)) {
      const list = m.get(e.routeId);
      if (list) list.push(e);
      else m.set(e.routeId, [e]);
    }
    return m;
  };
  const loadTerms = async (ids: readonly string[]) => {
    const rows = await sql<
      RouteTerms[]
    >`select id, seller_id, capacity, max_cps, media_mode from routes where id = any(${sql.array(ids as string[])}::uuid[])`;
    return new Map(rows.map((r) => [r.id, r]));
  };

  const accountChanged = (accountId: string) => {
    usable.delete(`${accountId}:voice`);
    usable.delete(`${accountId}:sms`);
  };
  const routeChanged = (routeId: string) => {
    delivery.delete(routeId);
    endpoints.delete(routeId);
    terms.delete(routeId);
    // A route's status or type moves it in or out of every buyer's set; routes change rarely.
    usable.clear();
  };
  const clear = () => {
    usable.clear();
    delivery.clear();
    endpoints.clear();
    terms.clear();
  };

  const onNotify = (payload: string) => {
    const id = payload.slice(2);
    if (payload.startsWith('a:')) accountChanged(id);
    else if (payload.startsWith('r:')) routeChanged(id);
    else clear();
    deps.onNotify?.(payload);
  };
  const listener = createCacheListener(sql, ROUTING_CHANNEL, onNotify, () => {
    clear();
    log.debug('routing cache reset');
  });

  return {
    usableRoutes: (accountId, type) => cached(usable, `${accountId}:${type}`, () => usableRoutes(sql, accountId, type)),

    async smsDeliveryFor(routeIds) {
      const missing = routeIds.filter((id) => {
        const hit = delivery.get(id);
        return hit === undefined || Date.now() - hit.at >= ttl;
      });
      if (!listener.listening) return smsDeliveryFor(sql, routeIds);
      if (missing.length > 0) {
        // One read for every route not held; each route's entry shares it.
        const read = smsDeliveryFor(sql, missing);
        for (const id of missing) cached(delivery, id, () => read.then((m) => m.get(id) ?? null));
      }
      const out = new Map<string, Record<string, unknown>>();
      for (const id of routeIds) {
        const d = await cached(delivery, id, () => smsDeliveryFor(sql, [id]).then((m) => m.get(id) ?? null));
        if (d !== null) out.set(id, d);
      }
      return out;
    },

    async endpointsFor(routeIds) {
      if (routeIds.length === 0) return [];
      return (await perRoute(endpoints, routeIds, loadEndpoints, [] as EndpointRow[])).flat();
    },

    async routeTerms(routeIds) {
      if (routeIds.length === 0) return [];
      return (await perRoute(terms, routeIds, loadTerms, null)).filter((t): t is RouteTerms => t !== null);
    },

    accountChanged,
    routeChanged,
    clear,

    // Until LISTEN is up, another daemon's change could go unseen: the cache reads through.
    start: () => listener.start(),
    stop: () => listener.stop(),
  };
}
