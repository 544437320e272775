import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { MediaError } from './errors.js';
import { encodeG711 } from './g711.js';
import type { G711Codec } from './g711.js';
import { createWavStream, parseWav, wavToTelephony } from './pcm.js';

/**
 * Text-to-speech through the espeak-ng program. espeak-ng is GPL, so it runs as a child process
 * and never links into ours. Each (text, voice, language, codec) is synthesised once, encoded to
 * G.711 once, and kept in memory and under the state directory.
 */

export const TTS_LANGUAGES = ['en', 'es', 'fr', 'de', 'pt', 'hi'] as const;
export type TtsLanguage = (typeof TTS_LANGUAGES)[number];

/** espeak-ng voice for each language of the API (spec: "language" of POST /comms/calls). */
export const DEFAULT_VOICES: Readonly<Record<TtsLanguage, string>> = Object.freeze({
  en: 'en-us',
  es: 'es',
  fr: 'fr-fr',
  de: 'de',
  pt: 'pt',
  hi: 'hi',
});

export interface TtsOptions {
  log: Logger;
  /** Directory for the on-disk cache; null keeps the cache in memory only. */
  cacheDir: string | null;
  /** Program to run (default `espeak-ng`). */
  command?: string;
  /** Most synthesis processes at once (default 2). */
  maxConcurrent?: number;
  /** A synthesis taking longer is killed (default 15 s). */
  timeoutMs?: number;
  /** Memory cache budget in bytes of G.711 (default 64 MiB, about 2.2 hours of audio). */
  memoryBytes?: number;
  /** Words per minute (default espeak-ng's 175; telephony prompts read better a little slower). */
  wordsPerMinute?: number;
  /** A started espeak-ng waiting for text is ended after this long unused (default 30 s). */
  warmIdleMs?: number;
}

export interface SpeakRequest {
  text: string;
  language: TtsLanguage;
  /** An espeak-ng voice name; defaults to the language's voice. */
  voice?: string;
  codec: G711Codec;
}

export interface TtsStats {
  memoryHits: number;
  diskHits: number;
  misses: number;
  memoryBytes: number;
}

export interface Tts {
  /** G.711 audio (8 kHz, one byte per sample) in the requested codec. */
  synthesize(req: SpeakRequest): Promise<Uint8Array>;
  /**
   * The same audio handed over as espeak-ng writes it: `onAudio` gets whole 20 ms frames (the last
   * piece may be shorter) in order, the first a few ms after the call; resolves with all of it.
   * A cached text arrives in one piece.
   */
  stream(req: SpeakRequest, onAudio: (audio: Uint8Array) => void): Promise<Uint8Array>;
  /**
   * Starts an espeak-ng for `voice` (or the language's) that waits for its text, so the next
   * synthesis in that voice skips the program's start-up (most of its time).
   */
  warm(language: TtsLanguage, voice?: string): void;
  stats(): TtsStats;
  /** Ends the waiting espeak-ng processes. */
  close(): void;
}

const VOICE_NAME = /^[a-z][a-z0-9+_-]{0,40}$/i;
const MAX_WAV_BYTES = 64 * 1024 * 1024;
/** One 20 ms G.711 frame. */
const FRAME_BYTES = 160;

export function isTtsLanguage(value: unknown): value is TtsLanguage {
  return typeof value === 'string' && (TTS_LANGUAGES as readonly string[]).includes(value);
}

