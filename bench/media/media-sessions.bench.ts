/**
 * Concurrent media sessions in one RTP worker, each playing a `say` prompt and then waiting in a
 * gather (sending silence), as a call placed through POST /comms/calls would. Reports the share
 * of 20 ms frames sent more than 5 ms after their slot, and the cost of a TTS cache miss and hit.
 *
 *   node --import=tsx bench/media/media-sessions.bench.ts [sessions=500] [seconds=10] [portBase=32000]
 */
import { createSocket } from 'node:dgram';
import { once, setMaxListeners } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createMediaPool } from '../../src/telephony/media/pool.js';
import type { MediaSession } from '../../src/telephony/media/pool.js';
import { createTts } from '../../src/telephony/media/tts.js';
import { createMp3Decoder } from '../../src/telephony/media/mp3.js';
import { createPromptRenderer, runActions } from '../../src/telephony/media/actions.js';

const sessions = Number(process.argv[2] ?? 500);
const seconds = Number(process.argv[3] ?? 10);
const portBase = Number(process.argv[4] ?? 32000);
const log = pino({ level: 'warn' });

async function ttsCost(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'tts-bench-'));
  try {
    const texts = Array.from(
      { length: 6 },
      (_, i) => `Please enter the ${i + 1} digit code you received, followed by the hash key`,
    );
    const cold = createTts({ log, cacheDir: dir, maxConcurrent: 1 });
    let t0 = performance.now();
    for (const text of texts) await cold.synthesize({ text, language: 'en', codec: 'PCMU' });
    const missMs = (performance.now() - t0) / texts.length;
    const hits = 100_000;
    t0 = performance.now();
    for (let i = 0; i < hits; i++)
      await cold.synthesize({ text: texts[i % texts.length] as string, language: 'en', codec: 'PCMU' });
    const hitUs = ((performance.now() - t0) * 1000) / hits;
    const warm = createTts({ log, cacheDir: dir });
    t0 = performance.now();
    for (const text of texts) await warm.synthesize({ text, language: 'en', codec: 'PCMU' });
    const diskMs = (performance.now() - t0) / texts.length;
    console.log(`tts miss (espeak-ng + resample + G.711 + disk write): ${missMs.toFixed(1)} ms per prompt`);
    console.log(`tts memory hit: ${hitUs.toFixed(2)} µs per prompt`);
    console.log(`tts disk hit (fresh process): ${diskMs.toFixed(2)} ms per prompt`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function sessionsLoad(): Promise<void> {
  const sink = createSocket('udp4');
  let received = 0;
  sink.on('message', () => void received++);
  sink.bind(0, '127.0.0.1');
  await once(sink, 'listening');
  const sinkPort = sink.address().port;
  const answer = `v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio ${sinkPort} RTP/AVP 0 101\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:101 telephone-event/8000\r\n`;

  const pool = createMediaPool({
    workers: 1,
    portMin: portBase,
    portMax: portBase + sessions * 2 + 99,
    bindAddress: '127.0.0.1',
    log,
    rtpTimeoutMs: 3_600_000,
  });
  const mp3 = createMp3Decoder({ log });
  const renderer = createPromptRenderer({ tts: createTts({ log, cacheDir: null }), mp3 });
  const prompt = 'Welcome. Please enter your account number followed by the hash key.';
  const promptAudio = await renderer.say(prompt, 'en', 'PCMU');
  const opened: MediaSession[] = [];
  const ac = new AbortController();
  setMaxListeners(sessions + 10, ac.signal);
  const scripts: Promise<unknown>[] = [];
  for (let i = 0; i < sessions; i++) {
    const s = await pool.openSession({ codec: 'PCMU' });
    s.acceptAnswer(answer);
    opened.push(s);
  }
  await pool.stats({ reset: true });
  const receivedAtStart = received;
  const t0 = performance.now();
  // Calls arrive over the first two seconds rather than all in one tick.
  for (const [i, s] of opened.entries()) {
    setTimeout(
      () => {
        scripts.push(
          runActions({
            media: s,
            actions: [{ say: prompt }, { gather: { digits: 4, timeout: 30 } }],
            renderer,
            signal: ac.signal,
          }),
        );
      },
      (i * 2000) / sessions,
    );
  }
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const elapsed = (performance.now() - t0) / 1000;
  const [stats] = await pool.stats();
  const got = received - receivedAtStart;
  ac.abort();
  await Promise.all(scripts);
  await Promise.all(opened.map((s) => s.close()));
  await pool.close();
  await mp3.close();
  sink.close();
  if (!stats) throw new Error('no stats');
  const late = (100 * stats.lateFrames) / Math.max(1, stats.framesSent);
  console.log(
    `sessions per worker: ${sessions}; prompt ${(promptAudio.length / 8000).toFixed(1)} s then gather; window ${elapsed.toFixed(1)} s`,
  );
  console.log(
    `frames sent: ${stats.framesSent} (${(stats.framesSent / elapsed).toFixed(0)}/s, expected ${sessions * 50}/s); received by peer: ${got}`,
  );
  console.log(
    `worker time in clock ticks: ${((100 * stats.busyMs) / (elapsed * 1000)).toFixed(1)}% of wall time (${((stats.busyMs * 1000) / Math.max(1, stats.framesSent)).toFixed(1)} µs per frame)`,
  );
  console.log(
    `late frames (> 5 ms after slot): ${stats.lateFrames} = ${late.toFixed(3)}%; worst lateness ${stats.maxLatenessMs.toFixed(1)} ms`,
  );
}

if (!process.argv.includes('--no-tts')) await ttsCost();
await sessionsLoad();
