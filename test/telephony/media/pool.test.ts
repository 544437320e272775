import t from 'tap';
import { pino } from 'pino';
import { createMediaPool } from '../../../src/telephony/media/pool.js';
import { parseTelephoneEvent } from '../../../src/telephony/media/dtmf.js';
import type { DtmfKey } from '../../../src/telephony/media/dtmf.js';
import { createRtpPeer } from './helpers/rtp-peer.js';

const log = pino({ level: 'silent' });
const PORT_MIN = 41000 + (process.pid % 50) * 100;

// One worker for the file: starting one costs more than everything a test does with it.
const pool = createMediaPool({ workers: 1, portMin: PORT_MIN, portMax: PORT_MIN + 99, bindAddress: '127.0.0.1', log });
t.teardown(() => pool.close());

async function setup(t: { teardown(fn: () => unknown): void }, rtpTimeoutMs?: number) {
  const peer = await createRtpPeer();
  t.teardown(() => peer.close());
  const session = await pool.openSession({ codec: 'PCMU', rtpTimeoutMs });
  t.teardown(() => session.close());
  return { pool, peer, session };
}

t.test('plays queued G.711 at one 20 ms frame per packet, then silence', async (t) => {
  const { peer, session } = await setup(t);
  await pool.stats({ reset: true });
  t.ok(
    session.localPort >= PORT_MIN && session.localPort < PORT_MIN + 100 && session.localPort % 2 === 0,
    'even port in range',
  );
  t.match(session.offerSdp(), new RegExp(`m=audio ${session.localPort} RTP/AVP 0 8 101`));
  session.acceptAnswer(peer.answerSdp('PCMU'));
  const audio = Uint8Array.from({ length: 800 }, (_, i) => (i % 200) + 1); // 5 frames, no 0xff bytes
  const started = performance.now();
  const result = await session.play(audio);
  t.same(result, { interrupted: false });
  const isAudio = (x: { payload: Uint8Array }): boolean => x.payload[0] !== 0xff;
  const packets = await peer.waitFor((p) => p.filter(isAudio).length >= 5 && p.length >= p.findIndex(isAudio) + 8);
  const elapsed = performance.now() - started;
  t.ok(
    packets.every((p) => p.payloadType === 0 && p.payload.length === 160),
    'PCMU, 160 bytes each',
  );
  for (let i = 1; i < packets.length; i++) {
    const a = packets[i - 1];
    const b = packets[i];
    t.equal(((b?.sequence ?? 0) - (a?.sequence ?? 0)) & 0xffff, 1, 'contiguous sequence');
    // +160 per frame; a stall of the worker (> 200 ms, a starved machine) skips frames and the
    // timestamp then jumps by whole frames to stay on real time.
    const step = ((b?.timestamp ?? 0) - (a?.timestamp ?? 0)) >>> 0;
    t.ok(step >= 160 && step % 160 === 0 && step < 8000, `timestamp advances by whole frames (${step})`);
  }
  const start = packets.findIndex((p) => p.payload[0] === 1);
  const sent = Buffer.concat(packets.slice(start, start + 5).map((p) => p.payload));
  t.same(sent, Buffer.from(audio), 'audio arrives intact and in order');
  t.ok(
    packets.slice(start + 5).every((p) => p.payload.every((b) => b === 0xff)),
    'silence after the prompt',
  );
  t.ok(elapsed >= 70, `five frames take about 100 ms of real time (${elapsed.toFixed(0)} ms)`);
  // `packets` is the peer's live list, and silence keeps coming: count what has arrived before the
  // stats are asked for. Packets sent after the worker answers may be read before its answer is.
  const received = packets.length;
  const [stats] = await pool.stats();
  t.ok((stats?.framesSent ?? 0) >= received, `the worker counts every frame the peer got (${received})`);
  t.equal(stats?.sessions, 1);
});

