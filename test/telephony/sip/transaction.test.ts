import t from 'tap';
import { createSipTransport } from '../../../src/telephony/sip/transport.js';
import { createSipStack, type SipStack } from '../../../src/telephony/sip/stack.js';
import type { SipRequest, SipResponse } from '../../../src/telephony/sip/message.js';
import type { ServerTransaction } from '../../../src/telephony/sip/transaction.js';
import { createFakeTimers, silentLog, stackWithPeer, until } from './helpers.js';

async function pair(t: { teardown(fn: () => Promise<void>): void }) {
  const timers = createFakeTimers();
  const a = createSipStack({
    transport: await createSipTransport({ host: '127.0.0.1', port: 0, log: silentLog }),
    log: silentLog,
    timers,
  });
  const b = createSipStack({
    transport: await createSipTransport({ host: '127.0.0.1', port: 0, log: silentLog }),
    log: silentLog,
    timers,
  });
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  return { a, b, timers };
}

function request(from: SipStack, method: string, port: number, seq = 1): SipRequest {
  return {
    kind: 'request',
    method,
    uri: `sip:bob@127.0.0.1:${port}`,
    version: 'SIP/2.0',
    headers: [
      { name: 'From', value: `<sip:alice@127.0.0.1>;tag=${from.newTag()}` },
      { name: 'To', value: '<sip:bob@127.0.0.1>' },
      { name: 'Call-ID', value: from.newCallId() },
      { name: 'CSeq', value: `${seq} ${method}` },
      { name: 'Max-Forwards', value: '70' },
    ],
    body: Buffer.alloc(0),
  };
}

t.test('non-INVITE: request, response, retransmission absorbed', async (t) => {
  const { a, b } = await pair(t);
  let seen = 0;
  b.onRequest((_req, tx) => {
    seen++;
    tx.reply(200, 'OK', { toTag: 'b1' });
  });
  const res: SipResponse[] = [];
  a.sendRequest(
    request(a, 'OPTIONS', b.transport.port),
    { transport: 'udp', host: '127.0.0.1', port: b.transport.port },
    {
      onResponse: (r) => res.push(r),
      onTimeout: () => t.fail('timeout'),
    },
  );
  await until(() => res.length === 1);
  t.equal(res[0]?.status, 200);
  t.equal(seen, 1);
});

t.test('INVITE client: Timer A doubles, Timer B times out', async (t) => {
  const { stack: a, timers, peer } = await stackWithPeer(t);
  let timedOut = false;
  a.sendRequest(
    request(a, 'INVITE', peer.port),
    { transport: 'udp', host: '127.0.0.1', port: peer.port },
    {
      onResponse: () => undefined,
      onTimeout: () => (timedOut = true),
    },
  );
  await until(() => peer.got.length === 1);
  timers.advance(500);
  await until(() => peer.got.length === 2);
  timers.advance(999);
  t.equal(peer.got.length, 2, 'second interval is 1000 ms');
  timers.advance(1);
  await until(() => peer.got.length === 3);
  timers.advance(32_000);
  t.ok(timedOut, 'Timer B fired at 64*T1');
});

t.test('INVITE: 486 is ACKed by the client transaction; server confirmed', async (t) => {
  const { a, b, timers } = await pair(t);
  let st: ServerTransaction | undefined;
  b.onRequest((_req, tx) => {
    st = tx;
  });
  const res: number[] = [];
  a.sendRequest(
    request(a, 'INVITE', b.transport.port),
    { transport: 'udp', host: '127.0.0.1', port: b.transport.port },
    {
      onResponse: (r) => res.push(r.status),
      onTimeout: () => t.fail('timeout'),
    },
  );
  await until(() => st !== undefined);
  // A TU slower than 200 ms: the stack says 100 Trying meanwhile.
  timers.advance(200);
  await until(() => res.includes(100));
  t.pass('100 Trying sent by the stack');
  st!.reply(486, 'Busy Here', { toTag: 'x' });
  await until(() => res.includes(486));
  await until(() => st?.state === 'confirmed');
});

t.test('CANCEL: 200 to CANCEL, 487 to INVITE, TU told', async (t) => {
  const { a, b } = await pair(t);
  let cancelled = false;
  b.onRequest((_req, tx) => {
    tx.onCancel = () => (cancelled = true);
    tx.reply(180, 'Ringing', { toTag: 'r1' });
  });
  const res: number[] = [];
  const ct = a.sendRequest(
    request(a, 'INVITE', b.transport.port),
    { transport: 'udp', host: '127.0.0.1', port: b.transport.port },
    {
      onResponse: (r) => res.push(r.status),
      onTimeout: () => t.fail('timeout'),
    },
  );
  ct.cancel();
  await until(() => res.includes(487));
  t.ok(cancelled);
  t.ok(res.includes(180));
});

