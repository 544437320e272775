/**
 * What an answered trunk call still does from what it keeps: the B2BUA lets go of the caller's
 * INVITE (and its own leg's) once the call is answered, keeping only the caller's Allow, which
 * decides how it refreshes a session it is the refresher of (RFC 4028 §7.4: UPDATE when allowed).
 */
import t from 'tap';
import { createSipTransport } from '../../../src/telephony/sip/transport.js';
import { createSipStack } from '../../../src/telephony/sip/stack.js';
import { parseMessage } from '../../../src/telephony/sip/parser.js';
import {
  createResponse,
  getHeader,
  serialize,
  tagOf,
  toOf,
  type SipRequest,
} from '../../../src/telephony/sip/message.js';
import { createTrunkB2bua } from '../../../src/telephony/sip/b2bua/index.js';
import { refreshMs } from '../../../src/telephony/sip/session-timer.js';
import { systemClock } from '../../../src/platform/clock.js';
import { createFakeTimers, rawUdpPeer, silentLog, until } from './helpers.js';

const parsed = (text: string) => parseMessage(Buffer.from(text, 'utf8'));
type Peer = Awaited<ReturnType<typeof rawUdpPeer>>;
const requests = (peer: Peer, method: string): SipRequest[] =>
  peer.got.map(parsed).filter((m): m is SipRequest => m.kind === 'request' && m.method === method);

async function answeredCall(t: { teardown(fn: () => Promise<void>): void }, allow: string) {
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
      planCall: async () => ({
        callGroupId: 'cg-1',
        maxDurationSeconds: 3600,
        candidates: [
          {
            routeId: 'r1',
            endpoints: [{ host: '127.0.0.1', port: supplier.port, transport: 'udp' as const, priority: 1, weight: 1 }],
          },
        ],
      }),
      onCallEnded: () => undefined,
    },
  });
  const port = transport.port;
  const fromCaller = (method: string, seq: number, toTag = '') =>
    caller.send(
      `${method} sip:${method === 'INVITE' ? '12025550123' : 'b2bua'}@127.0.0.1:${port} SIP/2.0
Via: SIP/2.0/UDP 127.0.0.1:${caller.port};branch=z9hG4bK-${method}-${seq};rport
From: <sip:15550001111@127.0.0.1>;tag=caller1
To: <sip:12025550123@127.0.0.1>${toTag ? `;tag=${toTag}` : ''}
Call-ID: answered-call-1
CSeq: ${seq} ${method}
Max-Forwards: 70${method === 'INVITE' ? `\nContact: <sip:caller@127.0.0.1:${caller.port}>\nAllow: ${allow}\nSupported: timer\nSession-Expires: 1800;refresher=uas` : ''}
Content-Length: 0

`,
      port,
    );
  fromCaller('INVITE', 1);
  await until(() => requests(supplier, 'INVITE').length === 1);
  const invite = requests(supplier, 'INVITE')[0]!;
  const res = createResponse(invite, 200, 'OK', {
    toTag: 'sup1',
    headers: [{ name: 'Contact', value: `<sip:uas@127.0.0.1:${supplier.port}>` }],
  });
  supplier.send(serialize(res).toString('utf8'), port);
  await until(() => caller.got.some((m) => m.startsWith('SIP/2.0 200 ')));
  const ok = parsed(caller.got.find((m) => m.startsWith('SIP/2.0 200 '))!);
  fromCaller('ACK', 1, tagOf(toOf(ok)));
  // Past Timer L of the caller's INVITE transaction: nothing but the call holds what it kept.
  await new Promise((r) => setTimeout(r, 50));
  timers.advance(64 * 500 + 1);
  return { timers, caller, ok };
}

t.test('a caller that allows UPDATE is refreshed by UPDATE, after its INVITE was let go', async (t) => {
  const { timers, caller, ok } = await answeredCall(t, 'INVITE, ACK, CANCEL, BYE, UPDATE');
  t.equal(getHeader(ok, 'session-expires'), '1800;refresher=uas');
  // The refresh goes unanswered here, so the same advance also runs its retransmissions.
  timers.advance(refreshMs(1800));
  await until(() => requests(caller, 'UPDATE').length > 0);
  const update = requests(caller, 'UPDATE')[0]!;
  t.equal(getHeader(update, 'session-expires'), '1800;refresher=uas');
  t.equal(tagOf(toOf(update)), 'caller1', "in the caller's dialog");
  t.equal(requests(caller, 'INVITE').length, 0);
});

t.test('a caller that does not allow UPDATE is refreshed by re-INVITE', async (t) => {
  const { timers, caller } = await answeredCall(t, 'INVITE, ACK, CANCEL, BYE');
  timers.advance(refreshMs(1800));
  await until(() => requests(caller, 'INVITE').length > 0);
  t.equal(requests(caller, 'UPDATE').length, 0);
});
