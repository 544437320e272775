import type { Redis } from 'ioredis';
import type { Config } from '../../config/schema.js';
import { createWindow, refusal } from '../../http/rate-limit.js';
import { sha256Hex } from '../../platform/ids.js';

/**
 * Password guessing per e-mail, whichever addresses the guesses come from (the route's own limit
 * counts per address): at most `login_attempts_per_minute` attempts a minute, and after
 * `login_max_failures_per_email` failures in the window a lock that doubles with each further
 * failure, up to `login_lockout_max_seconds`. Shared by every daemon through Redis when configured.
 * A locked e-mail is refused before its password is hashed, so guessing also costs the daemon nothing.
 */
export interface LoginGuard {
  /** RATE_LIMITED (with Retry-After) when the e-mail is locked or over its attempts this minute. */
  before(email: string): Promise<void>;
  failed(email: string): Promise<void>;
  succeeded(email: string): Promise<void>;
}

export function createLoginGuard(redis: Redis | null, auth: Readonly<Config['auth']>): LoginGuard {
  const maxFailures = auth.login_max_failures_per_email;
  const attempts = createWindow(redis, {
    keyPrefix: 'svc:login:attempts',
    points: auth.login_attempts_per_minute,
    seconds: 60,
  });
  const failures = createWindow(redis, {
    keyPrefix: 'svc:login:failures',
    points: maxFailures,
    seconds: auth.login_failure_window_minutes * 60,
  });
  const locks = createWindow(redis, {
    keyPrefix: 'svc:login:lock',
    points: 1,
    seconds: auth.login_lockout_max_seconds,
  });
  // E-mail addresses never appear in Redis keys in clear.
  const keyOf = (email: string) => sha256Hex(email.trim().toLowerCase());
  return {
    async before(email) {
      const key = keyOf(email);
      const lock = await locks.get(key);
      if (lock && lock.consumedPoints > 1 && lock.msBeforeNext > 0) refusal(lock);
      await attempts.consume(key, 1).catch(refusal);
    },
    async failed(email) {
      const key = keyOf(email);
      const res = await failures.penalty(key, 1);
      const over = res.consumedPoints - maxFailures;
      if (over >= 0) await locks.block(key, Math.min(auth.login_lockout_max_seconds, 2 ** Math.min(over, 30)));
    },
    async succeeded(email) {
      const key = keyOf(email);
      await Promise.all([failures.delete(key), locks.delete(key)]);
    },
  };
}