t.test('2xx retransmitted by the server until the ACK (RFC 6026 Accepted)', async (t) => {
  const { a, b, timers } = await pair(t);
  let acked = false;
  b.onRequest((req, tx) => {
    tx.onAck = () => (acked = true);
    tx.reply(200, 'OK', { toTag: req.method === 'INVITE' ? 'ok1' : 'o2' });
  });
  const oks: SipResponse[] = [];
  const req = request(a, 'INVITE', b.transport.port);
  const dest = { transport: 'udp' as const, host: '127.0.0.1', port: b.transport.port };
  a.sendRequest(req, dest, { onResponse: (r) => r.status === 200 && oks.push(r), onTimeout: () => t.fail('timeout') });
  await until(() => oks.length === 1);
  timers.advance(500);
  await until(() => oks.length === 2);
  t.pass('2xx retransmitted and passed up in Accepted');
  const ack: SipRequest = {
    ...request(a, 'ACK', b.transport.port),
    headers: req.headers.filter((h) => h.name !== 'Via' && h.name !== 'CSeq' && h.name !== 'To'),
  };
  ack.headers.push({ name: 'To', value: '<sip:bob@127.0.0.1>;tag=ok1' }, { name: 'CSeq', value: '1 ACK' });
  await a.sendAck(ack, dest);
  await until(() => acked);
  timers.advance(4000);
  // Barrier: anything sent by the advance above arrives before the answer to this OPTIONS.
  let barrier = false;
  a.sendRequest(request(a, 'OPTIONS', b.transport.port), dest, {
    onResponse: () => (barrier = true),
    onTimeout: () => t.fail('timeout'),
  });
  await until(() => barrier);
  t.equal(oks.length, 2, 'no retransmission after ACK');
});

t.test('UDP INVITE refusals: sent once to an unverified source, retransmitted once it has ACKed our tag', async (t) => {
  const { stack: b, timers, peer } = await stackWithPeer(t);
  b.onRequest((_req, tx) => void tx.reply(401, 'Unauthorized', { toTag: 'ours1' }));
  const invite = (
    branch: string,
    callId: string,
    method = 'INVITE',
    toTag = '',
  ) => `${method} sip:bob@127.0.0.1:${b.transport.port} SIP/2.0
Via: SIP/2.0/UDP 127.0.0.1:${peer.port};branch=z9hG4bK${branch};rport
From: <sip:alice@127.0.0.1>;tag=a1
To: <sip:bob@127.0.0.1>${toTag ? `;tag=${toTag}` : ''}
Call-ID: ${callId}
CSeq: 1 ${method}
Max-Forwards: 70
Content-Length: 0

`;
  peer.send(invite('u1', 'c1'), b.transport.port);
  await until(() => peer.got.length === 1);
  t.match(peer.got[0], /^SIP\/2\.0 401 /, 'the challenge alone: no 100 Trying before it');
  timers.advance(64 * 500);
  // Barrier: a second request's answer arrives after anything the advance above sent.
  peer.send(invite('u2', 'c2'), b.transport.port);
  await until(() => peer.got.some((m) => m.includes('Call-ID: c2')));
  t.equal(
    peer.got.filter((m) => m.includes('Call-ID: c1')).length,
    1,
    'no Timer G retransmission to an unverified source',
  );

  // An ACK with our To tag proves the address reads what we send: retransmission is back.
  peer.send(invite('u2', 'c2', 'ACK', 'ours1'), b.transport.port);
  peer.send(invite('u3', 'c3'), b.transport.port);
  await until(() => peer.got.some((m) => m.includes('Call-ID: c3')));
  timers.advance(500);
  await until(() => peer.got.filter((m) => m.includes('Call-ID: c3')).length === 2);
  t.pass('Timer G retransmits to a source that ACKed our tag');
});

t.test('non-INVITE server: a retransmitted request gets the same final again, the TU asked once', async (t) => {
  const { stack: b, timers, peer } = await stackWithPeer(t);
  let asked = 0;
  b.onRequest((_req, tx) => {
    asked++;
    tx.reply(200, 'OK', { toTag: 'opt1', headers: [{ name: 'Allow', value: 'INVITE, ACK, BYE' }] });
  });
  const options = `OPTIONS sip:bob@127.0.0.1:${b.transport.port} SIP/2.0
Via: SIP/2.0/UDP 127.0.0.1:${peer.port};branch=z9hG4bKopt1;rport
From: <sip:alice@127.0.0.1>;tag=a1
To: <sip:bob@127.0.0.1>
Call-ID: opt-1
CSeq: 7 OPTIONS
Max-Forwards: 70
Content-Length: 0

`;
  peer.send(options, b.transport.port);
  await until(() => peer.got.length === 1);
  t.match(peer.got[0], /^SIP\/2\.0 200 OK\r\n[^]*Allow: INVITE, ACK, BYE\r\n/);
  peer.send(options, b.transport.port);
  await until(() => peer.got.length === 2);
  t.equal(peer.got[1], peer.got[0], 'the same bytes again');
  t.equal(asked, 1);
  timers.advance(64 * 500);
  peer.send(options, b.transport.port);
  await until(() => asked === 2);
  t.pass('after Timer J the request is new to the stack');
});

