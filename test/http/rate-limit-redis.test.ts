import { Redis } from 'ioredis';
import t from 'tap';
import { createRateLimiters } from '../../src/http/rate-limit.js';
import { AppError } from '../../src/http/errors.js';
import { bearer, buildTestApp } from '../helpers/app.js';

t.test('rate limits shared through Redis', async (t) => {
  const redis = new Redis('redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  t.teardown(() => redis.quit());
  const h = await buildTestApp(t, { redis, overrides: { limits: { default_per_second: 2 } } });
  const u = await h.signUp();
  const statuses = [];
  for (let i = 0; i < 3; i++) {
    statuses.push(
      (await h.app.inject({ method: 'GET', url: '/api/v1/account', headers: bearer(u.session) })).statusCode,
    );
  }
  t.same(statuses, [200, 200, 429]);
  // A second limiter instance on the same Redis sees the same window (as a second daemon would).
  const second = createRateLimiters(redis);
  const sessionId = (await h.sql<{ id: string }[]>`select id from sessions where account_id = ${u.accountId}`)[0]!.id;
  await t.rejects(second.consume('default', { points: 2, seconds: 1 }, sessionId), AppError);
});

t.test('strict buckets answer 503 when Redis is unreachable; others fall back to memory', async (t) => {
  const dead = new Redis('redis://127.0.0.1:1', {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  dead.on('error', () => {});
  const limiters = createRateLimiters(dead, { strictBuckets: ['checks'] });
  await t.rejects(limiters.consume('checks', { points: 10, seconds: 60 }, 'k'), { code: 'SERVICE_UNAVAILABLE' });
  await t.resolves(limiters.consume('default', { points: 10, seconds: 1 }, 'k'));
  dead.disconnect();
});
