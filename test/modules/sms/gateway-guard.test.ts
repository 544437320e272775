import { createServer, type AddressInfo } from 'node:net';
import pino from 'pino';
import t from 'tap';
import { createSupplierGateway } from '../../../src/modules/sms/gateway.js';
import { createTargetGuard } from '../../../src/platform/outbound-guard.js';
import { systemClock } from '../../../src/platform/clock.js';

/**
 * Supplier addresses are checked again at every connection: a name saved while it resolved to a
 * public address and later answering with loopback (DNS rebinding) reaches nothing.
 */
t.test('SMPP and HTTPS supplier deliveries to a name that now resolves to loopback never connect', async (t) => {
  let connections = 0;
  const server = createServer((s) => {
    connections++;
    s.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.address() as AddressInfo).port;
  const guard = createTargetGuard({ lookup: async () => [{ address: '127.0.0.1', family: 4 }] });
  const gateway = createSupplierGateway({
    log: pino({ level: 'silent' }),
    clock: systemClock,
    onReceipt: () => undefined,
    options: {
      guard,
      bind: { responseTimeoutMs: 2000, queueTimeoutMs: 5000, reconnectMinMs: 60_000, reconnectMaxMs: 60_000 },
      http: { timeoutMs: 2000, callbackBase: 'https://exchange.test/api/v1' },
    },
  });
  t.teardown(() => gateway.stop());
  const sms = { to: '447700900001', from: 'Sender', text: 'hello', reference: 'ref-1' };

  const byName = await gateway.submit(
    { routeId: 'r-smpp', delivery: { kind: 'smpp', host: 'smsc.rebind.test', port, systemId: 's', password: 'p' } },
    sms,
  );
  t.match(byName, { status: 'error', reason: 'refused_target' }, 'the bind never came up');
  const literal = await gateway.submit(
    { routeId: 'r-smpp-ip', delivery: { kind: 'smpp', host: '127.0.0.1', port, systemId: 's', password: 'p' } },
    sms,
  );
  t.match(literal, { status: 'error', reason: 'refused_target' });
  const http = await gateway.submit(
    {
      routeId: 'r-http',
      delivery: { kind: 'http', url: `https://sms.rebind.test:${port}/send`, signingSecret: 'a-long-enough-secret' },
    },
    sms,
  );
  t.same(
    http,
    { status: 'error', reason: 'http_refused_target', ambiguous: false },
    'refused before sending: not ambiguous, the next route may take it',
  );
  const ctl = await gateway.submit(
    {
      routeId: 'r-ctl',
      delivery: { kind: 'smpp', host: 'smsc.example.test', port, systemId: 's\r\nx', password: 'p' },
    },
    sms,
  );
  t.same(ctl, { status: 'error', reason: 'invalid_bind_fields' });
  t.equal(connections, 0, 'the loopback listener saw no connection');
});
