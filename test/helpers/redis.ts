import { Redis } from 'ioredis';

/** The machine's Redis, which tests of daemons sharing counters use (they skip where it is absent). */
export const REDIS_URL = 'redis://127.0.0.1:6379';

/** Whether a Redis answers at REDIS_URL. */
export async function redisAnswers(): Promise<boolean> {
  const r = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  r.on('error', () => {});
  try {
    await r.connect();
    return (await r.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    r.disconnect();
  }
}
