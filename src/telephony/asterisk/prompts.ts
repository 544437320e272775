import { createHash } from 'node:crypto';
import { mkdir, readdir, rename, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Prompts for Asterisk to play. Asterisk has no TTS and cannot decode MP3 without extra modules, so
 * the exchange renders every prompt itself (espeak-ng, the MP3 decoder) to G.711 µ-law and writes it
 * once, named by its content hash, as a raw `.ulaw` file that format_pcm reads. Asterisk plays it as
 * `sound:<dir as Asterisk sees it>/<hash>`; on a farm the directory is a shared mount.
 *
 * One-time codes make most prompts unique, so files unused for `maxAgeMs` are swept.
 */
export interface PromptStore {
  /** The ARI media URI that plays `ulaw` (raw G.711 µ-law, 8 kHz). */
  publish(ulaw: Uint8Array): Promise<string>;
  close(): Promise<void>;
}

const EXT = '.ulaw';

export function createPromptStore(opts: { dir: string; remoteDir?: string; maxAgeMs?: number }): PromptStore {
  const remote = (opts.remoteDir || opts.dir).replace(/\/+$/, '');
  const maxAgeMs = opts.maxAgeMs ?? 60 * 60_000;
  // Files known to be on disk and fresh; past half the age they are touched again before use.
  const fresh = new Map<string, { done: Promise<void>; at: number }>();
  let ready: Promise<unknown> | null = null;

  async function write(path: string, audio: Uint8Array): Promise<void> {
    ready ??= mkdir(opts.dir, { recursive: true });
    await ready;
    try {
      await stat(path);
      const now = new Date();
      await utimes(path, now, now);
      return;
    } catch {
      // not on disk (never written, or swept)
    }
    // Write then rename: Asterisk never opens a half-written file.
    const tmp = `${path}.${process.pid}.tmp`;
    await writeFile(tmp, audio);
    await rename(tmp, path);
  }

  async function sweep(): Promise<void> {
    const cutoff = Date.now() - maxAgeMs;
    for (const [hash, f] of fresh) if (f.at < cutoff) fresh.delete(hash);
    let names: string[];
    try {
      names = await readdir(opts.dir);
    } catch {
      return;
    }
    for (const name of names) {
      if (!name.endsWith(EXT)) continue;
      const path = join(opts.dir, name);
      try {
        if ((await stat(path)).mtimeMs < cutoff) await unlink(path);
      } catch {
        // gone already
      }
    }
  }
  const timer = setInterval(() => void sweep(), Math.max(1000, maxAgeMs / 6));
  timer.unref();

  return {
    async publish(ulaw) {
      const hash = createHash('sha256').update(ulaw).digest('hex').slice(0, 40);
      const now = Date.now();
      let f = fresh.get(hash);
      if (!f || now - f.at > maxAgeMs / 2) {
        f = { done: write(join(opts.dir, `${hash}${EXT}`), ulaw), at: now };
        fresh.set(hash, f);
        const entry = f;
        f.done.catch(() => {
          if (fresh.get(hash) === entry) fresh.delete(hash);
        });
      }
      await f.done;
      return `sound:${remote}/${hash}`;
    },
    async close() {
      clearInterval(timer);
    },
  };
}
