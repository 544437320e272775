import { randomUUID } from 'node:crypto';
import { createServer, type AddressInfo, type Server } from 'node:net';
import t from 'tap';
import { startTestDaemon, type TestDaemon } from '../../../helpers/daemon.js';

/**
 * SSRF and port scanning through supplier settings, against a whole daemon with the operator's
 * private networks empty (the production default): a real listener on loopback must see no
 * connection, and an open and a closed port must get the same answer.
 */

interface Listener {
  port: number;
  connections(): number;
}

async function listener(t: { teardown(fn: () => unknown): void }): Promise<Listener> {
  let n = 0;
  const server: Server = createServer((s) => {
    n++;
    s.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return { port: (server.address() as AddressInfo).port, connections: () => n };
}

/** A port nothing listens on: bound, noted, closed. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

async function seller(d: TestDaemon) {
  const email = `${randomUUID()}@ssrf.test`;
  const acc = await d.modules.services.accounts.createAccount({ email, password: 'correct horse battery staple 42' });
  const { accessToken } = await d.modules.services.accounts.login(email, 'correct horse battery staple 42', {});
  await d.modules.services.switchSubscriptions.grant(acc.id, 'trial', new Date(Date.now() + 86_400_000));
  return { id: acc.id, token: accessToken };
}

t.test(
  'no private supplier networks: every customer-aimed target on loopback or metadata is refused before connecting',
  async (t) => {
    const d = await startTestDaemon(t, { security: { private_supplier_networks: [], private_trunk_networks: [] } });
    const open = await listener(t);
    const closed = await closedPort();
    const s = await seller(d);
    const post = (path: string, body: unknown) =>
      d.https('POST', path, { token: s.token, body, headers: { 'idempotency-key': randomUUID() } });

    t.test('switch test-sms: open and closed loopback ports get the same refusal, and nothing connects', async (t) => {
      const smpp = { smsDeliveryMethod: 'smpp', smppSystemId: 'sup1', smppPassword: 'pw1' };
      const a = await post('/switch/suppliers/test-sms', { ...smpp, smppHost: '127.0.0.1', smppPort: open.port });
      const b = await post('/switch/suppliers/test-sms', { ...smpp, smppHost: '127.0.0.1', smppPort: closed });
      t.equal(a.status, 400, a.text);
      t.match(a.json.error, { code: 'VALIDATION_ERROR', details: [{ path: 'smppHost', message: /not public/ }] });
      t.same(b.json, a.json, 'an open and a closed port cannot be told apart');
      for (const host of ['localhost', '169.254.169.254', '[::1]', '0.0.0.0', '10.1.2.3']) {
        const r = await post('/switch/suppliers/test-sms', { ...smpp, smppHost: host, smppPort: open.port });
        t.equal(r.status, 400, host);
      }
      const http = await post('/switch/suppliers/test-sms', {
        smsDeliveryMethod: 'http',
        smsDeliveryUrl: `https://127.0.0.1:${open.port}/send`,
      });
      t.match(http.json.error, { code: 'VALIDATION_ERROR', details: [{ path: 'smsDeliveryUrl' }] });
      t.equal(open.connections(), 0, 'the loopback listener saw no connection');
    });

    t.test('control characters in SMPP bind fields are refused', async (t) => {
      const r = await post('/switch/suppliers/test-sms', {
        smsDeliveryMethod: 'smpp',
        smppHost: '203.0.114.1',
        smppSystemId: 'sup\u0007x',
        smppPassword: 'p\r\nw',
        smppSystemType: 'a\u0001',
      });
      t.equal(r.status, 400, r.text);
      t.same(r.json.error.details.map((x: { path: string }) => x.path).sort(), [
        'smppPassword',
        'smppSystemId',
        'smppSystemType',
      ]);
      const nul = await post('/switch/suppliers/test-sms', {
        smsDeliveryMethod: 'smpp',
        smppHost: '203.0.114.1',
        smppSystemId: 'sup\u0000x',
        smppPassword: 'pw',
      });
      t.equal(nul.json.error.code, 'INVALID_INPUT', 'a NUL never reaches the handler');
      const route = await post('/routes', {
        type: 'sms',
        name: 'ctl',
        smsDelivery: { kind: 'smpp', host: '203.0.114.1', port: 2775, systemId: 'a\u001bb', password: 'pw' },
      });
      t.match(route.json.error, { code: 'VALIDATION_ERROR', details: [{ path: '/smsDelivery/systemId' }] });
    });

    t.test('saving a route: SMPP host, HTTPS URL and SIP endpoint on loopback or metadata are refused', async (t) => {
      const smpp = await post('/routes', {
        type: 'sms',
        name: 'smpp',
        smsDelivery: { kind: 'smpp', host: '127.0.0.1', port: open.port, systemId: 's', password: 'p' },
      });
      t.match(smpp.json.error, { code: 'VALIDATION_ERROR', details: [{ path: '/smsDelivery/host' }] });
      for (const url of [
        `https://[::1]:${open.port}/x`,
        'https://169.254.169.254/latest/meta-data',
        `https://localhost:${open.port}/`,
      ]) {
        const r = await post('/routes', {
          type: 'sms',
          name: 'http',
          smsDelivery: { kind: 'http', url, signingSecret: 'a-long-enough-secret' },
        });
        t.match(r.json.error, { code: 'VALIDATION_ERROR', details: [{ path: '/smsDelivery/url' }] }, url);
      }
      const voice = await post('/routes', {
        type: 'voice',
        name: 'sip',
        endpoints: [{ host: '127.0.0.1', port: open.port }],
      });
      t.match(voice.json.error, { code: 'VALIDATION_ERROR', details: [{ path: '/endpoints/0/host' }] });
      const ok = await post('/routes', {
        type: 'voice',
        name: 'public',
        endpoints: [{ host: '203.0.114.7', port: 5060 }],
      });
      t.equal(ok.status, 201, ok.text);
      const ep = ok.json.data.endpoints[0].id as string;
      const edited = await d.https('PATCH', `/routes/my-endpoints/${ep}`, {
        token: s.token,
        body: { host: '169.254.169.254' },
      });
      t.equal(edited.status, 400, edited.text);
    });

    t.test(
      'route tests of deliveries stored before the guard (or whose DNS changed) refuse before connecting',
      async (t) => {
        const r = await post('/routes', {
          type: 'sms',
          name: 'later',
          smsDelivery: { kind: 'smpp', host: '203.0.114.1', port: 2775, systemId: 's', password: 'p' },
        });
        t.equal(r.status, 201, r.text);
        const id = r.json.data.id as string;
        const results = [];
        for (const port of [open.port, closed]) {
          await d.sql`update routes set sms_delivery = ${d.sql.json({ kind: 'smpp', host: '127.0.0.1', port, systemId: 's', password: 'p' })} where id = ${id}`;
          d.modules.services.routingCache.routeChanged(id);
          results.push(await post(`/routes/${id}/test`, {}));
        }
        t.equal(results[0]!.status, 400, results[0]!.text);
        t.same(results[1]!.json, results[0]!.json, 'the same answer for an open and a closed port');
        const voice = await post('/routes', {
          type: 'voice',
          name: 'v',
          endpoints: [{ host: '203.0.114.7', port: 5060 }],
        });
        await d.sql`update route_endpoints set host = '127.0.0.1', port = ${open.port} where route_id = ${voice.json.data.id}`;
        d.modules.services.routingCache.routeChanged(voice.json.data.id);
        const probe = await post(`/routes/${voice.json.data.id}/test`, {});
        t.match(probe.json.error, { code: 'VALIDATION_ERROR' });
        t.equal(open.connections(), 0, 'the loopback listener saw no connection');
      },
    );
  },
);

t.test(
  'with private_supplier_networks allowing loopback, a real loopback supplier is reached; the exchange itself never',
  async (t) => {
    const d = await startTestDaemon(t, {
      security: { private_supplier_networks: ['127.0.0.0/8'], private_trunk_networks: [] },
    });
    const open = await listener(t);
    const s = await seller(d);
    const post = (path: string, body: unknown) =>
      d.https('POST', path, { token: s.token, body, headers: { 'idempotency-key': randomUUID() } });
    const r = await post('/switch/suppliers/test-sms', {
      smsDeliveryMethod: 'smpp',
      smppHost: '127.0.0.1',
      smppPort: open.port,
      smppSystemId: 'sup1',
      smppPassword: 'pw1',
    });
    t.equal(r.status, 200, r.text);
    t.match(r.json.data.checks, [{ label: 'connect', ok: true }]);
    t.equal(open.connections(), 1, 'the allowed supplier was connected to');
    const loop = await post('/routes', {
      type: 'voice',
      name: 'loop',
      endpoints: [{ host: '127.0.0.1', port: d.ports['sip'] }],
    });
    t.match(
      loop.json.error,
      { code: 'VALIDATION_ERROR', details: [{ path: '/endpoints/0/host' }] },
      'an endpoint on our own SIP listener',
    );
    const smsc = await post('/routes', {
      type: 'sms',
      name: 'self',
      smsDelivery: { kind: 'smpp', host: '127.0.0.1', port: d.ports['smpp'], systemId: 's', password: 'p' },
    });
    t.match(smsc.json.error, { code: 'VALIDATION_ERROR' }, 'an SMPP supplier on our own SMPP listener');
  },
);
