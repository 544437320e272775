/**
 * What a finished trunk call leaves on the heap while its transactions run out their timers (Timer
 * M, L and J: 64·T1, 32 s on UDP). At 1,000 calls/s that is the live set of 32,000 calls, which every
 * old-space collection marks (issue 26: the SIP ladder's p99 spikes were mark-compacts of it).
 *
 * Calls go through an in-process trunk B2BUA between two raw UDP peers (caller INVITE with SDP,
 * supplier 200 with SDP, ACK, caller BYE, supplier 200), on a hand-moved scheduler: after the calls
 * end, time moves past T4 (Timers K and I) but not to 64·T1. Heap after a full collection, per call;
 * then after 64·T1, where nothing should be left. Then INVITEs the plan refuses (404), each ACKed
 * as a caller ACKs the 401 every digest call gets first: heap per refused INVITE until Timer I (T4).
 * Deterministic: no rate, no load sensitivity. BENCH_HEAP_PROF (bench/lib/cpu-profile.ts) samples
 * what the measured calls allocate (or, with BENCH_HEAP_PROMOTED=1, what of it outlives a scavenge).
 * Usage: node --import tsx bench/sip/call-retention.bench.ts [calls=4000]
 */
import dgram from 'node:dgram';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createTrunkB2bua } from '../../src/telephony/sip/b2bua/index.js';
import {
  createResponse,
  cseqOf,
  getHeader,
  serialize,
  tagOf,
  toOf,
  type SipMessage,
} from '../../src/telephony/sip/message.js';
import { parseMessage } from '../../src/telephony/sip/parser.js';
import { createSipStack } from '../../src/telephony/sip/stack.js';
import { DEFAULT_TIMERS } from '../../src/telephony/sip/transaction.js';
import { createSipTransport } from '../../src/telephony/sip/transport.js';
import { systemClock } from '../../src/platform/clock.js';
import { createFakeTimers, silentLog } from '../../test/telephony/sip/helpers.js';
import { startCpuProfile } from '../lib/cpu-profile.js';

const [calls = 4000] = process.argv.slice(2).map(Number);
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const { t1, t4 } = DEFAULT_TIMERS;

const SDP =
  'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0 8 101\r\n' +
  'a=rtpmap:0 PCMU/8000\r\na=rtpmap:8 PCMA/8000\r\na=rtpmap:101 telephone-event/8000\r\n';

const timers = createFakeTimers();
const transport = await createSipTransport({ host: '127.0.0.1', port: 0, log: silentLog });
const stack = createSipStack({ transport, log: silentLog, timers });
const udp = () =>
  new Promise<dgram.Socket>((r) => {
    const s = dgram.createSocket('udp4');
    s.bind(0, '127.0.0.1', () => r(s));
  });
const caller = await udp();
const supplier = await udp();
const callerPort = caller.address().port;
const supplierPort = supplier.address().port;
let ended = 0;
createTrunkB2bua({
  stack,
  log: silentLog,
  clock: systemClock,
  realm: 'bench.exchange.test',
  nonceSecret: 'bench-secret',
  setupTimeoutMs: 4000,
  policy: {
    resolveByIp: async () => ({ accountId: 'acc_bench' }),
    lookupSipUser: async () => null,
    planCall: async (c) =>
      c.callId.startsWith('refused')
        ? { reject: { status: 404, reason: 'Not Found' } }
        : {
            callGroupId: 'cg-bench',
            maxDurationSeconds: 3600,
            candidates: [
              {
                routeId: 'r1',
                endpoints: [{ host: '127.0.0.1', port: supplierPort, transport: 'udp', priority: 1, weight: 1 }],
              },
            ],
          },
    onCallEnded: () => void ended++,
  },
});

const toB2bua = (s: dgram.Socket, m: SipMessage | string) =>
  s.send(typeof m === 'string' ? Buffer.from(m.replace(/\r?\n/g, '\r\n')) : serialize(m), transport.port, '127.0.0.1');
const fromCaller = (id: string, method: string, seq: number, toTag = '', body = '', branchOf = method) =>
  toB2bua(
    caller,
    `${method} sip:${method === 'INVITE' ? '12025550123' : 'b2bua'}@127.0.0.1:${transport.port} SIP/2.0
Via: SIP/2.0/UDP 127.0.0.1:${callerPort};branch=z9hG4bK-${id}-${branchOf}-${seq};rport
From: "Caller" <sip:15550001111@127.0.0.1>;tag=c-${id}
To: <sip:12025550123@127.0.0.1>${toTag ? `;tag=${toTag}` : ''}
Call-ID: ${id}@bench.exchange.test
CSeq: ${seq} ${method}
Max-Forwards: 70
User-Agent: call-retention bench${method === 'INVITE' ? `\nContact: <sip:caller@127.0.0.1:${callerPort}>\nContent-Type: application/sdp` : ''}
Content-Length: ${Buffer.byteLength(body)}

${body}`,
  );
