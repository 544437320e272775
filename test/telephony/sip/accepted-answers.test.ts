/**
 * An INVITE's Accepted state (RFC 6026) after its TU has ACKed the first 2xx: the stack re-ACKs that
 * 2xx's retransmissions and ACKs and hangs up another fork's 2xx (RFC 3261 §13.2.2.4) by itself, so
 * the TU, and the call it belongs to, can be collected while Timer M still runs.
 */
import t from 'tap';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createSipTransport, type SipPeer } from '../../../src/telephony/sip/transport.js';
import { createSipStack, type SipStack } from '../../../src/telephony/sip/stack.js';
import { createUacDialog, dialogRequest } from '../../../src/telephony/sip/dialog.js';
import { parseMessage } from '../../../src/telephony/sip/parser.js';
import {
  createResponse,
  getHeader,
  serialize,
  tagOf,
  toOf,
  type SipRequest,
  type SipResponse,
} from '../../../src/telephony/sip/message.js';
import type { ClientTransaction, ClientTransactionHandlers } from '../../../src/telephony/sip/transaction.js';
import { createTrunkB2bua, type CallEndedEvent } from '../../../src/telephony/sip/b2bua/index.js';
import { systemClock } from '../../../src/platform/clock.js';
import { createFakeTimers, rawUdpPeer, silentLog, stackWithPeer, until } from './helpers.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** True once nothing but `ref` points at its target: a full collection after the current job ends. */
async function collected(ref: WeakRef<object>): Promise<boolean> {
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setImmediate(r));
    gc();
    if (ref.deref() === undefined) return true;
  }
  return false;
}

type Peer = Awaited<ReturnType<typeof rawUdpPeer>>;

const parsed = (text: string) => parseMessage(Buffer.from(text, 'utf8'));
const requests = (peer: Peer, method: string): SipRequest[] =>
  peer.got.map(parsed).filter((m): m is SipRequest => m.kind === 'request' && m.method === method);

/** A 2xx from the raw peer: this fork's To tag, its Contact at the peer. */
function answer(peer: Peer, invite: SipRequest, toTag: string): string {
  const res = createResponse(invite, 200, 'OK', {
    toTag,
    headers: [{ name: 'Contact', value: `<sip:uas@127.0.0.1:${peer.port}>` }],
  });
  return serialize(res).toString('utf8');
}

/**
 * Sends an INVITE for a TU built here, so that only the handlers' closures hold its state: a
 * WeakRef to that state tells whether the transaction still keeps the TU alive.
 */
function inviteFromTu(
  stack: SipStack,
  req: SipRequest,
  dest: SipPeer,
): { tx: ClientTransaction; ref: WeakRef<object>; seen: number[] } {
  const seen: number[] = [];
  const state = { seen, big: Buffer.alloc(64 * 1024) };
  const handlers: ClientTransactionHandlers = {
    onResponse: (res: SipResponse, tx: ClientTransaction) => {
      state.seen.push(res.status);
      if (res.status < 200 || res.status >= 300) return;
      const d = createUacDialog(tx.request, res, 'udp', stack.contactUri('tu', 'udp'));
      const ack = dialogRequest(d, 'ACK', { cseq: 1 });
      void stack.sendAck(ack.req, ack.dest, tx);
    },
    onTimeout: () => state.seen.push(0),
  };
  return { tx: stack.sendRequest(req, dest, handlers), ref: new WeakRef(state), seen };
}

