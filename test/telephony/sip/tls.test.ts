import t from 'tap';
import net from 'node:net';
import { createSipStack } from '../../../src/telephony/sip/stack.js';
import { createSipTransport } from '../../../src/telephony/sip/transport.js';
import { createResponse, vias, type SipMessage } from '../../../src/telephony/sip/message.js';
import { probeEndpoint } from '../../../src/telephony/sip/probe.js';
import type { SipPeer } from '../../../src/telephony/sip/transport.js';
import { silentLog, until } from './helpers.js';
import { isResponse, testCert, tlsSipClient } from './tls-client.js';

const options = (cseq: number, extra = '') => `OPTIONS sip:x@127.0.0.1 SIP/2.0
Via: SIP/2.0/TLS 192.0.2.9:5061;branch=z9hG4bKtls${cseq};rport
From: <sip:a@127.0.0.1>;tag=1
To: <sip:x@127.0.0.1>
Call-ID: tls-c1
CSeq: ${cseq} OPTIONS
${extra}Content-Length: 0

`;

t.test('TLS listener: framing, received/rport, reply on the same connection, 400, plain bytes dropped', async (t) => {
  const cert = await testCert();
  const tr = await createSipTransport({ host: '127.0.0.1', port: 0, log: silentLog, tls: { port: 0, ...cert } });
  t.teardown(() => tr.close());
  t.ok(tr.tlsPort && tr.tlsPort !== tr.port, 'TLS has its own port');
  const got: Array<{ m: SipMessage; src: SipPeer }> = [];
  tr.onMessage((m, src) => got.push({ m, src }));

  const c = await tlsSipClient(tr.tlsPort!, cert.cert);
  t.teardown(() => c.close());
  const two = options(1) + options(2);
  c.send(two.slice(0, 37));
  c.send(two.slice(37));
  await until(() => got.length === 2);
  const first = got[0]!;
  t.same(first.src, { transport: 'tls', host: '127.0.0.1', port: c.localPort });
  const v = vias(first.m)[0];
  t.equal(v?.transport, 'TLS');
  t.equal(v?.params['received'], '127.0.0.1');
  t.equal(v?.params['rport'], String(c.localPort));

  await tr.send(createResponse(first.m as never, 200, 'OK', { toTag: 'x' }), first.src);
  const ok = await c.next(isResponse(200, 'OPTIONS'));
  t.equal(ok.kind, 'response', 'the response came back over the inbound TLS connection');

  c.send(options(3).replace('CSeq: 3 OPTIONS', 'CSeq: 3 INVITE'));
  await until(() => /400 Bad Request \(CSeq method does not match request method\)/.test(c.raw()));
  t.pass('malformed request over TLS answered 400 with the reason');

  const plain = net.connect(tr.tlsPort!, '127.0.0.1');
  plain.on('error', () => undefined);
  const plainClosed = new Promise((r) => plain.once('close', r));
  plain.write(options(4).replace(/\n/g, '\r\n'));
  await plainClosed;
  t.equal(got.length, 2, 'a plain SIP byte stream on the TLS port is dropped, not delivered');

  c.send(options(5));
  await until(() => got.length === 3);
  t.pass('the listener still serves TLS after the plain-text connection');
});

t.test('outbound TLS: verified against the trusted CA, refused without it', async (t) => {
  const cert = await testCert();
  const far = await createSipTransport({ host: '127.0.0.1', port: 0, log: silentLog, tls: { port: 0, ...cert } });
  const farStack = createSipStack({ transport: far, log: silentLog });
  farStack.onRequest((req, tx, src) => {
    t.equal(src.transport, 'tls');
    tx.reply(200, 'OK', { toTag: farStack.newTag() });
  });
  const trusting = createSipStack({
    transport: await createSipTransport({ host: '127.0.0.1', port: 0, log: silentLog, tlsCa: [cert.cert] }),
    log: silentLog,
  });
  const strict = createSipStack({
    transport: await createSipTransport({ host: '127.0.0.1', port: 0, log: silentLog }),
    log: silentLog,
  });
  t.teardown(async () => {
    await Promise.all([farStack.close(), trusting.close(), strict.close()]);
  });
  const target: SipPeer = { transport: 'tls', host: '127.0.0.1', port: far.tlsPort! };
  const r = await probeEndpoint(trusting, target, { timeoutMs: 2000 });
  t.same({ ok: r.ok, status: r.status }, { ok: true, status: 200 }, 'OPTIONS over TLS answered');
  t.equal(
    trusting.contactUri('b2bua', 'tls'),
    `sip:b2bua@127.0.0.1:${trusting.transport.port};transport=tls`,
    'no TLS listener: the main port',
  );
  t.equal(farStack.contactUri(undefined, 'tls'), `sip:127.0.0.1:${far.tlsPort};transport=tls`);
  const refused = await probeEndpoint(strict, target, { timeoutMs: 1000 });
  t.equal(refused.ok, false, 'a certificate the system CAs do not vouch for is refused');
});
