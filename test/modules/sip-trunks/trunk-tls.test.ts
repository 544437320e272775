import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createSipStack, createSipTransport } from '../../../src/telephony/sip/index.js';
import t from 'tap';
import { answerChallenge } from '../../../src/telephony/sip/index.js';
import { getHeader, type SipMessage, type SipResponse } from '../../../src/telephony/sip/message.js';
import { isResponse, testCert, tlsSipClient, type TlsSipClient } from '../../telephony/sip/tls-client.js';
import { createWorld, eventually, expectExit, uasAnswer } from './world.js';

// Same money as trunk.test.ts: seller rate 0.013700, fee 0.002/min, 6/6 → 0.001570 for a short call;
// the sub-account's 25% markup makes it 0.001963.

const sdp = [
  'v=0',
  'o=- 1 1 IN IP4 127.0.0.1',
  's=-',
  'c=IN IP4 127.0.0.1',
  't=0 0',
  'm=audio 40000 RTP/AVP 0',
  'a=rtpmap:0 PCMU/8000',
  '',
].join('\r\n');

function request(method: string, uri: string, headers: string[], body = ''): string {
  return [`${method} ${uri} SIP/2.0`, ...headers, `Content-Length: ${Buffer.byteLength(body)}`, '', body].join('\r\n');
}

const branch = () => `z9hG4bK${randomBytes(6).toString('hex')}`;
const toTagOf = (m: SipMessage) => /;tag=([^;>\s]+)/.exec(getHeader(m, 'to') ?? '')?.[1] ?? '';

/**
 * A reseller's call in over TLS through the digest challenge to the daemon's 200 and ACK; `bye()`
 * hangs it up and waits for the 200.
 */
async function tlsCall(
  t: { teardown(fn: () => unknown): void },
  tlsPort: number,
  ca: string | Buffer,
  number: string,
  sub: { sipUsername: string; sipPassword: string },
  tag: string,
) {
  const c: TlsSipClient = await tlsSipClient(tlsPort, ca);
  t.teardown(() => c.close());
  const uri = `sip:${number}@127.0.0.1:${tlsPort};transport=tls`;
  const callId = `${tag}-${randomBytes(4).toString('hex')}`;
  const common = (cseq: string, via = branch()) => [
    `Via: SIP/2.0/TLS 127.0.0.1:${c.localPort};branch=${via};rport`,
    `From: "Alice" <sip:15550001111@127.0.0.1>;tag=${tag}`,
    `Call-ID: ${callId}`,
    `CSeq: ${cseq}`,
    'Max-Forwards: 70',
  ];
  const contact = `Contact: <sip:15550001111@127.0.0.1:${c.localPort};transport=tls>`;
  const b1 = branch();
  c.send(
    request(
      'INVITE',
      uri,
      [...common('1 INVITE', b1), `To: <sip:${number}@127.0.0.1>`, contact, 'Content-Type: application/sdp'],
      sdp,
    ),
  );
  const challenge = await c.next(isResponse(401, 'INVITE'));
  c.send(request('ACK', uri, [...common('1 ACK', b1), `To: <sip:${number}@127.0.0.1>;tag=${toTagOf(challenge)}`]));
  const auth = answerChallenge({
    challenge: getHeader(challenge, 'www-authenticate')!,
    method: 'INVITE',
    uri,
    username: sub.sipUsername,
    password: sub.sipPassword,
  });
  const from = c.got.length;
  c.send(
    request(
      'INVITE',
      uri,
      [
        ...common('2 INVITE'),
        `To: <sip:${number}@127.0.0.1>`,
        contact,
        `Authorization: ${auth}`,
        'Content-Type: application/sdp',
      ],
      sdp,
    ),
  );
  const ok = await c.next(isResponse(200, 'INVITE'), from, 10_000);
  const toTag = toTagOf(ok);
  c.send(request('ACK', uri, [...common('2 ACK'), `To: <sip:${number}@127.0.0.1>;tag=${toTag}`]));
  return {
    ok,
    async bye(): Promise<void> {
      const beforeBye = c.got.length;
      c.send(request('BYE', uri, [...common('3 BYE'), `To: <sip:${number}@127.0.0.1>;tag=${toTag}`]));
      await c.next(isResponse(200, 'BYE'), beforeBye);
    },
  };
}