t.test('after the first ACK the stack re-ACKs retransmissions and hangs up another fork', async (t) => {
  const { stack: a, timers, peer } = await stackWithPeer(t);
  const req: SipRequest = {
    kind: 'request',
    method: 'INVITE',
    uri: `sip:bob@127.0.0.1:${peer.port}`,
    version: 'SIP/2.0',
    headers: [
      { name: 'From', value: `<sip:alice@127.0.0.1>;tag=${a.newTag()}` },
      { name: 'To', value: '<sip:bob@127.0.0.1>' },
      { name: 'Call-ID', value: a.newCallId() },
      { name: 'CSeq', value: '1 INVITE' },
      { name: 'Max-Forwards', value: '70' },
    ],
    body: Buffer.alloc(0),
  };
  const { tx, ref, seen } = inviteFromTu(a, req, { transport: 'udp', host: '127.0.0.1', port: peer.port });
  await until(() => requests(peer, 'INVITE').length === 1);
  const invite = requests(peer, 'INVITE')[0]!;

  peer.send(answer(peer, invite, 'fork1'), a.transport.port);
  await until(() => requests(peer, 'ACK').length === 1);
  t.same(seen, [200], 'the first 2xx reached the TU, which ACKed it');
  t.ok(await collected(ref), "the transaction holds nothing of the TU's once it has ACKed");
  t.equal(tx.state, 'accepted', 'while Timer M still runs');

  peer.send(answer(peer, invite, 'fork1'), a.transport.port);
  await until(() => requests(peer, 'ACK').length === 2);
  const [first, again] = peer.got.filter((m) => m.startsWith('ACK '));
  t.equal(again, first, 'a retransmitted 2xx gets the same ACK again, from the stack');

  peer.send(answer(peer, invite, 'fork2'), a.transport.port);
  await until(() => requests(peer, 'BYE').length === 1);
  const acks = requests(peer, 'ACK');
  t.equal(acks.length, 3);
  t.equal(tagOf(toOf(acks[2]!)), 'fork2', "another fork's 2xx is ACKed in its own dialog");
  const bye = requests(peer, 'BYE')[0]!;
  t.equal(tagOf(toOf(bye)), 'fork2', 'and hung up in it');
  t.equal(bye.uri, `sip:uas@127.0.0.1:${peer.port}`, "sent to that fork's Contact");
  t.equal(getHeader(bye, 'call-id'), getHeader(invite, 'call-id'));

  peer.send(answer(peer, invite, 'fork2'), a.transport.port);
  await until(() => requests(peer, 'ACK').length === 4);
  t.equal(tagOf(toOf(requests(peer, 'ACK')[3]!)), 'fork2', "that fork's retransmission is ACKed again");
  t.equal(requests(peer, 'BYE').length, 1, 'and not hung up twice');

  timers.advance(64 * 500);
  t.equal(tx.state, 'terminated', 'Timer M ends the transaction');
});

/** A trunk B2BUA between two raw UDP peers, the caller whitelisted; `refs` follow each call's graph. */
async function trunk(t: { teardown(fn: () => Promise<void>): void }) {
  const timers = createFakeTimers();
  const transport = await createSipTransport({ host: '127.0.0.1', port: 0, log: silentLog });
  const stack = createSipStack({ transport, log: silentLog, timers });
  const caller = await rawUdpPeer();
  const supplier = await rawUdpPeer();
  t.teardown(async () => {
    await stack.close();
    await caller.close();
    await supplier.close();
  });
  const refs: Array<WeakRef<object>> = [];
  const ended: CallEndedEvent[] = [];
  createTrunkB2bua({
    stack,
    log: silentLog,
    clock: systemClock,
    realm: 'sip.exchange.test',
    nonceSecret: 'test-secret',
    setupTimeoutMs: 4000,
    policy: {
      resolveByIp: async () => ({ accountId: 'acc_operator' }),
      lookupSipUser: async () => null,
      planCall: async () => {
        // Only the call keeps these candidates: their WeakRef follows the call's graph.
        const candidates = [
          {
            routeId: 'r1',
            endpoints: [{ host: '127.0.0.1', port: supplier.port, transport: 'udp' as const, priority: 1, weight: 1 }],
          },
        ];
        refs.push(new WeakRef(candidates));
        return { callGroupId: 'cg-1', maxDurationSeconds: 3600, candidates };
      },
      onCallEnded: (e) => void ended.push(e),
    },
  });
  const port = transport.port;
  /** A request from the caller in call `callId`; an INVITE carries its Contact. */
  const fromCaller = (method: string, seq: number, toTag = '', branch = `${method}-${seq}`) =>
    caller.send(
      `${method} sip:${method === 'INVITE' ? '12025550123' : 'b2bua'}@127.0.0.1:${port} SIP/2.0
Via: SIP/2.0/UDP 127.0.0.1:${caller.port};branch=z9hG4bK-${branch};rport
From: <sip:15550001111@127.0.0.1>;tag=caller1
To: <sip:12025550123@127.0.0.1>${toTag ? `;tag=${toTag}` : ''}
Call-ID: accepted-call-1
CSeq: ${seq} ${method}
Max-Forwards: 70${method === 'INVITE' ? `\nContact: <sip:caller@127.0.0.1:${caller.port}>` : ''}
Content-Length: 0

`,
      port,
    );
  return { port, caller, supplier, refs, ended, fromCaller };
}

