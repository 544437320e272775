import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { rateLimited, serviceUnavailable } from './errors.js';

export interface RateLimit {
  points: number;
  seconds: number;
}

export interface RateLimiters {
  /** Consumes one point of `bucket` for `key`; throws RATE_LIMITED with Retry-After when over. */
  consume(bucket: string, limit: RateLimit, key: string): Promise<void>;
  backend: 'redis' | 'memory';
}

/**
 * One window store, in Redis when configured (shared by every daemon) with an in-process
 * insurance during a Redis outage, else in process.
 */
export function createWindow(
  redis: Redis | null,
  o: { keyPrefix: string; points: number; seconds: number },
): RateLimiterAbstract {
  const base = { keyPrefix: o.keyPrefix, points: o.points, duration: o.seconds };
  return redis
    ? new RateLimiterRedis({ ...base, storeClient: redis, insuranceLimiter: new RateLimiterMemory(base) })
    : new RateLimiterMemory(base);
}

/** RATE_LIMITED for a window's refusal; anything else (a store failure) is passed on. */
export function refusal(res: unknown): never {
  if (res instanceof RateLimiterRes) throw rateLimited(Math.max(1, Math.ceil(res.msBeforeNext / 1000)));
  throw res;
}

/**
 * Failed authentications per source address (invalid session tokens and API keys), shared by
 * every daemon through Redis. An address over the limit is refused before its credential is
 * looked at, so guessing keys costs neither a database look-up nor a verdict.
 */
export interface FailedAuthGuard {
  /** RATE_LIMITED when `source` has failed too often in the window; counts nothing. */
  check(source: string): Promise<void>;
  /** Counts one failed authentication of `source`. */
  failed(source: string): Promise<void>;
}

export function createFailedAuthGuard(redis: Redis | null, limit: RateLimit): FailedAuthGuard {
  const window = createWindow(redis, { keyPrefix: 'svc:authfail', points: limit.points, seconds: limit.seconds });
  return {
    async check(source) {
      const res = await window.get(source);
      if (res && res.consumedPoints >= limit.points && res.msBeforeNext > 0) refusal(res);
    },
    async failed(source) {
      await window.penalty(source, 1);
    },
  };
}

/**
 * Fixed windows per credential and bucket, in Redis when configured (shared by every daemon)
 * or in process. A Redis outage falls back to in-process windows for ordinary routes;
 * `strict` buckets (route checks) answer 503 instead, as the spec asks.
 */
export function createRateLimiters(redis: Redis | null, opts: { strictBuckets?: string[] } = {}): RateLimiters {
  const limiters = new Map<string, RateLimiterAbstract>();
  // Callers pass the same limit object on every request (the default one, a route's own): its
  // window is found without building the id string each time.
  const byLimit = new WeakMap<RateLimit, Map<string, RateLimiterAbstract>>();
  const strict = new Set(opts.strictBuckets ?? []);
  const limiterFor = (bucket: string, limit: RateLimit) => {
    let ofLimit = byLimit.get(limit);
    if (ofLimit === undefined) byLimit.set(limit, (ofLimit = new Map()));
    let l = ofLimit.get(bucket);
    if (l === undefined) {
      l = limiterById(bucket, limit);
      ofLimit.set(bucket, l);
    }
    return l;
  };
  const limiterById = (bucket: string, limit: RateLimit) => {
    const id = `${bucket}|${limit.points}|${limit.seconds}`;
    let l = limiters.get(id);
    if (!l) {
      const base = { keyPrefix: `svc:rl:${bucket}`, points: limit.points, duration: limit.seconds };
      l = redis
        ? new RateLimiterRedis({
            ...base,
            storeClient: redis,
            ...(strict.has(bucket) ? {} : { insuranceLimiter: new RateLimiterMemory(base) }),
          })
        : new RateLimiterMemory(base);
      limiters.set(id, l);
    }
    return l;
  };
  return {
    backend: redis ? 'redis' : 'memory',
    async consume(bucket, limit, key) {
      try {
        await limiterFor(bucket, limit).consume(key, 1);
      } catch (res) {
        if (res instanceof RateLimiterRes) {
          throw rateLimited(Math.max(1, Math.ceil(res.msBeforeNext / 1000)));
        }
        throw serviceUnavailable('Rate limiter unavailable; try again shortly');
      }
    },
  };
}