export function createTts(options: TtsOptions): Tts {
  const command = options.command ?? 'espeak-ng';
  const maxConcurrent = options.maxConcurrent ?? 2;
  const timeoutMs = options.timeoutMs ?? 15_000;
  const memoryBudget = options.memoryBytes ?? 64 * 1024 * 1024;
  const wpm = options.wordsPerMinute ?? 160;
  if (!Number.isInteger(maxConcurrent) || maxConcurrent < 1)
    throw new RangeError('maxConcurrent must be a positive integer');
  const log = options.log;

  const memory = new Map<string, Uint8Array>();
  let memoryBytes = 0;
  const inflight = new Map<string, Promise<Uint8Array>>();
  const counters = { memoryHits: 0, diskHits: 0, misses: 0 };
  let running = 0;
  const waiting: (() => void)[] = [];
  let cacheDirReady: Promise<void> | null = null;

  function remember(key: string, audio: Uint8Array): void {
    if (audio.length > memoryBudget) return;
    memory.set(key, audio);
    memoryBytes += audio.length;
    for (const [k, v] of memory) {
      if (memoryBytes <= memoryBudget) break;
      memory.delete(k);
      memoryBytes -= v.length;
    }
  }

  async function withSlot<T>(fn: () => Promise<T>): Promise<T> {
    if (running >= maxConcurrent) await new Promise<void>((resolve) => waiting.push(resolve));
    running++;
    try {
      return await fn();
    } finally {
      running--;
      waiting.shift()?.();
    }
  }

  // One espeak-ng per recently used voice, started ahead and waiting for its text on stdin: the
  // program's start-up (loading its voice data, 100–200 ms under load) is most of a short
  // sentence's time, so a turn that finds one ready has its first audio in a few ms.
  const warmIdleMs = options.warmIdleMs ?? 30_000;
  const warmCap = 8;
  const ready = new Map<string, { child: ChildProcessWithoutNullStreams; timer: NodeJS.Timeout }>();
  let closed = false;

  const start = (voice: string): ChildProcessWithoutNullStreams =>
    spawn(command, ['--stdout', '-b', '1', '-s', String(wpm), '-v', voice], { stdio: ['pipe', 'pipe', 'pipe'] });

  /** Whether the child (and its pipes) keep the process alive: a waiting one must not. */
  function hold(child: ChildProcessWithoutNullStreams, on: boolean): void {
    for (const h of [child, child.stdin, child.stdout, child.stderr] as unknown as { ref?(): void; unref?(): void }[])
      if (on) h.ref?.();
      else h.unref?.();
  }

  function keepWarm(voice: string): void {
    if (closed || ready.has(voice)) return;
    if (ready.size >= warmCap) {
      const [oldest, entry] = ready.entries().next().value!;
      ready.delete(oldest);
      clearTimeout(entry.timer);
      entry.child.kill('SIGKILL');
    }
    const child = start(voice);
    const forget = () => {
      const entry = ready.get(voice);
      if (entry?.child !== child) return;
      ready.delete(voice);
      clearTimeout(entry.timer);
    };
    child.on('error', forget);
    child.on('exit', forget);
    child.stdin.on('error', () => undefined);
    const timer = setTimeout(() => {
      forget();
      child.kill('SIGKILL');
    }, warmIdleMs);
    timer.unref();
    hold(child, false);
    ready.set(voice, { child, timer });
  }

  /** A waiting espeak-ng for `voice` when there is one (and another started for next time), else a new one. */
  function take(voice: string): ChildProcessWithoutNullStreams {
    const entry = ready.get(voice);
    let child: ChildProcessWithoutNullStreams | null = null;
    if (entry) {
      ready.delete(voice);
      clearTimeout(entry.timer);
      if (entry.child.exitCode === null && entry.child.signalCode === null) {
        child = entry.child;
        child.removeAllListeners('error');
        child.removeAllListeners('exit');
        hold(child, true);
      }
    }
    child ??= start(voice);
    // The next one starts once this one has written its audio, not now: started here, its start-up
    // (a fork of this process, blocking the event loop, then espeak-ng loading its voice data) ran
    // beside the synthesis a caller waits for and delayed its first audio by 30-200 ms under load.
    child.once('close', () => keepWarm(voice));
    return child;
  }

  /**
   * Runs one synthesis on `child`. Without `onWav`, resolves with its WAV bytes; with it, they go to
   * `onWav` as they come and it resolves with nothing kept (an empty array).
   */
  function runEspeak(
    child: ChildProcessWithoutNullStreams,
    text: string,
    onWav?: (bytes: Buffer) => void,
  ): Promise<Uint8Array> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let stderr = '';
      let failed: MediaError | null = null;
      const timer = setTimeout(() => {
        failed = new MediaError('MEDIA_TTS_FAILED', `speech synthesis took longer than ${timeoutMs} ms`);
        child.kill('SIGKILL');
      }, timeoutMs);
      child.stdout.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_WAV_BYTES && !failed) {
          failed = new MediaError('MEDIA_TTS_FAILED', 'speech synthesis produced too much audio');
          child.kill('SIGKILL');
        }
        if (failed) return;
        // Streamed audio is handed on as it comes; only a whole render keeps the chunks.
        if (!onWav) chunks.push(c);
        try {
          onWav?.(c);
        } catch (err) {
          failed = new MediaError('MEDIA_TTS_FAILED', 'speech synthesis returned unreadable audio', { cause: err });
          child.kill('SIGKILL');
        }
      });
      child.stderr.on('data', (c: Buffer) => {
        if (stderr.length < 2000) stderr += c.toString('utf8');
      });
      child.on('error', (err) => {
        clearTimeout(timer);
        reject(new MediaError('MEDIA_TTS_FAILED', `cannot run ${command}`, { cause: err }));
      });
      child.on('close', (code) => {
        clearTimeout(timer);
        if (failed) return reject(failed);
        if (code !== 0)
          return reject(
            new MediaError('MEDIA_TTS_FAILED', `${command} exited with ${code}: ${stderr.trim().slice(0, 200)}`),
          );
        resolve(Buffer.concat(chunks));
      });
      child.stdin.on('error', () => {
        // The exit status reports the failure; a closed pipe here adds nothing.
      });
      // Text goes in on stdin, never as an argument, so it cannot be read as an option.
      child.stdin.end(text, 'utf8');
    });
  }

  // The disk cache's file names, read once. Most texts an AI agent speaks are new, and asking the
  // file system for each one cost a thread-pool round trip before its synthesis could start.
  // A file another process adds later is not seen; that text is only synthesised again.
  let onDisk: Promise<Set<string>> | null = null;
  const diskIndex = (dir: string) =>
    (onDisk ??= readdir(dir).then(
      (names) => new Set(names),
      () => new Set<string>(),
    ));
  const fileName = (key: string, codec: G711Codec) => `${key}.${codec.toLowerCase()}`;

  async function fromDisk(key: string, codec: G711Codec): Promise<Uint8Array | null> {
    const dir = options.cacheDir;
    if (dir === null) return null;
    const name = fileName(key, codec);
    if (!(await diskIndex(dir)).has(name)) return null;
    try {
      return new Uint8Array(await readFile(join(dir, name)));
    } catch {
      return null;
    }
  }

  async function toDisk(key: string, codec: G711Codec, audio: Uint8Array): Promise<void> {
    const dir = options.cacheDir;
    if (dir === null) return;
    try {
      cacheDirReady ??= mkdir(dir, { recursive: true }).then(() => undefined);
      await cacheDirReady;
      const name = fileName(key, codec);
      const file = join(dir, name);
      // Written aside then renamed, so a reader never sees half a file.
      const tmp = `${file}.${randomUUID()}.tmp`;
      await writeFile(tmp, audio);
      await rename(tmp, file);
      (await diskIndex(dir)).add(name);
    } catch (err) {
      cacheDirReady = null;
      log.warn({ err }, 'tts disk cache write failed');
    }
  }

  async function produce(key: string, req: SpeakRequest, voice: string): Promise<Uint8Array> {
    const cached = await fromDisk(key, req.codec);
    if (cached) {
      counters.diskHits++;
      remember(key, cached);
      return cached;
    }
    counters.misses++;
    const wav = await withSlot(() => runEspeak(take(voice), req.text));
    let audio: Uint8Array;
    try {
      audio = encodeG711(req.codec, wavToTelephony(parseWav(wav)));
    } catch (err) {
      throw new MediaError('MEDIA_TTS_FAILED', 'speech synthesis returned unreadable audio', { cause: err });
    }
    remember(key, audio);
    await toDisk(key, req.codec, audio);
    return audio;
  }

  /** `produce` handing the audio to `onAudio` in whole 20 ms frames as espeak-ng writes it. */
  async function produceStreaming(
    key: string,
    req: SpeakRequest,
    voice: string,
    onAudio: (audio: Uint8Array) => void,
  ): Promise<Uint8Array> {
    const cached = await fromDisk(key, req.codec);
    if (cached) {
      counters.diskHits++;
      remember(key, cached);
      onAudio(cached);
      return cached;
    }
    counters.misses++;
    const decoder = createWavStream();
    const parts: Uint8Array[] = [];
    let held: Uint8Array = new Uint8Array(0);
    const hand = (pcm: Int16Array, last: boolean) => {
      if (pcm.length === 0 && !(last && held.length)) return;
      const encoded = encodeG711(req.codec, pcm);
      const all = held.length ? Buffer.concat([held, encoded]) : encoded;
      const cut = last ? all.length : all.length - (all.length % FRAME_BYTES);
      held = all.subarray(cut);
      if (cut === 0) return;
      const out = all.subarray(0, cut);
      parts.push(out);
      onAudio(out);
    };
    await withSlot(() => runEspeak(take(voice), req.text, (bytes) => hand(decoder.push(bytes), false)));
    try {
      hand(decoder.end(), true);
    } catch (err) {
      throw new MediaError('MEDIA_TTS_FAILED', 'speech synthesis returned unreadable audio', { cause: err });
    }
    const audio = Buffer.concat(parts);
    remember(key, audio);
    void toDisk(key, req.codec, audio);
    return audio;
  }

  /** The request's espeak-ng voice and cache key; throws on a bad language or voice name. */
  function identify(req: SpeakRequest): { voice: string; key: string } {
    if (!isTtsLanguage(req.language)) throw new MediaError('MEDIA_BAD_LANGUAGE', 'unsupported speech language');
    const voice = req.voice ?? DEFAULT_VOICES[req.language];
    if (!VOICE_NAME.test(voice)) throw new MediaError('MEDIA_BAD_LANGUAGE', 'invalid voice name');
    const key = createHash('sha256')
      .update(JSON.stringify(['v1', wpm, req.text, voice, req.language, req.codec]))
      .digest('hex');
    return { voice, key };
  }

  function fromMemory(key: string): Uint8Array | undefined {
    const hit = memory.get(key);
    if (hit) {
      counters.memoryHits++;
      memory.delete(key);
      memory.set(key, hit);
    }
    return hit;
  }

  return {
    async synthesize(req) {
      const { voice, key } = identify(req);
      const hit = fromMemory(key);
      if (hit) return hit;
      const pending = inflight.get(key);
      if (pending) return pending;
      const job = produce(key, req, voice).finally(() => inflight.delete(key));
      inflight.set(key, job);
      return job;
    },
    async stream(req, onAudio) {
      const { voice, key } = identify(req);
      const known = fromMemory(key) ?? (await inflight.get(key));
      if (known) {
        onAudio(known);
        return known;
      }
      const job = produceStreaming(key, req, voice, onAudio).finally(() => inflight.delete(key));
      inflight.set(key, job);
      return job;
    },
    warm(language, voice) {
      const name = voice ?? DEFAULT_VOICES[language];
      if (isTtsLanguage(language) && VOICE_NAME.test(name)) keepWarm(name);
    },
    stats: () => ({ ...counters, memoryBytes }),
    close() {
      closed = true;
      for (const { child, timer } of ready.values()) {
        clearTimeout(timer);
        child.kill('SIGKILL');
      }
      ready.clear();
    },
  };
}
