import t from 'tap';
import { pino } from 'pino';
import { createMediaPool } from '../../../src/telephony/media/pool.js';
import type { MediaSession } from '../../../src/telephony/media/pool.js';
import { createTts } from '../../../src/telephony/media/tts.js';
import { createMp3Decoder } from '../../../src/telephony/media/mp3.js';
import { createPromptRenderer, runActions } from '../../../src/telephony/media/actions.js';
import type { ActionClock, CallAction, GatherResult } from '../../../src/telephony/media/actions.js';
import type { RtpPacket } from '../../../src/telephony/media/rtp.js';
import { createRtpPeer } from './helpers/rtp-peer.js';
import type { RtpPeer } from './helpers/rtp-peer.js';
import { mpegLayer1Tone } from './helpers/mpeg-layer1.js';

const log = pino({ level: 'silent' });
const PORT_MIN = 46000 + (process.pid % 40) * 100;
// Gather timeouts and pauses run ten times faster; the RTP clock stays real.
const fastClock: ActionClock = {
  setTimeout: (fn, ms) => setTimeout(fn, ms / 10),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

const pool = createMediaPool({ workers: 1, portMin: PORT_MIN, portMax: PORT_MIN + 99, bindAddress: '127.0.0.1', log });
const tts = createTts({ log, cacheDir: null });
const mp3 = createMp3Decoder({ log });
const renderer = createPromptRenderer({ tts, mp3 });
t.teardown(async () => {
  await pool.close();
  await mp3.close();
});

async function call(
  t: { teardown(fn: () => unknown): void },
  codec: 'PCMU' | 'PCMA' = 'PCMU',
): Promise<{ session: MediaSession; peer: RtpPeer }> {
  const peer = await createRtpPeer();
  t.teardown(() => peer.close());
  const session = await pool.openSession({ codec });
  t.teardown(() => session.close());
  session.acceptAnswer(peer.answerSdp(codec));
  return { session, peer };
}

/** Index of the packet where `audio` starts, with all of it following in order, or -1. */
function findAudio(packets: RtpPacket[], audio: Uint8Array, codecPt: number): number {
  const media = packets.filter((p) => p.payloadType === codecPt);
  const frames = Math.ceil(audio.length / 160);
  outer: for (let k = 0; k + frames <= media.length; k++) {
    for (let f = 0; f < frames; f++) {
      const want = audio.subarray(f * 160, f * 160 + 160);
      const got = media[k + f]?.payload ?? new Uint8Array(0);
      for (let i = 0; i < want.length; i++) if (got[i] !== want[i]) continue outer;
    }
    return k;
  }
  return -1;
}

const nonSilent =
  (codecSilence: number) =>
  (p: RtpPacket): boolean =>
    p.payload.some((b) => Math.abs(b - codecSilence) > 2);

t.test('say then play: the peer receives exactly the rendered G.711, in order, each frame 20 ms', async (t) => {
  const { session, peer } = await call(t, 'PCMA');
  const tone = mpegLayer1Tone(50); // 0.4 s
  // Decoded before the call as the engine does before dialling (the renderer keeps the result).
  const played = await renderer.play(tone, 'PCMA');
  const actions: CallAction[] = [{ say: 'Welcome to the exchange' }, { play: tone }];
  const outcome = await runActions({ media: session, actions, renderer, clock: fastClock });
  t.same(outcome, { status: 'completed', gathered: [] });
  const spoken = await renderer.say('Welcome to the exchange', 'en', 'PCMA');
  t.ok(spoken.length > 8000, `say rendered ${spoken.length} samples`);
  t.ok(Math.abs(played.length - 3200) <= 160, `play rendered ${played.length} samples`);
  const sayFrames = Math.ceil(spoken.length / 160);
  const playArrived = (p: RtpPacket[]): boolean => {
    const at = findAudio(p, spoken, 8);
    return at >= 0 && findAudio(p.slice(at + sayFrames), played, 8) >= 0;
  };
  await peer.waitFor(playArrived, 3000).catch(() => undefined);
  const packets = peer.packets.filter((p) => p.payloadType === 8);
  t.ok(
    packets.every((p) => p.payload.length === 160),
    'every packet carries one 20 ms PCMA frame',
  );
  const sayAt = findAudio(packets, spoken, 8);
  t.ok(sayAt >= 0, 'the whole say prompt arrived intact');
  const playAt = findAudio(packets.slice(sayAt + sayFrames), played, 8);
  // The next prompt is queued when the worker reports the previous one sent: usually no gap,
  // but a starved machine may delay that round trip by a few frames.
  const gap = playAt;
  t.ok(gap >= 0 && gap <= 25, `play follows the say (gap ${gap} frames)`);
});

async function gatherCall(
  t: { teardown(fn: () => unknown): void },
  spec: Extract<CallAction, { gather: unknown }>['gather'],
  press: (peer: RtpPeer, port: number) => Promise<void>,
): Promise<{ results: GatherResult[]; outcome: Awaited<ReturnType<typeof runActions>>; peer: RtpPeer }> {
  const { session, peer } = await call(t);
  const results: GatherResult[] = [];
  const running = runActions({
    media: session,
    actions: [{ gather: spec }],
    renderer,
    clock: fastClock,
    onGathered: (r) => results.push(r),
  });
  await press(peer, session.localPort);
  const outcome = await running;
  return { results, outcome, peer };
}

t.test('gather with the finish key: digits without the key, the prompt cut short', async (t) => {
  const prompt = 'Please enter your four digit PIN followed by the hash key';
  const full = await renderer.say(prompt, 'en', 'PCMU');
  const { outcome, results, peer } = await gatherCall(
    t,
    { digits: 4, finishOnKey: '#', timeout: 5, say: prompt },
    async (peer, port) => {
      await peer.waitFor((p) => p.filter(nonSilent(0xff)).length >= 10);
      // '7' arrives end-first, '3' has a duplicated start, '#' is plain.
      peer.pressKey(port, '7', { timestamp: 8000, sequence: 100, order: [4, 2, 0, 1, 3] });
      peer.pressKey(port, '3', { timestamp: 9600, sequence: 105, order: [0, 0, 1, 2, 3, 4] });
      peer.pressKey(port, '#', { timestamp: 11200, sequence: 110 });
    },
  );
  t.same(outcome, { status: 'completed', gathered: [{ index: 0, digits: '73', status: 'received' }] });
  t.same(results, outcome.gathered, 'gathered event emitted');
  const audioFrames = peer.packets.filter(nonSilent(0xff)).length;
  t.ok(
    audioFrames < full.length / 160 - 20,
    `prompt interrupted (${audioFrames} of ${Math.ceil(full.length / 160)} frames)`,
  );
});

t.test('gather without a finish key ends at the digit count; "#" is then a digit', async (t) => {
  const { outcome } = await gatherCall(t, { digits: 3, finishOnKey: '' }, async (peer, port) => {
    await peer.waitFor((p) => p.length >= 3);
    peer.pressKey(port, '1', { timestamp: 100, sequence: 1 });
    peer.pressKey(port, '#', { timestamp: 2000, sequence: 6 });
    peer.pressKey(port, '1', { timestamp: 4000, sequence: 11, order: [0, 1, 2, 2, 2, 3, 4] }); // same key again, new timestamp
    peer.pressKey(port, '9', { timestamp: 6000, sequence: 16 }); // after the gather completed
  });
  t.same(outcome.gathered, [{ index: 0, digits: '1#1', status: 'received' }]);
});

t.test('no input on every try: prompt repeated per try, digits null, status no_input', async (t) => {
  const prompt = 'Press one';
  const rendered = await renderer.say(prompt, 'en', 'PCMU');
  const { outcome, peer } = await gatherCall(t, { tries: 2, timeout: 1, say: prompt }, async () => undefined);
  t.same(outcome.gathered, [{ index: 0, digits: null, status: 'no_input' }]);
  const first = findAudio(peer.packets, rendered, 0);
  t.ok(first >= 0, 'first try played the whole prompt');
  const second = findAudio(peer.packets.slice(first + 1), rendered, 0);
  t.ok(second >= 0, 'second try played it again');
});

t.test('a key on the second try is received; a finish key alone is no input for that try', async (t) => {
  const { session, peer } = await call(t);
  const tries: number[] = [];
  const running = runActions({
    media: session,
    actions: [{ gather: { tries: 3, timeout: 2, digits: 2 } }, { gather: { tries: 1, timeout: 1 } }],
    renderer,
    clock: fastClock,
    onGathered: (r) => tries.push(r.index),
  });
  await peer.waitFor((p) => p.length >= 2);
  peer.pressKey(session.localPort, '#', { timestamp: 500, sequence: 1 });
  await peer.waitFor((p) => p.length >= 5);
  peer.pressKey(session.localPort, '5', { timestamp: 900, sequence: 10 });
  const outcome = await running;
  t.same(outcome.gathered, [
    { index: 0, digits: '5', status: 'received' },
    { index: 1, digits: null, status: 'no_input' },
  ]);
  t.same(tries, [0, 1]);
});

t.test('pause, then hangup ends the script before later actions', async (t) => {
  const { session, peer } = await call(t);
  const started = performance.now();
  const outcome = await runActions({
    media: session,
    actions: [{ pause: 2 }, { hangup: true }, { say: 'never spoken' }],
    renderer,
    clock: fastClock,
  });
  const elapsed = performance.now() - started;
  t.same(outcome, { status: 'hangup', gathered: [] });
  t.ok(elapsed >= 190, `pause waited (${elapsed.toFixed(0)} ms at 10× speed)`);
  await peer.waitFor((p) => p.length >= 3);
  t.ok(
    peer.packets.every((p) => p.payload.every((b) => b === 0xff)),
    'only silence was sent',
  );
});

t.test('aborting (call ended) stops a gather at once', async (t) => {
  const { session, peer } = await call(t);
  const ac = new AbortController();
  const running = runActions({
    media: session,
    actions: [{ gather: { timeout: 30, say: 'Please wait for the menu' } }, { say: 'x' }],
    renderer,
    signal: ac.signal,
  });
  await peer.waitFor((p) => p.filter(nonSilent(0xff)).length >= 3);
  ac.abort();
  t.same(await running, { status: 'aborted', gathered: [] });
});
