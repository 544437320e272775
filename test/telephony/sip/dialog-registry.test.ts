import t from 'tap';
import { createSipDialer, type LegOutcome } from '../../../src/telephony/calls/sip-dialer.js';
import { createUasDialog, dialogRequest } from '../../../src/telephony/sip/dialog.js';
import { createLoopMarker } from '../../../src/telephony/sip/loop-marker.js';
import { createTrunkB2bua } from '../../../src/telephony/sip/b2bua/index.js';
import { tagOf, toOf, type SipMessage, type SipRequest, type SipResponse } from '../../../src/telephony/sip/message.js';
import { parseMessage } from '../../../src/telephony/sip/parser.js';
import { createSipStack, type SipStack } from '../../../src/telephony/sip/stack.js';
import { createSipTransport, type SipTransport } from '../../../src/telephony/sip/transport.js';
import { systemClock } from '../../../src/platform/clock.js';
import { rawUdpPeer, silentLog, until } from './helpers.js';

/** In-dialog requests go to the dialog's owner only; a dialog nobody owns gets one 481, at the end of the chain. */

const OFFER = 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0\r\n';

async function udpStack(tt: {
  teardown(fn: () => Promise<void>): void;
}): Promise<{ stack: SipStack; transport: SipTransport; sent: SipResponse[] }> {
  const transport = await createSipTransport({ host: '127.0.0.1', port: 0, log: silentLog });
  const sent: SipResponse[] = [];
  const send = transport.send.bind(transport);
  const post = transport.post.bind(transport);
  // Every response the stack puts on the wire, to count answers rather than what a peer happened to read.
  const record = (m: SipMessage | Uint8Array): void => {
    // A final the stack keeps for retransmissions goes out as its bytes.
    const msg = m instanceof Uint8Array ? parseMessage(Buffer.from(m)) : m;
    if (msg.kind === 'response') sent.push(msg);
  };
  transport.send = (m, dest) => {
    record(m);
    return send(m, dest);
  };
  // Responses, which nothing waits on, go out this way.
  transport.post = (m, dest, onError) => {
    record(m);
    post(m, dest, onError);
  };
  const stack = createSipStack({ transport, log: silentLog });
  tt.teardown(() => stack.close());
  return { stack, transport, sent };
}

const bye = (callId: string, port: number, toTag: string) => `BYE sip:nobody@127.0.0.1:${port} SIP/2.0
Via: SIP/2.0/UDP 127.0.0.1:9;branch=z9hG4bK${callId};rport
From: <sip:peer@127.0.0.1>;tag=peer1
To: <sip:nobody@127.0.0.1>;tag=${toTag}
Call-ID: ${callId}
CSeq: 2 BYE
Max-Forwards: 70
Content-Length: 0

`;

