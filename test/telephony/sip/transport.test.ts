import t from 'tap';
import dns from 'node:dns';
import net from 'node:net';
import { createSipTransport } from '../../../src/telephony/sip/transport.js';
import { vias } from '../../../src/telephony/sip/message.js';
import type { SipMessage } from '../../../src/telephony/sip/message.js';
import { rawUdpPeer, silentLog, until } from './helpers.js';
import { testCert } from './tls-client.js';

const options = (via: string) => `OPTIONS sip:x@127.0.0.1 SIP/2.0
Via: ${via}
From: <sip:a@127.0.0.1>;tag=1
To: <sip:x@127.0.0.1>
Call-ID: c1
CSeq: 1 OPTIONS
Content-Length: 0

`;

t.test('binds UDP and TCP on one port, rejects a taken port', async (t) => {
  const tr = await createSipTransport({ host: '127.0.0.1', port: 0, log: silentLog });
  t.teardown(() => tr.close());
  t.ok(tr.port > 0);
  await t.rejects(createSipTransport({ host: '127.0.0.1', port: tr.port, log: silentLog }), { code: 'EADDRINUSE' });
});

t.test('UDP: received/rport stamped, malformed request answered 400 with reason', async (t) => {
  const tr = await createSipTransport({ host: '127.0.0.1', port: 0, log: silentLog });
  const peer = await rawUdpPeer();
  t.teardown(async () => {
    await tr.close();
    await peer.close();
  });
  const got: SipMessage[] = [];
  tr.onMessage((m) => got.push(m));
  peer.send(options('SIP/2.0/UDP 192.0.2.1:5099;branch=z9hG4bKa;rport'), tr.port);
  await until(() => got.length === 1);
  const v = vias(got[0] as SipMessage)[0];
  t.equal(v?.params['received'], '127.0.0.1');
  t.equal(v?.params['rport'], String(peer.port));
  peer.send(options('SIP/2.0/UDP 127.0.0.1;branch=z9hG4bKb').replace('CSeq: 1 OPTIONS', 'CSeq: 1 INVITE'), tr.port);
  await until(() => peer.got.length === 1);
  t.match(peer.got[0], /^SIP\/2\.0 400 Bad Request \(CSeq method does not match request method\)\r\n/);
  peer.send('SIP/2.0 200 OK\r\nVia: garbage\r\n\r\n', tr.port);
  peer.send(options('SIP/2.0/UDP 127.0.0.1;branch=z9hG4bKc'), tr.port);
  await until(() => got.length === 2);
  t.equal(peer.got.length, 1, 'malformed response dropped silently');
});

t.test('TCP: framing, connection reuse, oversize closes with 400', async (t) => {
  const tr = await createSipTransport({ host: '127.0.0.1', port: 0, log: silentLog });
  t.teardown(() => tr.close());
  const got: Array<{ m: SipMessage; port: number }> = [];
  tr.onMessage((m, src) => got.push({ m, port: src.port }));
  const sock = net.connect(tr.port, '127.0.0.1');
  t.teardown(() => sock.destroy());
  let rx = '';
  sock.on('data', (d) => (rx += d.toString()));
  await new Promise((r) => sock.once('connect', r));
  const msg = options('SIP/2.0/TCP 127.0.0.1;branch=z9hG4bKd').replace(/\n/g, '\r\n');
  sock.write(msg.slice(0, 20));
  sock.write(msg.slice(20) + msg.replace('CSeq: 1', 'CSeq: 2'));
  await until(() => got.length === 2);
  const first = got[0];
  t.equal(first?.port, sock.localPort);
  // A response to that peer goes over the same connection.
  await tr.send(
    {
      kind: 'response',
      version: 'SIP/2.0',
      status: 200,
      reason: 'OK',
      headers: [{ name: 'Via', value: 'SIP/2.0/TCP 127.0.0.1' }],
      body: Buffer.alloc(0),
    },
    { transport: 'tcp', host: '127.0.0.1', port: sock.localPort ?? 0 },
  );
  await until(() => rx.includes('200 OK'));
  t.pass('reply over the inbound connection');
  const closed = new Promise((r) => sock.once('close', r));
  sock.write('INVITE sip:a@b SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1;branch=z9hG4bKe\r\nContent-Length: 9999999\r\n\r\n');
  await closed;
  t.match(rx, /400 Bad Request \(body too large\)/);
});