t.test('many transactions share one platform timer per timer duration, and all still time out', async (t) => {
  const { stack: a, timers, peer } = await stackWithPeer(t);
  const dest = { transport: 'udp' as const, host: '127.0.0.1', port: peer.port };
  let timedOut = 0;
  for (let i = 0; i < 40; i++) {
    a.sendRequest(request(a, i % 2 ? 'INVITE' : 'OPTIONS', peer.port), dest, {
      onResponse: () => undefined,
      onTimeout: () => timedOut++,
    });
  }
  // Timer A/E (T1) and Timer B/F (64·T1): two durations, whatever the number of transactions.
  t.equal(timers.pending(), 2);
  await until(() => peer.got.length === 40);
  timers.advance(64 * 500);
  t.equal(timedOut, 40, 'every Timer B and F fired');
  // A queue whose entries were all cancelled wakes once more at its head's time, and stays quiet.
  timers.advance(4000);
  t.equal(timers.pending(), 0, 'nothing left armed');
});

t.test(
  'INVITE refusal: retransmissions get the same final again until the ACK, absorbed after it, to Timer I',
  async (t) => {
    const { stack: b, timers, peer } = await stackWithPeer(t);
    let asked = 0;
    b.onRequest((_req, tx) => {
      asked++;
      tx.reply(404, 'Not Found', { toTag: 'nf1', headers: [{ name: 'Reason', value: 'SIP;cause=404' }] });
    });
    const msg = (method: string, toTag = '') => `${method} sip:bob@127.0.0.1:${b.transport.port} SIP/2.0
Via: SIP/2.0/UDP 127.0.0.1:${peer.port};branch=z9hG4bKref1;rport
From: <sip:alice@127.0.0.1>;tag=a1
To: <sip:bob@127.0.0.1>${toTag ? `;tag=${toTag}` : ''}
Call-ID: ref-1
CSeq: 3 ${method}
Max-Forwards: 70
Content-Length: 0

`;
    peer.send(msg('INVITE'), b.transport.port);
    await until(() => peer.got.length === 1);
    t.match(
      peer.got[0],
      /^SIP\/2\.0 404 Not Found\r\n[^]*To: <sip:bob@127\.0\.0\.1>;tag=nf1\r\n[^]*Reason: SIP;cause=404\r\n/,
    );
    peer.send(msg('INVITE'), b.transport.port);
    await until(() => peer.got.length === 2);
    t.equal(peer.got[1], peer.got[0], 'a retransmitted INVITE gets the same bytes again');
    t.equal(asked, 1, 'the TU was asked once');
    // The ACK carries our tag: the source is proved, and the transaction is confirmed.
    peer.send(msg('ACK', 'nf1'), b.transport.port);
    peer.send(msg('INVITE'), b.transport.port);
    timers.advance(500);
    // Barrier: an OPTIONS answered after anything the INVITE or the advance could have drawn.
    peer.send(msg('OPTIONS').replace('ref1', 'ref2').replace('ref-1', 'ref-2'), b.transport.port);
    await until(() => peer.got.some((m) => m.includes('Call-ID: ref-2')));
    t.equal(peer.got.filter((m) => m.includes('Call-ID: ref-1')).length, 2, 'absorbed once confirmed');
    timers.advance(5000);
    peer.send(msg('INVITE'), b.transport.port);
    await until(() => asked === 2);
    t.pass('after Timer I the INVITE is new to the stack');
  },
);

t.test('a UDP send that fails ends its client transaction after sendRequest returns', async (t) => {
  const { a } = await pair(t);
  // Port 0 is refused by dgram before anything is sent: the transport failure of RFC 3261 §17.1.4.
  const dest = { transport: 'udp' as const, host: '127.0.0.1', port: 0 };
  const causes: string[] = [];
  let returned = false;
  const tx = a.sendRequest(request(a, 'INVITE', 0), dest, {
    onResponse: () => t.fail('no response can come'),
    onTimeout: (_tx, cause) => {
      t.ok(returned, 'told only once sendRequest has returned');
      causes.push(cause);
    },
  });
  returned = true;
  await until(() => causes.length === 1);
  t.same(causes, ['transport']);
  t.equal(tx.state, 'terminated');
  // A response or ACK to such a peer goes nowhere, and nothing throws into the caller.
  t.doesNotThrow(() => a.transport.post(Buffer.from('x'), dest));
});