t.test('SIP over TLS through the daemon', async (t) => {
  // A supplier on TLS with a private CA the daemon is told to trust (`[sip] tls_ca_file`).
  const supplierCert = await testCert();
  const dir = mkdtempSync(join(tmpdir(), 'svc-sip-tls-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const caFile = join(dir, 'supplier-ca.pem');
  writeFileSync(caFile, supplierCert.cert);
  const w = await createWorld(t, { sip: { tls_ca_file: caFile } });
  const tlsPort = w.d.ports['sip_tls'];
  t.ok(tlsPort && tlsPort !== w.sipPort, 'the daemon reports its SIP TLS port');
  const ca = w.d.core.tls!.cert;

  await t.test('OPTIONS over TLS answered on the same connection', async (t) => {
    const c = await tlsSipClient(tlsPort!, ca);
    t.teardown(() => c.close());
    c.send(
      request('OPTIONS', `sip:127.0.0.1:${tlsPort};transport=tls`, [
        `Via: SIP/2.0/TLS 127.0.0.1:${c.localPort};branch=${branch()};rport`,
        'From: <sip:probe@127.0.0.1>;tag=o1',
        'To: <sip:127.0.0.1>',
        'Call-ID: tls-options-1',
        'CSeq: 1 OPTIONS',
        'Max-Forwards: 70',
      ]),
    );
    const res = await c.next(isResponse(200, 'OPTIONS'));
    t.match(getHeader(res, 'via'), /^SIP\/2\.0\/TLS .*received=127\.0\.0\.1/, 'Via transport TLS, received stamped');
  });

  await t.test('malformed request over TLS gets 400; plain text on the TLS port is dropped', async (t) => {
    const c = await tlsSipClient(tlsPort!, ca);
    t.teardown(() => c.close());
    c.send(
      request('OPTIONS', 'sip:127.0.0.1', [
        `Via: SIP/2.0/TLS 127.0.0.1:${c.localPort};branch=${branch()}`,
        'From: <sip:a@127.0.0.1>;tag=1',
        'To: <sip:b@127.0.0.1>',
        'Call-ID: tls-bad-1',
        'CSeq: 1 INVITE',
        'Max-Forwards: 70',
      ]),
    );
    const bad = await c.next(isResponse(400));
    t.match((bad as SipResponse).reason, /CSeq method/);
    const { connect } = await import('node:net');
    const plain = connect(tlsPort!, '127.0.0.1');
    plain.on('error', () => undefined);
    const closed = new Promise((r) => plain.once('close', r));
    plain.write('OPTIONS sip:127.0.0.1 SIP/2.0\r\n\r\n');
    await closed;
    t.pass('plain connection dropped');
    const again = await tlsSipClient(tlsPort!, ca);
    t.teardown(() => again.close());
    again.send(
      request('OPTIONS', 'sip:127.0.0.1', [
        `Via: SIP/2.0/TLS 127.0.0.1:${again.localPort};branch=${branch()}`,
        'From: <sip:a@127.0.0.1>;tag=2',
        'To: <sip:b@127.0.0.1>',
        'Call-ID: tls-after-plain',
        'CSeq: 1 OPTIONS',
        'Max-Forwards: 70',
      ]),
    );
    await again.next(isResponse(200, 'OPTIONS'));
    t.pass('the TLS listener still answers after the plain connection');
  });

  await t.test('trunk call in over TLS: digest challenge, answered by the supplier, BYE, billed', async (t) => {
    const number = '441190000001';
    const uas = await uasAnswer(t, number);
    await w.route({ port: uas.port, prefix: '441190', rate: '0.013700' });
    const sub = await w.sub({ markupPct: '25', fund: '10.000000' });
    const call1 = await tlsCall(t, tlsPort!, ca, number, sub, 'tlsfrom');
    t.match(
      getHeader(call1.ok, 'contact'),
      new RegExp(`:${tlsPort};transport=tls>?`),
      'our Contact names the TLS port and transport',
    );
    await eventually(
      async () => (await w.d.sql`select 1 from calls where account_id = ${sub.id} and status = 'answered'`).length > 0,
    );
    await call1.bye();
    await expectExit(t, uas, 'supplier answered and got the BYE');

    const call = await eventually(async () => {
      const [row] = await w.d.sql<{ status: string; cost: string; billableSeconds: number }[]>`
        select status, cost::text, billable_seconds from calls where account_id = ${sub.id} and ended_at is not null`;
      return row;
    });
    t.match(call, { status: 'completed', billableSeconds: 6, cost: '0.001963' });
    const b = await w.d.modules.services.ledger.balanceOf(sub.id);
    t.equal(b.balance, '9.998037', 'the sub-account paid for the call');
    t.equal(b.held, '0.000000', 'no hold left');
    const [cdr] = await w.d.sql`select source, sip_code, to_number from cdrs where account_id = ${sub.id}`;
    t.match(cdr, { source: 'trunk', sipCode: 200, toNumber: number });
  });

  await t.test('trunk call out to a TLS supplier endpoint: certificate verified, answered, BYE over TLS', async (t) => {
    const log = pino({ level: 'silent' });
    const far = createSipStack({
      transport: await createSipTransport({ host: '127.0.0.1', port: 0, log, tls: { port: 0, ...supplierCert } }),
      log,
    });
    t.teardown(() => far.close());
    const seen: Array<{ method: string; transport: string; uri: string }> = [];
    far.onRequest((req, tx, src) => {
      seen.push({ method: req.method, transport: src.transport, uri: req.uri });
      if (req.method === 'INVITE') {
        tx.reply(200, 'OK', {
          toTag: far.newTag(),
          headers: [
            { name: 'Contact', value: `<${far.contactUri(undefined, 'tls')}>` },
            { name: 'Content-Type', value: 'application/sdp' },
          ],
          body: Buffer.from(sdp),
        });
      } else tx.reply(200, 'OK');
    });
    const number = '441191000002';
    await w.route({ port: far.transport.tlsPort!, prefix: '441191', rate: '0.013700', transport: 'tls' });
    const sub = await w.sub({ fund: '10.000000' });
    const call2 = await tlsCall(t, tlsPort!, ca, number, sub, 'tlsout');
    await call2.bye();
    await eventually(async () => seen.some((s) => s.method === 'BYE'));
    t.match(
      seen,
      [
        {
          method: 'INVITE',
          transport: 'tls',
          uri: new RegExp(`^sip:${number}@127\\.0\\.0\\.1:${far.transport.tlsPort};transport=tls$`),
        },
        { method: 'BYE', transport: 'tls' },
      ],
      'the supplier got the INVITE and the BYE over TLS',
    );
    const call = await eventually(async () => {
      const [row] = await w.d.sql<
        { status: string }[]
      >`select status from calls where account_id = ${sub.id} and ended_at is not null`;
      return row;
    });
    t.equal(call.status, 'completed');
    const legs = await w.d.sql`select sip_code from cdrs where account_id = ${sub.id}`;
    t.same(
      legs.map((l) => l['sipCode']),
      [200],
      'one leg, straight to the TLS supplier',
    );
  });
});
