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
  /** Events of `key` counted so far in the current one-second window, across daemons (a read: counts nothing). */
  rateNow(key: string): Promise<number>;
}

const NODE_TTL_MS = 90_000;

/**
 * KEYS: the counter's hash, the nodes' heartbeat hash, this node's key set; ARGV: node, limit,
 * heartbeat cutoff (ms), counter key. Sums this node's share and every live node's (as `total`
 * does) and takes a slot only when the sum is under the limit: 1 taken, 0 full.
 */
const ACQUIRE = `
local values = redis.call('HGETALL', KEYS[1])
local sum = 0
for i = 1, #values, 2 do
  local n = values[i]
  local counted = n == ARGV[1]
  if not counted then
    local seen = redis.call('HGET', KEYS[2], n)
    counted = seen ~= false and tonumber(seen) >= tonumber(ARGV[3])
  end
  if counted then sum = sum + tonumber(values[i + 1]) end
end
if sum >= tonumber(ARGV[2]) then return 0 end
redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
redis.call('SADD', KEYS[3], ARGV[4])
return 1
`;

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
      async rateNow(key) {
        const w = windows.get(key);
        return w !== undefined && w.second === Math.floor(now() / 1000) ? w.n : 0;
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
  // A defined command goes as EVALSHA (ioredis loads the script on NOSCRIPT): one admission sends
  // a 40-byte digest, not the script text.
  redis.defineCommand('svcAcquireSlot', { numberOfKeys: 3, lua: ACQUIRE });
  const acquireSlot = (redis as unknown as { svcAcquireSlot(...args: string[]): Promise<unknown> }).svcAcquireSlot.bind(
    redis,
  );
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
    async rateNow(key) {
      // Events refused over the limit are counted by INCR too: the figure is capped at what was let through by the caller.
      return Number((await redis.get(`svc:cps:${key}:${Math.floor(now() / 1000)}`)) ?? 0);
    },
    // Check and take in one step inside Redis. Taking first and giving back when over let
    // concurrent callers all see each other's provisional slots: 50 at once against a limit of 20
    // all counted 50 and all gave up, with no call live.
    async acquire(key, limit) {
      const got = await acquireSlot(
        hash(key),
        nodes,
        `svc:cc:keys:${node}`,
        node,
        String(limit),
        String(now() - NODE_TTL_MS),
        key,
      );
      return Number(got) === 1;
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
