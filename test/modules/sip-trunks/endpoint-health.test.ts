import t from 'tap';
import pino from 'pino';
import type { ProbeResult } from '../../../src/telephony/sip/index.js';
import { createEndpointHealth, type HealthTarget } from '../../../src/modules/sip-trunks/endpoint-health.js';

const a: HealthTarget = { host: '192.0.2.1', port: 5060, transport: 'udp' };
const b: HealthTarget = { host: '192.0.2.2', port: 5070, transport: 'tcp' };
const tls: HealthTarget = { host: '192.0.2.3', port: 5061, transport: 'tls' };
const up: ProbeResult = { ok: true, status: 200, rttMs: 1 };
const down: ProbeResult = { ok: false, status: null, rttMs: 2000 };

t.test('down after 3 failures in a row, up again after 2 successes', async (t) => {
  let answer = new Map<string, ProbeResult>([
    ['192.0.2.1', down],
    ['192.0.2.2', up],
  ]);
  let targets = [a, b, tls];
  const probed: string[] = [];
  const h = createEndpointHealth({
    probe: async (x) => {
      probed.push(x.host);
      return answer.get(x.host) ?? up;
    },
    targets: async () => targets,
    log: pino({ level: 'silent' }),
    failuresToDown: 3,
    successesToUp: 2,
  });
  t.equal(h.isDown(a), false, 'unknown endpoints count as up');
  t.equal(await h.checkAll(), 3, 'UDP, TCP and TLS endpoints are probed');
  t.ok(probed.includes('192.0.2.3'));
  await h.checkAll();
  t.equal(h.isDown(a), false, 'two failures are not enough');
  await h.checkAll();
  t.equal(h.isDown(a), true, 'three failures mark it down');
  t.equal(h.isDown(b), false);
  t.equal(h.isDown({ ...a, host: '192.0.2.1'.toUpperCase() }), true, 'host compared case-insensitively');
  answer = new Map([['192.0.2.1', up]]);
  await h.checkAll();
  t.equal(h.isDown(a), true, 'one success is not enough to come back');
  answer = new Map([['192.0.2.1', down]]);
  await h.checkAll();
  answer = new Map([['192.0.2.1', up]]);
  await h.checkAll();
  t.equal(h.isDown(a), true, 'successes must be consecutive');
  await h.checkAll();
  t.equal(h.isDown(a), false, 'two successes in a row bring it back');
  answer = new Map([['192.0.2.2', down]]);
  for (let i = 0; i < 3; i++) await h.checkAll();
  t.equal(h.isDown(b), true);
  targets = [a];
  await h.checkAll();
  t.equal(h.isDown(b), false, 'an endpoint no longer listed is forgotten');
});

t.test('a probe that throws counts as a failure; concurrency is bounded', async (t) => {
  let inFlight = 0;
  let peak = 0;
  const many = Array.from({ length: 40 }, (_, i) => ({ host: `198.51.100.${i}`, port: 5060, transport: 'udp' }));
  const h = createEndpointHealth({
    probe: async (x) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await new Promise((r) => setImmediate(r));
      inFlight--;
      if (x.host.endsWith('.7')) throw new Error('socket closed');
      return up;
    },
    targets: async () => many,
    log: pino({ level: 'silent' }),
    failuresToDown: 1,
    successesToUp: 1,
    concurrency: 4,
  });
  t.equal(await h.checkAll(), 40);
  t.ok(peak <= 4 && peak > 1, `peak ${peak} within 4`);
  t.equal(h.isDown(many[7]!), true);
  t.equal(h.snapshot().filter((s) => s.down).length, 1);
});

t.test('checkDue: each endpoint on its own interval and thresholds, else the defaults', async (t) => {
  let now = 1_000_000;
  const own: HealthTarget = {
    host: '192.0.2.10',
    port: 5060,
    transport: 'udp',
    optionsIntervalSeconds: 10,
    failureThreshold: 1,
    recoveryThreshold: 3,
  };
  const plain: HealthTarget = { host: '192.0.2.11', port: 5060, transport: 'udp' };
  const probed: string[] = [];
  let answer: ProbeResult = down;
  const h = createEndpointHealth({
    probe: async (x) => {
      probed.push(x.host);
      return answer;
    },
    targets: async () => [own, plain],
    log: pino({ level: 'silent' }),
    failuresToDown: 2,
    successesToUp: 1,
    intervalSeconds: 30,
    now: () => now,
  });
  t.equal(await h.checkDue(), 0, 'first seen: not probed before an interval has passed');
  now += 30_000;
  t.equal(await h.checkDue(), 2, 'an interval later both are due');
  t.equal(h.isDown(own), true, 'its own threshold of 1 failure');
  t.equal(h.isDown(plain), false, 'the default threshold of 2 is not reached');
  now += 10_000;
  t.equal(await h.checkDue(), 1, '10 s later only the 10 s endpoint is due');
  t.same(probed.slice(2), ['192.0.2.10']);
  now += 20_000;
  answer = up;
  t.equal(await h.checkDue(), 2, '30 s after the first probe both are due');
  t.equal(h.isDown(own), true, 'one success of the three it needs');
  now += 10_000;
  await h.checkDue();
  now += 10_000;
  await h.checkDue();
  t.equal(h.isDown(own), false, 'three successes in a row bring it back');
  t.equal(await h.checkAll(), 2, 'checkAll ignores intervals');
});