t.test(
  "the stack of the daemon (trunk B2BUA, then the API dialer): the far end's BYE reaches only the dialer; an unknown dialog gets one 481",
  async (t) => {
    const a = await udpStack(t);
    // The order the daemon builds them in: the trunk B2BUA first, the API call dialer after it.
    createTrunkB2bua({
      stack: a.stack,
      log: silentLog,
      clock: systemClock,
      realm: 'sip.exchange.test',
      nonceSecret: 'test-secret',
      policy: {
        resolveByIp: async () => null,
        lookupSipUser: async () => null,
        planCall: async () => ({ reject: { status: 403, reason: 'Forbidden' } }),
        onCallEnded: () => undefined,
      },
    });
    const outcomes: LegOutcome[] = [];
    const dialer = createSipDialer(a.stack, {
      log: silentLog,
      loopMarker: createLoopMarker('test secret'),
      onLegEnded: (o) => outcomes.push(o),
    });
    // A later user of the stack: what reaches it is what was broadcast to every user.
    const chained: SipRequest[] = [];
    a.stack.onRequest((req, _tx, _src, next) => {
      chained.push(req);
      next();
    });

    // The callee: a second stack that answers the dialer's INVITE, then hangs up.
    const b = await udpStack(t);
    let invite: SipRequest | undefined;
    const calleeTag = b.stack.newTag();
    b.stack.onRequest((req, tx) => {
      invite = req;
      tx.reply(200, 'OK', {
        toTag: calleeTag,
        headers: [
          { name: 'Contact', value: `<${b.stack.contactUri('callee', 'udp')}>` },
          { name: 'Content-Type', value: 'application/sdp' },
        ],
        body: Buffer.from(OFFER),
      });
    });

    let ended: { sipStatus: number | null; reason: string } | undefined;
    let answered = false;
    dialer.dial(
      {
        callId: 'api-1',
        to: '+447000000001',
        from: '+15550001111',
        offerSdp: OFFER,
        endpoint: { host: '127.0.0.1', port: b.transport.port, transport: 'udp' },
      },
      { ringing: () => undefined, answered: () => void (answered = true), ended: (e) => void (ended = e) },
    );
    await until(() => answered, 10_000);
    t.equal(a.stack.dialogCount(), 1, 'the answered leg registered its dialog');

    const d = createUasDialog(invite!, calleeTag, 'udp', b.stack.contactUri('callee', 'udp'));
    const { req, dest } = dialogRequest(d, 'BYE');
    let byeAnswer: number | undefined;
    b.stack.sendRequest(req, dest, {
      onResponse: (r) => void (byeAnswer = r.status),
      onTimeout: () => void (byeAnswer = 0),
    });
    await until(() => byeAnswer !== undefined && ended !== undefined, 10_000);
    t.equal(byeAnswer, 200, 'the dialer answered the BYE');
    t.same(ended, { sipStatus: null, reason: 'the called party hung up' });
    t.equal(outcomes.length, 1);
    t.same(
      chained.filter((r) => tagOf(toOf(r)) !== undefined),
      [],
      'no other user of the stack saw the in-dialog BYE',
    );
    t.equal(a.sent.filter((r) => r.status === 481).length, 0, 'nobody else answered it with 481');
    t.equal(a.stack.dialogCount(), 0, 'the ended leg left the registry');

    const peer = await rawUdpPeer();
    t.teardown(() => peer.close());
    peer.send(bye('unknown-1', a.transport.port, 'notours'), a.transport.port);
    await until(() => peer.got.some((m) => m.startsWith('SIP/2.0 481 ')), 10_000);
    t.equal(a.sent.filter((r) => r.status === 481).length, 1, 'exactly one 481 for a dialog nobody owns');
    t.equal(chained.length, 1, 'the request went down the chain to its end');
  },
);

t.test('an owner hands a request back with next(); an unregistered dialog falls through to the 481', async (t) => {
  const a = await udpStack(t);
  const owned: string[] = [];
  const chained: string[] = [];
  a.stack.onRequest((req, tx, _src, next) => {
    chained.push(req.method);
    if (req.method === 'INFO') return void tx.reply(200, 'OK');
    next();
  });
  const off = a.stack.registerDialog(
    { callId: 'owned-1', localTag: 'ours1', remoteTag: 'peer1' },
    (req, tx, _src, next) => {
      owned.push(req.method);
      if (req.method === 'BYE') return void tx.reply(200, 'OK');
      next();
    },
  );
  const peer = await rawUdpPeer();
  t.teardown(() => peer.close());
  const send = (method: string, branch: string, fromTag = 'peer1') =>
    peer.send(
      bye('owned-1', a.transport.port, 'ours1')
        .replace(/^BYE /, `${method} `)
        .replace('CSeq: 2 BYE', `CSeq: 2 ${method}`)
        .replace('branch=z9hG4bKowned-1', `branch=z9hG4bK${branch}`)
        .replace('tag=peer1', `tag=${fromTag}`),
      a.transport.port,
    );
  const answers = (n: number) => until(() => peer.got.length >= n, 10_000);

  send('INFO', 'b1');
  await answers(1);
  t.match(peer.got[0], /^SIP\/2.0 200 /, 'INFO passed on by the owner, answered down the chain');
  t.same(owned, ['INFO']);
  t.same(chained, ['INFO']);

  send('BYE', 'b2', 'someone-else');
  await answers(2);
  t.match(peer.got[1], /^SIP\/2.0 481 /, 'a dialog id is Call-ID and both tags: another peer tag is another dialog');
  t.same(owned, ['INFO'], 'the owner did not see it');

  send('BYE', 'b3');
  await answers(3);
  t.match(peer.got[2], /^SIP\/2.0 200 /, 'the owner answered its BYE');
  t.same(chained, ['INFO', 'BYE'], 'and the chain never saw it');

  off();
  send('BYE', 'b4');
  await answers(4);
  t.match(peer.got[3], /^SIP\/2.0 481 /, 'once unregistered, the dialog is unknown');
  t.equal(a.sent.filter((r) => r.status === 481).length, 2);
});
