import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { rateLimited, serviceUnavailable } from '../../http/errors.js';

/** Spec "Limits": route checks, 10 a minute and 60 an hour per account. */
export const CHECK_WINDOWS = [
  { name: 'minute', points: 10, seconds: 60 },
  { name: 'hour', points: 60, seconds: 3600 },
] as const;

export interface CheckLimiter {
  /** One check of the account: 429 with Retry-After over a window, 503 when the store cannot be reached. */
  take(accountId: string): Promise<void>;
  usage(accountId: string): Promise<{ window: string; limit: number; used: number; remaining: number }[]>;
}

/**
 * Per-account windows shared by every daemon through Redis. Unlike the ordinary per-credential
 * limits there is no in-process fallback: the spec pauses checks (503) when the limiter is unreachable.
 */
export function createCheckLimiter(redis: Redis | null, prefix = 'svc:routecheck'): CheckLimiter {
  const windows: { name: string; points: number; l: RateLimiterAbstract }[] = CHECK_WINDOWS.map((w) => {
    const base = { keyPrefix: `${prefix}:${w.name}`, points: w.points, duration: w.seconds };
    return {
      name: w.name,
      points: w.points,
      l: redis
        ? new RateLimiterRedis({ ...base, storeClient: redis, rejectIfRedisNotReady: true })
        : new RateLimiterMemory(base),
    };
  });
  return {
    async take(accountId) {
      for (const w of windows) {
        try {
          await w.l.consume(accountId, 1);
        } catch (res) {
          if (res instanceof RateLimiterRes) throw rateLimited(Math.max(1, Math.ceil(res.msBeforeNext / 1000)));
          throw serviceUnavailable('Route checks are paused: the limiter cannot be reached; try again shortly');
        }
      }
    },
    async usage(accountId) {
      const out = [];
      for (const w of windows) {
        let used: number;
        try {
          used = (await w.l.get(accountId))?.consumedPoints ?? 0;
        } catch {
          throw serviceUnavailable('The route-check limiter cannot be reached; try again shortly');
        }
        out.push({
          window: w.name,
          limit: w.points,
          used: Math.min(used, w.points),
          remaining: Math.max(0, w.points - used),
        });
      }
      return out;
    },
  };
}
