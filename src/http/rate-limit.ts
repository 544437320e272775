import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { rateLimited, serviceUnavailable } from './errors.js';
import { createFixedWindows } from './fixed-windows.js';

export interface RateLimit {
  points: number;
  seconds: number;
}

export interface RateLimiters {
  /** Consumes one point of `bucket` for `key`; throws RATE_LIMITED with Retry-After when over. */
  consume(bucket: string, limit: RateLimit, key: string): Promise<void>;
  /**
   * The same, answered at once when the windows are in process: true when counted (throws
   * RATE_LIMITED when over), false when the windows are in Redis and `consume` must be awaited.
   */
  consumeNow(bucket: string, limit: RateLimit, key: string): boolean;
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
  /** `check` answered at once: true when checked, false when it must be awaited (Redis). */
  checkNow(source: string): boolean;
  /** Counts one failed authentication of `source`. */
  failed(source: string): Promise<void>;
}

function refuseAfter(ms: number): void {
  if (ms > 0) throw rateLimited(Math.max(1, Math.ceil(ms / 1000)));
}

export function createFailedAuthGuard(redis: Redis | null, limit: RateLimit): FailedAuthGuard {
  if (!redis) {
    const windows = createFixedWindows();
    return {
      checkNow(source) {
        refuseAfter(windows.over(source, limit.points));
        return true;
      },
      async check(source) {
        refuseAfter(windows.over(source, limit.points));
      },
      async failed(source) {
        windows.penalty(source, limit.seconds);
      },
    };
  }
  const window = createWindow(redis, { keyPrefix: 'svc:authfail', points: limit.points, seconds: limit.seconds });
  return {
    checkNow: () => false,
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
  if (!redis) return inProcessLimiters();
  const strict = new Set(opts.strictBuckets ?? []);
  const limiterFor = windowsByBucket((bucket, limit) => {
    const base = { keyPrefix: `svc:rl:${bucket}`, points: limit.points, duration: limit.seconds };
    return new RateLimiterRedis({
      ...base,
      storeClient: redis,
      ...(strict.has(bucket) ? {} : { insuranceLimiter: new RateLimiterMemory(base) }),
    });
  });
  return {
    backend: 'redis',
    consumeNow: () => false,
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

/**
 * One window store per bucket and limit, made on first use. Callers pass the same limit object on
 * every request (the default one, a route's own): its store is found without building the id
 * string each time; equal limits passed as different objects still share one.
 */
function windowsByBucket<W>(make: (bucket: string, limit: RateLimit) => W): (bucket: string, limit: RateLimit) => W {
  const byId = new Map<string, W>();
  const byLimit = new WeakMap<RateLimit, Map<string, W>>();
  return (bucket, limit) => {
    let ofLimit = byLimit.get(limit);
    if (ofLimit === undefined) byLimit.set(limit, (ofLimit = new Map()));
    let w = ofLimit.get(bucket);
    if (w === undefined) {
      const id = `${bucket}|${limit.points}|${limit.seconds}`;
      w = byId.get(id);
      if (w === undefined) byId.set(id, (w = make(bucket, limit)));
      ofLimit.set(bucket, w);
    }
    return w;
  };
}

/** A daemon without Redis: every window in process, answered synchronously. */
function inProcessLimiters(): RateLimiters {
  const windowsFor = windowsByBucket(() => createFixedWindows());
  const consumeNow = (bucket: string, limit: RateLimit, key: string) => {
    refuseAfter(windowsFor(bucket, limit).consume(key, limit.points, limit.seconds));
    return true;
  };
  return {
    backend: 'memory',
    consumeNow,
    async consume(bucket, limit, key) {
      consumeNow(bucket, limit, key);
    },
  };
}
