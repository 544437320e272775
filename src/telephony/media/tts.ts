import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { MediaError } from './errors.js';
import { encodeG711 } from './g711.js';
import type { G711Codec } from './g711.js';
import { parseWav, wavToTelephony } from './pcm.js';

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
  stats(): TtsStats;
}

const VOICE_NAME = /^[a-z][a-z0-9+_-]{0,40}$/i;
const MAX_WAV_BYTES = 64 * 1024 * 1024;

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

  function runEspeak(text: string, voice: string): Promise<Uint8Array> {
    return new Promise((resolve, reject) => {
      // Text goes in on stdin, never as an argument, so it cannot be read as an option.
      const child = spawn(command, ['--stdout', '-b', '1', '-s', String(wpm), '-v', voice], {
        stdio: ['pipe', 'pipe', 'pipe'],
      });
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
        if (!failed) chunks.push(c);
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
      child.stdin.end(text, 'utf8');
    });
  }

  async function fromDisk(key: string, codec: G711Codec): Promise<Uint8Array | null> {
    if (options.cacheDir === null) return null;
    try {
      return new Uint8Array(await readFile(join(options.cacheDir, `${key}.${codec.toLowerCase()}`)));
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
      const file = join(dir, `${key}.${codec.toLowerCase()}`);
      // Written aside then renamed, so a reader never sees half a file.
      const tmp = `${file}.${randomUUID()}.tmp`;
      await writeFile(tmp, audio);
      await rename(tmp, file);
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
    const wav = await withSlot(() => runEspeak(req.text, voice));
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

  return {
    async synthesize(req) {
      if (!isTtsLanguage(req.language)) throw new MediaError('MEDIA_BAD_LANGUAGE', 'unsupported speech language');
      const voice = req.voice ?? DEFAULT_VOICES[req.language];
      if (!VOICE_NAME.test(voice)) throw new MediaError('MEDIA_BAD_LANGUAGE', 'invalid voice name');
      const key = createHash('sha256')
        .update(JSON.stringify(['v1', wpm, req.text, voice, req.language, req.codec]))
        .digest('hex');
      const hit = memory.get(key);
      if (hit) {
        counters.memoryHits++;
        memory.delete(key);
        memory.set(key, hit);
        return hit;
      }
      const pending = inflight.get(key);
      if (pending) return pending;
      const job = produce(key, req, voice).finally(() => inflight.delete(key));
      inflight.set(key, job);
      return job;
    },
    stats: () => ({ ...counters, memoryBytes }),
  };
}