t.test("a trunk call is collectable once it has ended, while its supplier INVITE's Timer M runs", async (t) => {
  const { port, caller, supplier, refs, ended, fromCaller } = await trunk(t);
  fromCaller('INVITE', 1);
  await until(() => requests(supplier, 'INVITE').length === 1);
  const invite = requests(supplier, 'INVITE')[0]!;
  supplier.send(answer(supplier, invite, 'sup1'), port);
  await until(() => requests(supplier, 'ACK').length === 1);
  await until(() => caller.got.some((m) => m.startsWith('SIP/2.0 200 ')));
  const ourTag = tagOf(toOf(parsed(caller.got.find((m) => m.startsWith('SIP/2.0 200 '))!)))!;
  fromCaller('ACK', 1, ourTag);
  fromCaller('BYE', 2, ourTag);
  await until(() => requests(supplier, 'BYE').length === 1);
  const bye = requests(supplier, 'BYE')[0]!;
  supplier.send(serialize(createResponse(bye, 200, 'OK')).toString('utf8'), port);
  await until(() => ended.length === 1);
  t.equal(ended[0]?.hangupCause, 'caller-bye');

  t.equal(refs.length, 1);
  t.ok(await collected(refs[0]!), 'nothing keeps the ended call alive');

  supplier.send(answer(supplier, invite, 'sup1'), port);
  await until(() => requests(supplier, 'ACK').length === 2);
  const [first, again] = supplier.got.filter((m) => m.startsWith('ACK '));
  t.equal(again, first, "the supplier's retransmitted 2xx gets the same ACK again");
  supplier.send(answer(supplier, invite, 'sup2'), port);
  await until(() => requests(supplier, 'BYE').length === 2);
  t.equal(tagOf(toOf(requests(supplier, 'ACK')[2]!)), 'sup2', "a second fork's 2xx is ACKed in its dialog");
  t.equal(tagOf(toOf(requests(supplier, 'BYE')[1]!)), 'sup2', 'and hung up');
  t.equal(caller.got.filter((m) => m.startsWith('BYE ')).length, 0, 'the caller hears nothing of it');
});

t.test('an answer that crosses the CANCEL is ACKed and hung up once, its retransmissions ACKed', async (t) => {
  const { port, caller, supplier, refs, ended, fromCaller } = await trunk(t);
  fromCaller('INVITE', 1);
  await until(() => requests(supplier, 'INVITE').length === 1);
  const invite = requests(supplier, 'INVITE')[0]!;
  supplier.send(serialize(createResponse(invite, 180, 'Ringing', { toTag: 'sup1' })).toString('utf8'), port);
  await until(() => caller.got.some((m) => m.startsWith('SIP/2.0 180 ')));
  fromCaller('CANCEL', 1, '', 'INVITE-1');
  await until(() => requests(supplier, 'CANCEL').length === 1);
  await until(() => ended.length === 1);
  t.equal(ended[0]?.hangupCause, 'caller-cancel');

  supplier.send(answer(supplier, invite, 'sup1'), port);
  await until(() => requests(supplier, 'BYE').length === 1);
  t.equal(requests(supplier, 'ACK').length, 1, 'the late answer is ACKed');
  t.equal(tagOf(toOf(requests(supplier, 'BYE')[0]!)), 'sup1', 'and hung up');
  t.ok(await collected(refs[0]!), 'the cancelled call is not kept for it');
  supplier.send(answer(supplier, invite, 'sup1'), port);
  await until(() => requests(supplier, 'ACK').length === 2);
  t.equal(requests(supplier, 'BYE').length, 1, 'a retransmission is ACKed, not hung up again');
});
