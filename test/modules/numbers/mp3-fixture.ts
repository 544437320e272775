import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * An MP3 made by Debian's `lame` from 8 kHz mono 16-bit samples (a greeting upload's real input):
 * `hz` a sine of that frequency, 0 silence. An ID3v2 tag is added when `title` is given.
 */
export function lameMp3(o: { seconds: number; hz: number; title?: string }): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'svc-greeting-'));
  try {
    const n = Math.round(8000 * o.seconds);
    const pcm = Buffer.alloc(n * 2);
    if (o.hz > 0)
      for (let i = 0; i < n; i++) pcm.writeInt16LE(Math.round(6000 * Math.sin((2 * Math.PI * o.hz * i) / 8000)), i * 2);
    writeFileSync(join(dir, 'in.raw'), pcm);
    const tag = o.title ? ['--add-id3v2', '--tt', o.title] : [];
    const args = ['-r', '-s', '8', '--bitwidth', '16', '--signed', '--little-endian', '-m', 'm', ...tag, '--silent'];
    const r = spawnSync('lame', [...args, join(dir, 'in.raw'), join(dir, 'out.mp3')]);
    if (r.status !== 0) throw new Error(`lame failed: ${r.stderr}`);
    return readFileSync(join(dir, 'out.mp3'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
