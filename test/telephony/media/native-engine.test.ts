import t from 'tap';
import { pino } from 'pino';
import { createMediaPool } from '../../../src/telephony/media/pool.js';
import { createTts } from '../../../src/telephony/media/tts.js';
import { createMp3Decoder } from '../../../src/telephony/media/mp3.js';
import { createPromptRenderer } from '../../../src/telephony/media/actions.js';
import type { ActionClock } from '../../../src/telephony/media/actions.js';
import { causeForStatus, createNativeEngine } from '../../../src/telephony/media/native-engine.js';
import type { DialEvents, DialRequest, SignallingDialer } from '../../../src/telephony/media/native-engine.js';
import type { CallEnd, OriginateRequest } from '../../../src/telephony/engine.js';
import { createRtpPeer } from './helpers/rtp-peer.js';
import type { RtpPeer } from './helpers/rtp-peer.js';

const log = pino({ level: 'silent' });
const PORT_MIN = 50000 + (process.pid % 40) * 100;
const fastClock: ActionClock = {
  setTimeout: (fn, ms) => setTimeout(fn, ms / 10),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

const pool = createMediaPool({
  workers: 1,
  portMin: PORT_MIN,
  portMax: PORT_MIN + 99,
  bindAddress: '127.0.0.1',
  log,
  rtpTimeoutMs: 400,
});
const mp3 = createMp3Decoder({ log });
const renderer = createPromptRenderer({ tts: createTts({ log, cacheDir: null }), mp3 });
t.teardown(async () => {
  await pool.close();
  await mp3.close();
});

/**
 * Stands in for the SIP stack across the SignallingDialer seam: the far end is a real RTP
 * socket, and the test decides when it rings, answers, rejects or hangs up.
 */
function fakeDialer(): {
  dialer: SignallingDialer;
  dialled: Promise<{ request: DialRequest; events: DialEvents }>;
  hangups: () => number;
} {
  let hangups = 0;
  let resolveDial: (v: { request: DialRequest; events: DialEvents }) => void = () => undefined;
  const dialled = new Promise<{ request: DialRequest; events: DialEvents }>((resolve) => {
    resolveDial = resolve;
  });
  return {
    dialer: {
      dial(request, events) {
        resolveDial({ request, events });
        return { hangup: async () => void hangups++ };
      },
    },
    dialled,
    hangups: () => hangups,
  };
}

const request: OriginateRequest = {
  callId: 'call-1',
  to: '+14155550100',
  from: '+14155550101',
  endpoint: { host: '127.0.0.1', port: 5060, transport: 'udp' },
  maxDurationSec: 300,
};

async function peerFor(t: { teardown(fn: () => unknown): void }): Promise<RtpPeer> {
  const peer = await createRtpPeer();
  t.teardown(() => peer.close());
  return peer;
}

t.test('ringing, answer, actions with a gather, then hangup by the platform', async (t) => {
  const peer = await peerFor(t);
  const fake = fakeDialer();
  const engine = createNativeEngine({ pool, dialer: fake.dialer, renderer, log, clock: fastClock });
  const call = engine.originate(request);
  const events: string[] = [];
  call.on('ringing', () => events.push('ringing'));
  call.on('answered', () => events.push('answered'));
  call.on('ended', (e) => events.push(`ended:${e.cause}`));
  await t.rejects(call.speak('too early'), { code: 'MEDIA_SESSION_CLOSED' });
  const { request: dial, events: sip } = await fake.dialled;
  t.equal(dial.to, '+14155550100');
  t.match(dial.offerSdp, /m=audio \d+ RTP\/AVP 0 8 101/);
  const ourPort = Number(/m=audio (\d+)/.exec(dial.offerSdp)?.[1]);
  sip.ringing();
  t.equal(call.state, 'ringing');
  sip.answered(peer.answerSdp('PCMA'));
  t.equal(call.state, 'answered');
  const stopKeepAlive = peer.keepAlive(ourPort);
  t.teardown(stopKeepAlive);
  const gathered: unknown[] = [];
  const running = call.runActions([{ say: 'Enter a digit' }, { gather: { digits: 2, timeout: 5 } }], {
    onGathered: (g) => gathered.push(g),
  });
  await peer.waitFor(
    (p) => p.filter((x) => x.payloadType === 8 && x.payload.some((b) => b !== 0xd5 && b !== 0x55)).length >= 5,
  );
  // A key during the say interrupts it and is dropped; the gather then takes two keys.
  peer.pressKey(ourPort, '1', { timestamp: 100, sequence: 10 });
  // The say is cut short: silence follows. Only then does the gather listen.
  const silent = (x: { payload: Uint8Array }): boolean => x.payload.every((b) => b === 0xd5);
  await peer.waitFor((p) => p.length > 10 && p.slice(-5).every(silent));
  peer.pressKey(ourPort, '4', { timestamp: 2000, sequence: 20, order: [1, 0, 2, 3, 4] });
  peer.pressKey(ourPort, '2', { timestamp: 4000, sequence: 30 });
  const outcome = await running;
  t.same(outcome, { status: 'completed', gathered: [{ index: 0, digits: '42', status: 'received' }] });
  t.same(gathered, outcome.gathered);
  const end = await call.hangup();
  t.match(end, { cause: 'completed', by: 'local', sipStatus: null });
  t.ok(end.answeredAt instanceof Date);
  t.equal(fake.hangups(), 1, 'BYE sent through the signalling leg');
  t.same(events, ['ringing', 'answered', 'ended:completed']);
  t.same(await call.hangup(), end, 'hangup is idempotent');
  t.equal(fake.hangups(), 1);
});

t.test('busy and no answer before answer map from the final status', async (t) => {
  t.equal(causeForStatus(486), 'busy');
  t.equal(causeForStatus(480), 'no_answer');
  t.equal(causeForStatus(503), 'failed');
  const fake = fakeDialer();
  const engine = createNativeEngine({ pool, dialer: fake.dialer, renderer, log, clock: fastClock });
  const call = engine.originate(request);
  const { events: sip } = await fake.dialled;
  sip.ringing();
  sip.ended({ sipStatus: 486, reason: 'Busy Here' });
  const end = await call.ended;
  t.match(end, { cause: 'busy', by: 'remote', sipStatus: 486, answeredAt: null });
  t.equal(fake.hangups(), 0, 'nothing to cancel');
});

t.test('the callee hanging up aborts a running gather', async (t) => {
  const peer = await peerFor(t);
  const fake = fakeDialer();
  const engine = createNativeEngine({ pool, dialer: fake.dialer, renderer, log });
  const call = engine.originate(request);
  const { events: sip } = await fake.dialled;
  sip.answered(peer.answerSdp('PCMU'));
  const running = call.gather({ timeout: 30, tries: 3 });
  await peer.waitFor((p) => p.length >= 3);
  sip.ended({ sipStatus: null, reason: 'BYE from callee' });
  t.same(await running, { index: 0, digits: null, status: 'no_input' });
  t.match(await call.ended, { cause: 'completed', by: 'remote' });
});

t.test('silence from the far end ends the call as a media timeout, and hangs up the leg', async (t) => {
  const peer = await peerFor(t);
  const fake = fakeDialer();
  const engine = createNativeEngine({ pool, dialer: fake.dialer, renderer, log });
  const call = engine.originate(request);
  const { events: sip } = await fake.dialled;
  sip.answered(peer.answerSdp('PCMU'));
  const end: CallEnd = await call.ended; // the peer never sends RTP; the pool's timeout is 400 ms
  t.match(end, { cause: 'media_timeout', by: 'local' });
  t.equal(fake.hangups(), 1);
});

t.test('maxDuration cuts the call off; an unusable answer fails it; close() ends live calls', async (t) => {
  const peer = await peerFor(t);
  const fake = fakeDialer();
  const engine = createNativeEngine({ pool, dialer: fake.dialer, renderer, log, clock: fastClock });
  const call = engine.originate({ ...request, maxDurationSec: 2 });
  const { events: sip } = await fake.dialled;
  const started = performance.now();
  sip.answered(peer.answerSdp('PCMU'));
  const stopKeepAlive = peer.keepAlive(Number(/m=audio (\d+)/.exec((await fake.dialled).request.offerSdp)?.[1]));
  t.teardown(stopKeepAlive);
  t.match(await call.ended, { cause: 'max_duration', by: 'local' });
  t.ok(performance.now() - started >= 190, 'after 2 s at 10× speed');

  const fake2 = fakeDialer();
  const engine2 = createNativeEngine({ pool, dialer: fake2.dialer, renderer, log });
  const call2 = engine2.originate(request);
  const { events: sip2 } = await fake2.dialled;
  sip2.answered(
    peer
      .answerSdp('PCMU')
      .replace(/m=audio (\d+) RTP\/AVP 0 101/, 'm=audio $1 RTP/AVP 18 101')
      .replace('a=rtpmap:0 PCMU/8000', 'a=rtpmap:18 G729/8000'),
  );
  t.match(await call2.ended, { cause: 'failed', reason: 'no common codec' });
  t.equal(fake2.hangups(), 1);

  const fake3 = fakeDialer();
  const engine3 = createNativeEngine({ pool, dialer: fake3.dialer, renderer, log });
  const call3 = engine3.originate(request);
  await fake3.dialled;
  await engine3.close();
  t.match(await call3.ended, { cause: 'cancelled', by: 'local' });
  t.equal(fake3.hangups(), 1, 'CANCEL sent');
});
