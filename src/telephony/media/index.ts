import type { Logger } from 'pino';
import type { CallEngine } from '../engine.js';
import { createPromptRenderer } from './actions.js';
import type { PromptRenderer } from './actions.js';
import { createSafeDownloader } from './downloader.js';
import type { SafeDownloader } from './downloader.js';
import type { G711Codec } from './g711.js';
import { createMp3Decoder } from './mp3.js';
import type { Mp3Decoder } from './mp3.js';
import { createNativeEngine } from './native-engine.js';
import type { SignallingDialer } from './native-engine.js';
import { createMediaPool } from './pool.js';
import type { MediaPool } from './pool.js';
import { createTts } from './tts.js';
import type { Tts } from './tts.js';

export type { SignallingDialer, SignallingLeg, DialEvents, DialRequest } from './native-engine.js';
export type { MediaPool, MediaSession } from './pool.js';

export interface MediaPlaneOptions {
  log: Logger;
  /** A pool owned elsewhere (shared with trunk media relays): used, not closed, by this plane. */
  pool?: MediaPool;
  /** RTP worker threads (each owns an even share of the port range). */
  workers: number;
  portMin: number;
  portMax: number;
  bindAddress?: string;
  /** Address put in our SDP; the address suppliers send RTP to. */
  advertiseAddress?: string;
  rtpTimeoutMs?: number;
  codec?: G711Codec;
  /** Where synthesised prompts are kept across restarts (e.g. `<state dir>/tts-cache`); null: memory only. */
  ttsCacheDir: string | null;
  /**
   * Tests only, and only from code: a downloader built with test options (a local HTTPS server).
   * No config key reaches it, so a deployment cannot loosen the public-address rule.
   */
  downloader?: SafeDownloader;
}

export interface MediaPlane {
  pool: MediaPool;
  tts: Tts;
  mp3: Mp3Decoder;
  renderer: PromptRenderer;
  /** For `play` URLs, before dialling (spec: public addresses only, ≤ 2 MB, no redirects). */
  downloader: SafeDownloader;
  /** The native engine over this plane's media, with the SIP stack behind `dialer`. */
  createEngine(dialer: SignallingDialer): CallEngine;
  close(): Promise<void>;
}

/** Builds the native media plane: RTP workers, TTS, MP3 decoding, downloader. */
export function createMediaPlane(options: MediaPlaneOptions): MediaPlane {
  const { log } = options;
  const pool =
    options.pool ??
    createMediaPool({
      workers: options.workers,
      portMin: options.portMin,
      portMax: options.portMax,
      bindAddress: options.bindAddress,
      advertiseAddress: options.advertiseAddress,
      rtpTimeoutMs: options.rtpTimeoutMs,
      log: log.child({ plane: 'media' }),
    });
  const tts = createTts({ log, cacheDir: options.ttsCacheDir });
  const mp3 = createMp3Decoder({ log });
  const renderer = createPromptRenderer({ tts, mp3 });
  const downloader = options.downloader ?? createSafeDownloader();
  const engines: CallEngine[] = [];
  return {
    pool,
    tts,
    mp3,
    renderer,
    downloader,
    createEngine(dialer) {
      const engine = createNativeEngine({ pool, dialer, renderer, log, codec: options.codec });
      engines.push(engine);
      return engine;
    },
    async close() {
      await Promise.all(engines.map((e) => e.close()));
      if (!options.pool) await pool.close();
      await mp3.close();
      tts.close();
    },
  };
}
