import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import t from 'tap';
import { createCheckLimiter } from '../../../src/modules/route-checks/limiter.js';

/** Route checks: 10 a minute per account shared through Redis, and 503 (no fallback) when Redis is unreachable. */
t.test('10 checks a minute per account, shared by every daemon through Redis', async (t) => {
  const redis = new Redis('redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  t.teardown(() => redis.quit());
  const prefix = `svc:test:routecheck:${randomUUID()}`;
  const a = createCheckLimiter(redis, prefix);
  const b = createCheckLimiter(redis, prefix);
  for (let i = 0; i < 5; i++) await a.take('acct');
  for (let i = 0; i < 5; i++) await b.take('acct');
  await t.rejects(a.take('acct'), { code: 'RATE_LIMITED' }, 'the eleventh, from either daemon');
  await t.resolves(b.take('other'), 'per account');
  const usage = await b.usage('acct');
  t.match(usage, [
    { window: 'minute', limit: 10, used: 10, remaining: 0 },
    { window: 'hour', limit: 60, used: 10, remaining: 50 },
  ]);
});

t.test('an unreachable limiter pauses checks with 503', async (t) => {
  const dead = new Redis('redis://127.0.0.1:1', {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  dead.on('error', () => {});
  const limiter = createCheckLimiter(dead);
  await t.rejects(limiter.take('acct'), { code: 'SERVICE_UNAVAILABLE' });
  dead.disconnect();
});
