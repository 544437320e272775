/**
 * Decoded voicemail greetings kept in memory (issue 22): an uploaded or URL greeting is read (from
 * the state directory or the network) and decoded once, not on every call and not once per G.711
 * law. The MP3 is decoded to one law and the other is transcoded from it in-process, a table look-up
 * per sample instead of a second trip through the MP3 worker; the session's codec is known only once
 * the call is answered, so both are ready before it is.
 *
 * Entries are per number and carry the greeting's source (`file:<path>` or `url:<url>`). A call
 * whose number now names another source replaces the entry, so a greeting changed by another daemon
 * (or straight in the database) is never played stale; the voicemail API also drops a number's entry
 * when it changes the greeting, to free its memory at once. A URL's bytes can change behind the same
 * URL, so URL entries are fetched again after `urlMaxAgeMs`. The cache is bounded by the bytes of
 * decoded audio and by the number of entries, least recently used going first. A failed load or
 * decode is not kept: the next call tries again.
 */
import type { Clock } from '../../../platform/clock.js';
import { decodeG711, encodeG711, type G711Codec } from '../../../telephony/media/g711.js';

/** A greeting in both G.711 laws, 8 kHz mono. */
export type GreetingAudio = Readonly<Record<G711Codec, Uint8Array>>;

export interface GreetingCacheOptions {
  /** Decodes an MP3 to G.711 in the given law (the media plane's renderer). */
  decode: (mp3: Uint8Array, codec: G711Codec) => Promise<Uint8Array>;
  clock: Clock;
  /** Decoded audio kept at most (both laws counted), default 32 MiB. */
  maxBytes?: number;
  /** Numbers kept at most, default 1000. */
  maxEntries?: number;
  /** A URL greeting is fetched again after this long, default 10 minutes. */
  urlMaxAgeMs?: number;
}

interface Entry {
  source: string;
  loadedAt: number;
  audio: Promise<GreetingAudio>;
  /** Known once decoded; 0 until then (a pending decode holds no audio yet). */
  bytes: number;
}

const DECODED_LAW: G711Codec = 'PCMU';
const OTHER_LAW: G711Codec = 'PCMA';

export function createGreetingCache(options: GreetingCacheOptions) {
  const maxBytes = options.maxBytes ?? 32 * 1024 * 1024;
  const maxEntries = options.maxEntries ?? 1000;
  const urlMaxAgeMs = options.urlMaxAgeMs ?? 10 * 60 * 1000;
  /** Insertion order is use order: the first entry is the least recently used. */
  const entries = new Map<string, Entry>();
  let total = 0;
  const stats = { loads: 0, hits: 0 };

  function drop(didId: string, entry: Entry): void {
    if (entries.get(didId) !== entry) return;
    entries.delete(didId);
    total -= entry.bytes;
  }

  function evict(): void {
    for (const [didId, entry] of entries) {
      if (total <= maxBytes && entries.size <= maxEntries) return;
      drop(didId, entry);
    }
  }

  async function decodeBoth(mp3: Uint8Array): Promise<GreetingAudio> {
    const first = await options.decode(mp3, DECODED_LAW);
    const other = encodeG711(OTHER_LAW, decodeG711(DECODED_LAW, first));
    return Object.freeze({ [DECODED_LAW]: first, [OTHER_LAW]: other } as Record<G711Codec, Uint8Array>);
  }

  const stale = (e: Entry, source: string): boolean =>
    e.source !== source || (source.startsWith('url:') && options.clock.now().getTime() - e.loadedAt >= urlMaxAgeMs);

  return {
    /**
     * The number's greeting from `source` (`file:…` or `url:…`), decoded; `load` reads its MP3
     * bytes when it is not kept. Rejects when loading or decoding fails.
     */
    get(didId: string, source: string, load: () => Promise<Uint8Array>): Promise<GreetingAudio> {
      const kept = entries.get(didId);
      if (kept && !stale(kept, source)) {
        entries.delete(didId);
        entries.set(didId, kept);
        stats.hits++;
        return kept.audio;
      }
      if (kept) drop(didId, kept);
      stats.loads++;
      const entry: Entry = {
        source,
        loadedAt: options.clock.now().getTime(),
        audio: load().then(decodeBoth),
        bytes: 0,
      };
      entries.set(didId, entry);
      entry.audio.then(
        (audio) => {
          if (entries.get(didId) !== entry) return;
          entry.bytes = audio.PCMU.length + audio.PCMA.length;
          total += entry.bytes;
          evict();
        },
        () => drop(didId, entry),
      );
      evict();
      return entry.audio;
    },
    /** Forgets a number's greeting (it was changed or removed). */
    invalidate(didId: string): void {
      const e = entries.get(didId);
      if (e) drop(didId, e);
    },
    /** Sizes and counters, for tests and diagnostics. */
    stats: () => ({ entries: entries.size, bytes: total, ...stats }),
  };
}

export type GreetingCache = ReturnType<typeof createGreetingCache>;