supplier.on('message', (b) => {
  const m = parseMessage(b);
  if (m.kind !== 'request') return;
  if (m.method === 'INVITE') {
    const contact = { name: 'Contact', value: `<sip:uas@127.0.0.1:${supplierPort}>` };
    const type = { name: 'Content-Type', value: 'application/sdp' };
    const toTag = `s${cseqOf(m).seq}${Math.random().toString(36).slice(2, 10)}`;
    toB2bua(supplier, createResponse(m, 200, 'OK', { toTag, headers: [contact, type], body: Buffer.from(SDP) }));
  } else if (m.method === 'BYE') toB2bua(supplier, createResponse(m, 200, 'OK'));
});
let refusedAcked = 0;
caller.on('message', (b) => {
  const m = parseMessage(b);
  if (m.kind !== 'response' || cseqOf(m).method !== 'INVITE') return;
  const id = (getHeader(m, 'call-id') ?? '').split('@')[0] ?? '';
  if (m.status >= 300) {
    // The ACK of a non-2xx final is part of the INVITE's transaction: its branch (RFC 3261 §17.1.1.3).
    fromCaller(id, 'ACK', 1, tagOf(toOf(m)), '', 'INVITE');
    refusedAcked++;
    return;
  }
  if (m.status !== 200) return;
  fromCaller(id, 'ACK', 1, tagOf(toOf(m)));
  // A call of the `live` run stays up until the bench hangs it up (`hangUpLive`).
  if (id.startsWith('live')) {
    // Copied, so the bench does not keep the 200's header text alive (a tag is a slice of it).
    if (!liveTags.has(id)) liveTags.set(id, Buffer.from(tagOf(toOf(m)) ?? '').toString());
    return;
  }
  fromCaller(id, 'BYE', 2, tagOf(toOf(m)));
});
const liveTags = new Map<string, string>();

/** `n` calls, at most 100 in setup at once, until every one has ended. */
async function run(n: number, prefix: string): Promise<void> {
  const target = ended + n;
  for (let i = 0; i < n; i++) {
    fromCaller(`${prefix}${i}`, 'INVITE', 1, '', SDP);
    while (target - n + i - ended > 100) await new Promise((r) => setImmediate(r));
  }
  const until = Date.now() + 30_000;
  while (ended < target && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
  // The supplier's answer to the last BYE is on its way.
  await new Promise((r) => setTimeout(r, 200));
  if (ended < target) throw new Error(`${target - ended} calls did not end`);
}
const heapUsed = async (): Promise<number> => {
  for (let i = 0; i < 3; i++) {
    await new Promise((r) => setImmediate(r));
    gc();
  }
  return process.memoryUsage().heapUsed;
};

try {
  await run(500, 'warm');
  timers.advance(64 * t1 + 1);
  const base = await heapUsed();
  const prof = await startCpuProfile();
  await run(calls, 'call');
  await prof.stop();
  timers.advance(t4 + 1);
  const held = await heapUsed();
  timers.advance(64 * t1);
  const after = await heapUsed();
  const kib = (bytes: number) => (bytes / calls / 1024).toFixed(2);
  console.log(
    `sip heap kept per ended call while its transactions live (64·T1): ${kib(held - base)} KiB (${calls} calls)`,
  );
  console.log(`sip heap kept per ended call after 64·T1: ${kib(after - base)} KiB`);

  // Answered calls still up (no BYE yet), past Timer L of their INVITE transactions (64·T1): what a
  // call in progress keeps for its whole life, which every old-space collection marks while it lasts.
  const beforeLive = await heapUsed();
  for (let i = 0; i < calls; i++) {
    fromCaller(`live${i}`, 'INVITE', 1, '', SDP);
    while (i - liveTags.size > 100) await new Promise((r) => setImmediate(r));
  }
  const liveUntil = Date.now() + 30_000;
  while (liveTags.size < calls && Date.now() < liveUntil) await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 200));
  timers.advance(64 * t1 + 1);
  const live = await heapUsed();
  console.log(
    `sip heap kept per answered call still up (past 64·T1): ${kib(live - beforeLive)} KiB (${liveTags.size} calls)`,
  );
  const endedBefore = ended;
  let byes = 0;
  for (const [id, tag] of liveTags) {
    fromCaller(id, 'BYE', 2, tag);
    byes++;
    while (byes - (ended - endedBefore) > 100) await new Promise((r) => setImmediate(r));
  }
  const target = endedBefore + liveTags.size;
  const byeUntil = Date.now() + 30_000;
  while (ended < target && Date.now() < byeUntil) await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 200));
  timers.advance(64 * t1 + 1);
  const afterLive = await heapUsed();

  for (let i = 0; i < calls; i++) {
    fromCaller(`refused${i}`, 'INVITE', 1, '', SDP);
    while (i - refusedAcked > 100) await new Promise((r) => setImmediate(r));
  }
  const until = Date.now() + 30_000;
  while (refusedAcked < calls && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
  // The last ACKs are on their way.
  await new Promise((r) => setTimeout(r, 200));
  const refused = await heapUsed();
  timers.advance(t4 + 1);
  const refusedAfter = await heapUsed();
  console.log(
    `sip heap kept per refused and ACKed INVITE to Timer I (T4): ${kib(refused - afterLive)} KiB (${refusedAcked} ACKed); after T4: ${kib(refusedAfter - afterLive)} KiB`,
  );
} finally {
  await stack.close();
  caller.close();
  supplier.close();
}
