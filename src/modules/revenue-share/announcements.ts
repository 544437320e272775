/**
 * Announcements of revenue share numbers in a call's codec: text through the TTS (its own cache),
 * an https file through the guarded downloader, kept a few minutes per URL so a busy number does not
 * fetch its file for every call (the renderer keeps each file's decoding per codec).
 */
import type { PromptRenderer } from '../../telephony/media/actions.js';
import type { G711Codec } from '../../telephony/media/g711.js';
import type { Announcement } from './answer-setting.js';

const KEEP_MS = 5 * 60_000;
const MAX_FILES = 200;

export function createAnnouncements(deps: {
  renderer: () => PromptRenderer;
  /** The outbound guard's downloader (https, public addresses only, at most 2 MB, no redirects). */
  download: (url: string) => Promise<Uint8Array>;
  now: () => number;
}) {
  const files = new Map<string, { at: number; bytes: Promise<Uint8Array> }>();

  function file(url: string): Promise<Uint8Array> {
    const now = deps.now();
    const kept = files.get(url);
    if (kept && now - kept.at < KEEP_MS) return kept.bytes;
    files.delete(url);
    // Oldest first (insertion order): the map stays bounded however many URLs holders set.
    while (files.size >= MAX_FILES) files.delete(files.keys().next().value!);
    const bytes = deps.download(url);
    const entry = { at: now, bytes };
    files.set(url, entry);
    // A failed fetch is not kept: the next call tries again.
    bytes.catch(() => files.get(url) === entry && files.delete(url));
    return bytes;
  }

  return {
    async audio(a: Announcement, codec: G711Codec): Promise<Uint8Array> {
      if ('text' in a) return deps.renderer().say(a.text, a.language, codec);
      return deps.renderer().play(await file(a.url), codec);
    },
  };
}
