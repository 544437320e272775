import type { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { MediaError } from './errors.js';
import type { G711Codec } from './g711.js';
import { siblingModule, startWorker } from './start-worker.js';

/** Requests and replies between the main thread and the MP3 worker. */
export interface Mp3Request {
  id: number;
  data: Uint8Array;
  codec: G711Codec;
}

export type Mp3Response =
  { id: number; audio: Uint8Array; sourceRate: number; channels: number } | { id: number; error: string };

export interface Mp3DecoderOptions {
  log: Logger;
  /** Largest MP3 accepted (default 2 MB, the spec's limit for `play`). */
  maxBytes?: number;
}

export interface Mp3Decoder {
  /** Decodes an MP3 to G.711 at 8 kHz mono in the given codec. */
  decode(mp3: Uint8Array, codec: G711Codec): Promise<Uint8Array>;
  close(): Promise<void>;
}

export const MAX_MP3_BYTES = 2 * 1024 * 1024;

/** True when the bytes start like an MP3: an ID3v2 tag or an MPEG audio layer I–III frame header. */
export function looksLikeMp3(data: Uint8Array): boolean {
  if (data.length < 4) return false;
  if (data[0] === 0x49 && data[1] === 0x44 && data[2] === 0x33) return true; // "ID3"
  const b1 = data[1] as number;
  // Sync word, a known MPEG version, and layer bits not 00 (which is ADTS AAC, not MP3).
  return data[0] === 0xff && (b1 & 0xe0) === 0xe0 && (b1 & 0x18) !== 0x08 && (b1 & 0x06) !== 0;
}

export function createMp3Decoder(options: Mp3DecoderOptions): Mp3Decoder {
  const maxBytes = options.maxBytes ?? MAX_MP3_BYTES;
  let worker: Worker | null = null;
  let nextId = 1;
  let closed = false;
  const pending = new Map<number, { resolve: (a: Uint8Array) => void; reject: (e: Error) => void }>();

  function failAll(err: Error): void {
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  }

  function ensureWorker(): Worker {
    if (worker) return worker;
    const w = startWorker(siblingModule(import.meta.url, 'mp3-worker'), null);
    w.on('message', (res: Mp3Response) => {
      const p = pending.get(res.id);
      if (!p) return;
      pending.delete(res.id);
      // Idle, the decoder must not keep the process alive; busy, it must.
      if (pending.size === 0) w.unref();
      if ('error' in res) p.reject(new MediaError('MEDIA_UNSUPPORTED_AUDIO', `MP3 could not be decoded: ${res.error}`));
      else p.resolve(res.audio);
    });
    w.on('error', (err) => {
      options.log.error({ err }, 'mp3 worker failed');
      failAll(new MediaError('MEDIA_UNSUPPORTED_AUDIO', 'MP3 decoder failed', { cause: err }));
    });
    w.on('exit', () => {
      worker = null;
      failAll(new MediaError('MEDIA_UNSUPPORTED_AUDIO', 'MP3 decoder stopped'));
    });
    w.unref();
    worker = w;
    return w;
  }

  return {
    decode(mp3, codec) {
      if (closed) return Promise.reject(new MediaError('MEDIA_POOL_CLOSED', 'MP3 decoder is closed'));
      if (mp3.length > maxBytes)
        return Promise.reject(new MediaError('MEDIA_AUDIO_TOO_LARGE', `MP3 is larger than ${maxBytes} bytes`));
      if (!looksLikeMp3(mp3))
        return Promise.reject(new MediaError('MEDIA_UNSUPPORTED_AUDIO', 'audio is not an MP3 file'));
      const id = nextId++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        const w = ensureWorker();
        w.ref();
        // Copied, not transferred: the caller may keep and reuse its download.
        w.postMessage({ id, data: mp3, codec } satisfies Mp3Request);
      });
    },
    async close() {
      closed = true;
      const w = worker;
      if (w) await w.terminate();
    },
  };
}
