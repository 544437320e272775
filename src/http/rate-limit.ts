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
 * Fixed windows per credential and bucket, in Redis when configured (shared by every daemon)
 * or in process. A Redis outage falls back to in-process windows for ordinary routes;
 * `strict` buckets (route checks) answer 503 instead, as the spec asks.
 */
export function createRateLimiters(redis: Redis | null, opts: { strictBuckets?: string[] } = {}): RateLimiters {
  const limiters = new Map<string, RateLimiterAbstract>();
  const strict = new Set(opts.strictBuckets ?? []);
  const limiterFor = (bucket: string, limit: RateLimit) => {
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