t.test(
  'audio starting on a silent session goes out ahead of its slot, and the stream stays on the clock',
  async (t) => {
    const { peer, session } = await setup(t);
    session.acceptAnswer(peer.answerSdp('PCMU'));
    await peer.waitFor((p) => p.length >= 3);
    const first = peer.packets.length;
    // Each one-frame prompt starts on silence, so each goes out early and its slot is skipped: were
    // the slot not skipped, the timestamps would run a frame (20 ms) ahead of real time per prompt.
    const prompts = 30;
    for (let i = 0; i < prompts; i++) {
      t.same(await session.play(Uint8Array.from({ length: 160 }, () => 0x10 + i)), { interrupted: false });
      await new Promise((r) => setTimeout(r, 3 + (i % 4) * 7));
    }
    await peer.waitFor((p) => p.length >= first + prompts + 5);
    const packets = peer.packets.slice(first);
    const steps = packets.slice(1).map((p, i) => (p.timestamp - packets[i]!.timestamp) >>> 0);
    t.ok(
      steps.every((s) => s >= 160 && s % 160 === 0 && s < 8000),
      'timestamps advance by whole frames: no frame sent twice',
    );
    t.equal(packets.filter((p) => p.payload[0] !== 0xff).length, prompts, 'every prompt frame sent once');
    const last = packets.length - 1;
    const byTimestamp = ((packets[last]!.timestamp - packets[0]!.timestamp) >>> 0) / 8;
    const byArrival = peer.arrivedAt[first + last]! - peer.arrivedAt[first]!;
    t.ok(
      Math.abs(byTimestamp - byArrival) < 100,
      `the timestamps keep to real time (${byTimestamp.toFixed(0)} ms of audio in ${byArrival.toFixed(0)} ms; ` +
        `${prompts} frames ahead would be ${prompts * 20} ms)`,
    );
  },
);

t.test('stop interrupts a prompt; received telephone-events reach onDtmf once each', async (t) => {
  const { peer, session } = await setup(t);
  session.acceptAnswer(peer.answerSdp('PCMU'));
  const keys: DtmfKey[] = [];
  const gotTwo = new Promise<void>((resolve) =>
    session.onDtmf((k) => {
      keys.push(k);
      if (keys.length === 2) resolve();
    }),
  );
  const playing = session.play(new Uint8Array(8000 * 10).fill(0x55));
  await peer.waitFor((p) => p.some((x) => x.payload[0] === 0x55));
  peer.pressKey(session.localPort, '4', { timestamp: 16000, sequence: 500, order: [2, 0, 1, 3, 4, 4] });
  peer.pressKey(session.localPort, '#', { timestamp: 17600, sequence: 505 });
  await gotTwo;
  session.stop();
  t.same(await playing, { interrupted: true });
  t.same(keys, ['4', '#']);
});

t.test('sends keys as RFC 4733 events with three end packets', async (t) => {
  const { peer, session } = await setup(t);
  session.acceptAnswer(peer.answerSdp('PCMA', 96));
  await session.sendDtmf('12', 60);
  const events = await peer.waitFor((p) => p.filter((x) => x.payloadType === 96).length >= 2 * (2 + 3));
  const ev = events.filter((x) => x.payloadType === 96);
  const parsed = ev.map((x) => ({ ts: x.timestamp, m: x.marker, ...parseTelephoneEvent(x.payload) }));
  t.same(
    parsed.map((p) => p.event),
    [1, 1, 1, 1, 1, 2, 2, 2, 2, 2],
  );
  t.same(
    parsed.map((p) => p.end),
    [false, false, true, true, true, false, false, true, true, true],
  );
  t.same(
    parsed.map((p) => p.m),
    [true, false, false, false, false, true, false, false, false, false],
  );
  t.equal(new Set(parsed.slice(0, 5).map((p) => p.ts)).size, 1, 'one timestamp per event');
  t.not(parsed[0]?.ts, parsed[5]?.ts);
  t.ok(events.filter((x) => x.payloadType === 8).length > 0, 'audio is PCMA after the answer');
});

t.test('reports a dead call when RTP stops arriving', async (t) => {
  const { peer, session } = await setup(t, 300);
  session.acceptAnswer(peer.answerSdp('PCMU'));
  const stopKeepAlive = peer.keepAlive(session.localPort);
  let timedOut = false;
  const dead = new Promise<void>((resolve) =>
    session.onTimeout(() => {
      timedOut = true;
      resolve();
    }),
  );
  await peer.waitFor((p) => p.length >= 30); // 600 ms alive without a timeout
  t.notOk(timedOut, 'no timeout while the peer sends');
  stopKeepAlive();
  await dead;
  t.ok(timedOut);
});

t.test('answering an offer, and ports are released on close', async (t) => {
  const { peer, session } = await setup(t);
  const answer = session.answerSdp(peer.offerSdp());
  t.match(answer, /m=audio \d+ RTP\/AVP 8 101/);
  t.equal(session.codec, 'PCMA');
  await peer.waitFor((p) => p.length >= 2 && p.every((x) => x.payloadType === 8 && x.payload[0] === 0xd5));
  await session.close();
  t.same(await session.play(new Uint8Array(160)), { interrupted: true }, 'play after close resolves at once');
  const [stats] = await pool.stats();
  t.equal(stats?.sessions, 0, 'no session left open in the worker');
  t.throws(() => session.acceptAnswer(peer.answerSdp()), { code: 'MEDIA_SESSION_CLOSED' });
});