t.test('outbound TLS: a peer that never finishes the handshake fails the send after the connect timeout', async (t) => {
  // Accepts TCP and says nothing: the handshake never completes, as with a wedged supplier.
  const accepted: net.Socket[] = [];
  let closedByUs = 0;
  const silent = net.createServer((s) => {
    accepted.push(s);
    s.resume();
    s.on('close', () => closedByUs++);
    s.on('error', () => {});
  });
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    for (const s of accepted) s.destroy();
    silent.close();
  });
  const port = (silent.address() as net.AddressInfo).port;
  const tr = await createSipTransport({ host: '127.0.0.1', port: 0, log: silentLog, connectTimeoutMs: 300 });
  t.teardown(() => tr.close());
  const msg = {
    kind: 'request' as const,
    method: 'OPTIONS',
    uri: 'sip:probe@127.0.0.1',
    version: 'SIP/2.0',
    headers: [{ name: 'Via', value: 'SIP/2.0/TLS 127.0.0.1;branch=z9hG4bKtls1' }],
    body: Buffer.alloc(0),
  };
  const dest = { transport: 'tls' as const, host: '127.0.0.1', port };
  const started = Date.now();
  // Two sends at once share one connection attempt, and both fail with it.
  const results = await Promise.allSettled([tr.send(msg, dest), tr.send(msg, dest)]);
  const elapsed = Date.now() - started;
  t.same(
    results.map((r) => r.status),
    ['rejected', 'rejected'],
  );
  t.match((results[0] as PromiseRejectedResult).reason, { code: 'ETIMEDOUT' });
  t.ok(elapsed >= 250 && elapsed < 3000, `failed after ${elapsed} ms`);
  t.equal(accepted.length, 1, 'one connection for both sends');
  await until(() => closedByUs === 1);
  t.pass('the half-open connection was closed');
});

t.test('reloadTls: new listener certificate and outbound trust for new connections, without a restart', async (t) => {
  const [cert1, cert2] = [await testCert(), await testCert()];
  const server = await createSipTransport({
    host: '127.0.0.1',
    port: 0,
    log: silentLog,
    tls: { port: 0, key: cert1.key, cert: cert1.cert },
  });
  t.teardown(() => server.close());
  const got: SipMessage[] = [];
  server.onMessage((m) => got.push(m));
  const msg = (branch: string) => ({
    kind: 'request' as const,
    method: 'OPTIONS',
    uri: 'sip:probe@127.0.0.1',
    version: 'SIP/2.0',
    headers: [
      { name: 'Via', value: `SIP/2.0/TLS 127.0.0.1;branch=z9hG4bK${branch}` },
      { name: 'Call-ID', value: branch },
      { name: 'CSeq', value: '1 OPTIONS' },
      { name: 'From', value: '<sip:a@127.0.0.1>;tag=1' },
      { name: 'To', value: '<sip:b@127.0.0.1>' },
      { name: 'Max-Forwards', value: '70' },
    ],
    body: Buffer.alloc(0),
  });
  const dest = { transport: 'tls' as const, host: '127.0.0.1', port: server.tlsPort! };

  const client = await createSipTransport({ host: '127.0.0.1', port: 0, log: silentLog });
  t.teardown(() => client.close());
  await t.rejects(client.send(msg('r1'), dest), 'the listener certificate is not trusted yet');
  client.reloadTls({ tlsCa: [cert1.cert] });
  await client.send(msg('r2'), dest);
  await until(() => got.length === 1);
  t.pass('trusted after the CA reload');

  server.reloadTls({ key: cert2.key, cert: cert2.cert });
  const fresh = await createSipTransport({ host: '127.0.0.1', port: 0, log: silentLog, tlsCa: [cert1.cert] });
  t.teardown(() => fresh.close());
  await t.rejects(fresh.send(msg('r3'), dest), 'new handshakes present the new certificate');
  await client.send(msg('r4'), dest);
  await until(() => got.length === 2);
  t.pass('a connection opened before the reload keeps working');
  fresh.reloadTls({ tlsCa: [cert2.cert] });
  await fresh.send(msg('r5'), dest);
  await until(() => got.length === 3);
  t.pass('the new certificate is served');
});

t.test(
  'UDP: a datagram to an IP address is sent without a DNS lookup; a name is still resolved, an address of the other family still refused',
  async (t) => {
    // Counted, not replaced: dgram took dns.lookup for every send, which answers an address a tick later.
    const real = dns.lookup;
    const asked: string[] = [];
    dns.lookup = ((host: string, ...rest: unknown[]) => {
      asked.push(host);
      return (real as (...a: unknown[]) => unknown)(host, ...rest);
    }) as typeof dns.lookup;
    t.teardown(() => {
      dns.lookup = real;
    });
    const tr = await createSipTransport({ host: '127.0.0.1', port: 0, log: silentLog });
    const peer = await rawUdpPeer();
    t.teardown(async () => {
      await tr.close();
      await peer.close();
    });
    const res = 'SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP 127.0.0.1;branch=z9hG4bKx\r\nContent-Length: 0\r\n\r\n';
    asked.length = 0; // the binds' own look-ups
    await tr.send(Buffer.from(res), { transport: 'udp', host: '127.0.0.1', port: peer.port });
    await until(() => peer.got.length === 1);
    t.equal(peer.got[0], res);
    t.same(asked, [], 'no lookup for an address');
    await tr.send(Buffer.from(res), { transport: 'udp', host: 'localhost', port: peer.port });
    await until(() => peer.got.length === 2);
    t.equal(peer.got[1], res);
    t.same(asked, ['localhost'], 'a host name goes through dns.lookup');
    await t.rejects(tr.send(Buffer.from(res), { transport: 'udp', host: '[::1]', port: peer.port }));
  },
);
