import t from 'tap';
import { createCounters } from '../../src/platform/counters.js';

t.test('in process: slots up to the limit, release, reconcile from live calls', async (t) => {
  const c = createCounters(null, 'node-a');
  t.equal(await c.acquire('acct:1', 2), true);
  t.equal(await c.acquire('acct:1', 2), true);
  t.equal(await c.acquire('acct:1', 2), false, 'third slot refused');
  t.equal(await c.current('acct:1'), 2, 'a refusal takes nothing');
  await c.release('acct:1');
  t.equal(await c.current('acct:1'), 1);
  t.equal(await c.acquire('acct:1', 2), true);
  // A desync (a slot leaked by a lost release) is rewritten from what is really live.
  await c.reconcile(
    new Map([
      ['acct:1', 1],
      ['route:9', 0],
    ]),
  );
  t.equal(await c.current('acct:1'), 1);
  t.equal(await c.current('route:9'), 0);
  await c.release('acct:1');
  await c.release('acct:1');
  t.equal(await c.current('acct:1'), 0, 'never below zero');
});

t.test('in process: calls per second in one-second windows', async (t) => {
  let now = 1_000_000;
  const c = createCounters(null, 'node-a', () => now);
  t.equal(await c.rate('cps:r', 2), true);
  t.equal(await c.rate('cps:r', 2), true);
  t.equal(await c.rate('cps:r', 2), false, 'third in the same second refused');
  t.equal(await c.rate('cps:other', 2), true, 'keys are separate');
  now += 999;
  t.equal(await c.rate('cps:r', 2), false, 'still the same second');
  now += 1;
  t.equal(await c.rate('cps:r', 2), true, 'a new second opens a new window');
  t.equal(await c.rate('cps:zero', 0), false, 'a limit of 0 admits nothing');
  t.equal(await c.rateNow('cps:r'), 1, 'the window read as it stands');
  t.equal(await c.rateNow('cps:r'), 1, 'reading counts nothing');
  now += 1000;
  t.equal(await c.rateNow('cps:r'), 0, 'a second without calls');
});

t.test("Redis: daemons share counts; a dead daemon's share ages out; reconcile rewrites a desync", async (t) => {
  const { spawn } = await import('node:child_process');
  const { Redis } = await import('ioredis');
  const { freePort } = await import('../telephony/sip/sipp.js');
  const port = await freePort();
  const server = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((r) => server.once('exit', () => r()));
  t.teardown(async () => {
    server.kill('SIGTERM');
    await exited;
  });
  // Commands wait in ioredis's offline queue while it retries until the server is up.
  const redis = new Redis({ port, host: '127.0.0.1', retryStrategy: (n) => (n > 100 ? null : 20) });
  t.teardown(() => redis.disconnect());
  t.equal(await redis.ping(), 'PONG');
  let now = 10_000_000;
  const a = createCounters(redis, 'node-a', () => now);
  const b = createCounters(redis, 'node-b', () => now);
  await a.reconcile(new Map());
  await b.reconcile(new Map());
  t.equal(await a.acquire('route:1', 2), true);
  t.equal(await b.acquire('route:1', 2), true);
  t.equal(await a.acquire('route:1', 2), false, 'the limit spans daemons');
  t.equal(await b.current('route:1'), 2);
  // node-b stops heartbeating: after 90 s its share no longer counts.
  now += 91_000;
  await a.reconcile(new Map([['route:1', 1]]));
  t.equal(await a.current('route:1'), 1, "dead daemon's share aged out");
  t.equal(await a.acquire('route:1', 2), true);
  // A lost release: reconcile rewrites this daemon's share from its live calls.
  await a.reconcile(new Map([['route:1', 1]]));
  t.equal(await a.current('route:1'), 1);
  await a.reconcile(new Map());
  t.equal(await a.current('route:1'), 0, 'nothing live, nothing counted');
  t.equal(await a.rate('cps:r', 1), true);
  t.equal(await b.rate('cps:r', 1), false, 'calls per second span daemons');
  t.equal(await b.rateNow('cps:r'), 2, "a read sees both daemons' events (the refused one too) and counts nothing");
  t.equal(await a.rateNow('cps:r'), 2);
  now += 1000;
  t.equal(await a.rateNow('cps:r'), 0, 'a new second reads empty');
  t.equal(await b.rate('cps:r', 1), true);
});
