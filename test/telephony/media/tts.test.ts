import t from 'tap';
import { mkdtemp, readdir, rm, writeFile, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createTts, TTS_LANGUAGES } from '../../../src/telephony/media/tts.js';
import { decodeG711 } from '../../../src/telephony/media/g711.js';
import type { TtsLanguage } from '../../../src/telephony/media/tts.js';

const log = pino({ level: 'silent' });

async function tempDir(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tts-test-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function rms(audio: Uint8Array, codec: 'PCMU' | 'PCMA'): number {
  const pcm = decodeG711(codec, audio);
  let sum = 0;
  for (const v of pcm) sum += v * v;
  return Math.sqrt(sum / Math.max(1, pcm.length));
}

const PHRASES: Record<TtsLanguage, string> = {
  en: 'Your code is one two three',
  es: 'Su código es uno dos tres',
  fr: 'Votre code est un deux trois',
  de: 'Ihr Code ist eins zwei drei',
  pt: 'O seu código é um dois três',
  hi: 'आपका कोड एक दो तीन है',
};

t.test('speaks every API language as 8 kHz G.711 audio', async (t) => {
  const tts = createTts({ log, cacheDir: null });
  for (const language of TTS_LANGUAGES) {
    const audio = await tts.synthesize({ text: PHRASES[language], language, codec: 'PCMU' });
    const seconds = audio.length / 8000;
    t.ok(seconds > 0.8 && seconds < 6, `${language}: ${seconds.toFixed(2)} s of audio`);
    t.ok(rms(audio, 'PCMU') > 300, `${language}: not silent`);
  }
});

t.test('caches in memory, on disk, and per codec; concurrent requests share one synthesis', async (t) => {
  const dir = await tempDir(t);
  const tts = createTts({ log, cacheDir: dir });
  const [a, b] = await Promise.all([
    tts.synthesize({ text: 'Please enter your account number', language: 'en', codec: 'PCMA' }),
    tts.synthesize({ text: 'Please enter your account number', language: 'en', codec: 'PCMA' }),
  ]);
  t.equal(a, b, 'same buffer for both callers');
  t.equal(tts.stats().misses, 1);
  const again = await tts.synthesize({ text: 'Please enter your account number', language: 'en', codec: 'PCMA' });
  t.equal(again, a);
  t.equal(tts.stats().memoryHits, 1);
  t.ok(rms(a, 'PCMA') > 300, 'PCMA audio decodes to speech-level signal');
  const files = await readdir(dir);
  t.same(files.filter((f) => f.endsWith('.pcma')).length, 1, 'one file on disk');
  // A new process (fresh memory) finds it on disk.
  const fresh = createTts({ log, cacheDir: dir });
  const fromDisk = await fresh.synthesize({ text: 'Please enter your account number', language: 'en', codec: 'PCMA' });
  t.same(Buffer.from(fromDisk), Buffer.from(a));
  t.same(fresh.stats(), { memoryHits: 0, diskHits: 1, misses: 0, memoryBytes: a.length });
  await fresh.synthesize({ text: 'Please enter your account number', language: 'en', codec: 'PCMU' });
  t.equal(fresh.stats().misses, 1, 'another codec is another entry');
  await fresh.synthesize({ text: 'Please enter your account number', language: 'es', codec: 'PCMU' });
  t.equal(fresh.stats().misses, 2, 'another language is another entry');
  // The files it wrote itself are known to its index: a third instance streams one from disk.
  const third = createTts({ log, cacheDir: dir });
  const pieces: Uint8Array[] = [];
  await third.stream({ text: 'Please enter your account number', language: 'es', codec: 'PCMU' }, (p) =>
    pieces.push(p),
  );
  t.equal(pieces.length, 1, 'the cached audio in one piece');
  t.same(third.stats(), { memoryHits: 0, diskHits: 1, misses: 0, memoryBytes: pieces[0]!.length });
});

t.test('text starting with a dash is spoken, not read as an option', async (t) => {
  const tts = createTts({ log, cacheDir: null });
  const audio = await tts.synthesize({ text: '--help me', language: 'en', codec: 'PCMU' });
  t.ok(audio.length > 2000);
});

t.test('bad language, bad voice and a failing program are coded errors', async (t) => {
  const dir = await tempDir(t);
  const tts = createTts({ log, cacheDir: null });
  await t.rejects(tts.synthesize({ text: 'x', language: 'xx' as TtsLanguage, codec: 'PCMU' }), {
    code: 'MEDIA_BAD_LANGUAGE',
  });
  await t.rejects(tts.synthesize({ text: 'x', language: 'en', voice: '--path=/etc', codec: 'PCMU' }), {
    code: 'MEDIA_BAD_LANGUAGE',
  });
  const broken = join(dir, 'broken-tts');
  await writeFile(broken, '#!/bin/sh\necho boom >&2\nexit 3\n');
  await chmod(broken, 0o755);
  const failing = createTts({ log, cacheDir: null, command: broken });
  await t.rejects(failing.synthesize({ text: 'hello', language: 'en', codec: 'PCMU' }), {
    code: 'MEDIA_TTS_FAILED',
    message: /exited with 3: boom/,
  });
  const missing = createTts({ log, cacheDir: null, command: join(dir, 'no-such-program') });
  await t.rejects(missing.synthesize({ text: 'hello', language: 'en', codec: 'PCMU' }), { code: 'MEDIA_TTS_FAILED' });
});

t.test('stream hands over whole 20 ms frames in order that join to the synthesised audio', async (t) => {
  const tts = createTts({ log, cacheDir: null });
  t.teardown(() => tts.close());
  const req = {
    text: 'We open at nine tomorrow. Is there anything else?',
    language: 'en' as const,
    codec: 'PCMU' as const,
  };
  tts.warm('en');
  const pieces: Uint8Array[] = [];
  const all = await tts.stream(req, (a) => pieces.push(a));
  t.ok(pieces.length > 1, 'more than one piece: audio is handed over before espeak-ng ends');
  t.ok(
    pieces.slice(0, -1).every((p) => p.length % 160 === 0),
    'every piece but the last is whole frames',
  );
  t.same(Buffer.concat(pieces), Buffer.from(all));
  t.ok(rms(all, 'PCMU') > 300, 'the audio is speech, not silence');
  // The same text from an engine that renders it whole (nothing cached between the two).
  const whole = createTts({ log, cacheDir: null });
  t.teardown(() => whole.close());
  t.same(Buffer.from(await whole.synthesize(req)), Buffer.from(all));
  // Cached now: one piece.
  const again: Uint8Array[] = [];
  await tts.stream(req, (a) => again.push(a));
  t.equal(again.length, 1);
  t.equal(tts.stats().memoryHits, 1);
});
