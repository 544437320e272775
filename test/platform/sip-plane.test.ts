import t from 'tap';
import pino from 'pino';
import { loadConfig } from '../../src/config/load.js';
import { systemClock } from '../../src/platform/clock.js';
import { createHealthRegistry } from '../../src/platform/health.js';
import { createSipPlane } from '../../src/platform/sip-plane.js';
import { createSipStack, createSipTransport, probeEndpoint } from '../../src/telephony/sip/index.js';
import { createTestDatabase } from '../helpers/db.js';

t.test('the SIP plane exists before its ports: handlers added at construction answer once it listens', async (t) => {
  const { sql } = await createTestDatabase(t);
  const config = loadConfig({ overrides: { sip: { host: '127.0.0.1', port: 0 } } });
  const log = pino({ level: 'silent' });
  const plane = await createSipPlane({
    config,
    sql,
    log,
    clock: systemClock,
    redis: null,
    health: createHealthRegistry(),
    tls: null,
  });
  t.teardown(() => plane.stack.close());

  // Wired as the modules do it, before any port is bound.
  let answered = 0;
  plane.stack.onRequest((req, tx) => {
    if (req.method !== 'OPTIONS') return;
    answered++;
    tx.reply(200, 'OK', { toTag: plane.stack.newTag() });
  });
  t.equal(plane.listening, false);
  t.equal(
    plane.probe({ host: '127.0.0.1', port: 9, transport: 'udp' }, { timeoutMs: 500 }),
    null,
    'no probe before the ports are bound',
  );
  t.equal(plane.loopMarker.header.value.length, 24, 'the loop marker is there at construction');

  const peer = createSipStack({ transport: await createSipTransport({ host: '127.0.0.1', port: 0, log }), log });
  t.teardown(() => peer.close());
  peer.onRequest((_req, tx) => tx.reply(200, 'OK', { toTag: peer.newTag() }));

  const transport = await plane.listen();
  t.equal(await plane.listen(), transport, 'listening twice binds once');
  t.equal(plane.listening, true);
  t.equal(plane.stack.transport.port, transport.port, 'the stack reports the bound port');

  const inbound = await probeEndpoint(
    peer,
    { host: '127.0.0.1', port: transport.port, transport: 'udp' },
    { timeoutMs: 5000 },
  );
  t.match(inbound, { ok: true, status: 200 }, 'a handler added before listen() answers');
  t.equal(answered, 1);

  const outbound = await plane.probe(
    { host: '127.0.0.1', port: peer.transport.port, transport: 'udp' },
    { timeoutMs: 5000 },
  );
  t.match(outbound, { ok: true, status: 200 }, 'the plane probes once it listens');

  await plane.stack.close();
  t.equal(plane.listening, false, 'closed');
  t.equal(plane.probe({ host: '127.0.0.1', port: peer.transport.port, transport: 'udp' }, { timeoutMs: 500 }), null);
});
