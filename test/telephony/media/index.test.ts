import t from 'tap';
import { pino } from 'pino';
import { createMediaPlane } from '../../../src/telephony/media/index.js';
import type { DialEvents } from '../../../src/telephony/media/index.js';

t.test('the plane builds its parts, splits ports per worker, and closes its engines', async (t) => {
  const base = 54000 + (process.pid % 40) * 100;
  const plane = createMediaPlane({
    log: pino({ level: 'silent' }),
    workers: 2,
    portMin: base,
    portMax: base + 99,
    bindAddress: '127.0.0.1',
    ttsCacheDir: null,
  });
  let closed = false;
  t.teardown(() => (closed ? undefined : plane.close()));
  const stats = await plane.pool.stats();
  t.same(
    stats.map((s) => s.worker),
    [0, 1],
  );
  const [a, b] = await Promise.all([plane.pool.openSession(), plane.pool.openSession()]);
  t.ok(a && b);
  const ports = [a?.localPort ?? 0, b?.localPort ?? 0].sort((x, y) => x - y);
  t.ok(
    (ports[0] ?? 0) < base + 50 && (ports[1] ?? 0) >= base + 50,
    `one session per worker, each in its half (${ports.join(', ')})`,
  );
  await Promise.all([a?.close(), b?.close()]);
  let hangups = 0;
  let dialled: (ev: DialEvents) => void = () => undefined;
  const dialledP = new Promise<DialEvents>((resolve) => {
    dialled = resolve;
  });
  const engine = plane.createEngine({
    dial(_req, ev) {
      dialled(ev);
      return { hangup: async () => void hangups++ };
    },
  });
  const call = engine.originate({
    callId: 'c',
    to: '+15550001',
    from: '+15550002',
    endpoint: { host: '127.0.0.1', port: 5060, transport: 'udp' },
    maxDurationSec: 10,
  });
  await dialledP;
  await plane.close();
  closed = true;
  t.match(await call.ended, { cause: 'cancelled' });
  t.equal(hangups, 1);
});
