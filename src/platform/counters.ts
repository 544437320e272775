import type { Redis } from 'ioredis';

/**
 * Concurrency counters shared by the daemons (live calls per account, sub-account, route).
 * In Redis each daemon keeps its own field in one hash per counter, so a daemon can rewrite its
 * share from its live dialogs (`reconcile`) and a dead daemon's share ages out; alone, the counts
 * live in process.
 */
export interface Counters {
  /** Takes one slot of `key` when fewer than `limit` are taken; false when full. */
  acquire(key: string, limit: number): Promise<boolean>;
  release(key: string): Promise<void>;
  /** Rewrites this daemon's share of every counter from what it really has live. */
  reconcile(live: ReadonlyMap<string, number>): Promise<void>;
  current(key: string): Promise<number>;
  /** Counts one event of `key` in the current one-second window; false (not counted) when `perSecond` are already in it. */
  rate(key: string, perSecond: number): Promise<boolean>;
}

const NODE_TTL_MS = 90_000;

export function createCounters(redis: Redis | null, node: string, now: () => number = Date.now): Counters {
  if (!redis) {
    const counts = new Map<string, number>();
    const windows = new Map<string, { second: number; n: number }>();
    return {
      async rate(key, perSecond) {
        const second = Math.floor(now() / 1000);
        const w = windows.get(key);
        if (!w || w.second !== second) {
          // Old windows are dropped as keys come back; bound the map for keys that never do.
          if (windows.size > 10_000) windows.clear();
          windows.set(key, { second, n: 1 });
          return perSecond >= 1;
        }
        if (w.n >= perSecond) return false;
        w.n += 1;
        return true;
      },
      async acquire(key, limit) {
        const n = counts.get(key) ?? 0;
        if (n >= limit) return false;
        counts.set(key, n + 1);
        return true;
      },
      async release(key) {
        const n = (counts.get(key) ?? 0) - 1;
        if (n > 0) counts.set(key, n);
        else counts.delete(key);
      },
      async reconcile(live) {
        counts.clear();
        for (const [k, v] of live) if (v > 0) counts.set(k, v);
      },
      async current(key) {
        return counts.get(key) ?? 0;
      },
    };
  }
  const hash = (key: string) => `svc:cc:${key}`;
  const nodes = 'svc:cc:nodes';
  const total = async (key: string) => {
    const [values, alive] = await Promise.all([redis.hgetall(hash(key)), redis.hgetall(nodes)]);
    const cutoff = now() - NODE_TTL_MS;
    let sum = 0;
    for (const [n, v] of Object.entries(values)) {
      if (n === node || Number(alive[n] ?? 0) >= cutoff) sum += Number(v);
    }
    return sum;
  };
  return {
    async rate(key, perSecond) {
      const second = Math.floor(now() / 1000);
      const k = `svc:cps:${key}:${second}`;
      const res = await redis.multi().incr(k).pexpire(k, 2000).exec();
      const n = Number(res?.[0]?.[1] ?? 0);
      return n <= perSecond;
    },
    async acquire(key, limit) {
      await redis.multi().hincrby(hash(key), node, 1).sadd(`svc:cc:keys:${node}`, key).exec();
      if ((await total(key)) > limit) {
        await redis.hincrby(hash(key), node, -1);
        return false;
      }
      return true;
    },
    async release(key) {
      await redis.hincrby(hash(key), node, -1);
    },
    async reconcile(live) {
      await redis.hset(nodes, node, String(now()));
      const keys = await redis.smembers(`svc:cc:keys:${node}`);
      const multi = redis.multi();
      for (const k of keys) if (!live.has(k)) multi.hdel(hash(k), node);
      for (const [k, v] of live) {
        multi.hset(hash(k), node, String(v));
        multi.sadd(`svc:cc:keys:${node}`, k);
      }
      for (const k of keys) if (!live.has(k)) multi.srem(`svc:cc:keys:${node}`, k);
      await multi.exec();
    },
    current: total,
  };
}
