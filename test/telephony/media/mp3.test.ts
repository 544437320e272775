import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createMp3Decoder, looksLikeMp3 } from '../../../src/telephony/media/mp3.js';
import { decodeG711 } from '../../../src/telephony/media/g711.js';
import { mpegLayer1Tone } from './helpers/mpeg-layer1.js';

/**
 * 1.175 s (25,920 frames) of stereo 22.05 kHz silence encoded to MP3 Layer III with an ID3v2 tag
 * by Debian's `lame`, run as a separate program when the test starts.
 */
function silenceMp3(): Uint8Array {
  const dir = mkdtempSync(join(tmpdir(), 'svc-mp3-'));
  try {
    writeFileSync(join(dir, 'in.raw'), Buffer.alloc(25920 * 4));
    const r = spawnSync('lame', [
      '-r',
      '-s',
      '22.05',
      '--bitwidth',
      '16',
      '--signed',
      '--little-endian',
      '-m',
      's',
      '--add-id3v2',
      '--tt',
      'silence',
      '--silent',
      join(dir, 'in.raw'),
      join(dir, 'out.mp3'),
    ]);
    if (r.status !== 0) throw new Error(`lame failed: ${r.stderr}`);
    return new Uint8Array(readFileSync(join(dir, 'out.mp3')));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
const haveLame = existsSync('/usr/bin/lame');

const dec = createMp3Decoder({ log: pino({ level: 'silent' }), maxBytes: 64 * 1024 });
t.teardown(() => dec.close());

t.test(
  'decodes a stereo 22.05 kHz MP3 to 8 kHz mono G.711 in a worker',
  { skip: haveLame ? false : 'lame not installed' },
  async (t) => {
    const mp3 = silenceMp3();
    t.ok(looksLikeMp3(mp3));
    const [ulaw, alaw] = await Promise.all([dec.decode(mp3, 'PCMU'), dec.decode(mp3, 'PCMA')]);
    const expected = Math.floor((25920 * 8000) / 22050);
    // The encoder pads to whole 576-sample granules (plus its delay unless the decoder trims it): allow two frames.
    const slack = Math.ceil((2 * 1152 * 8000) / 22050);
    t.ok(Math.abs(ulaw.length - expected) <= slack, `about 1.175 s at 8000 samples/s (${ulaw.length} vs ${expected})`);
    t.equal(alaw.length, ulaw.length);
    t.ok(
      ulaw.every((b) => b === 0xff || b === 0x7f),
      'silence stays silence',
    );
    t.equal(mp3[0], 0x49, 'input left intact for the caller');
    const tone = await dec.decode(mpegLayer1Tone(125), 'PCMU'); // 125 × 384 samples at 48 kHz = 1 s
    t.ok(Math.abs(tone.length - 8000) <= 160, `one second at 8 kHz (${tone.length})`);
    const pcm = decodeG711('PCMU', tone);
    const peak = pcm.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    t.ok(peak > 1000, `carries signal (peak ${peak})`);
  },
);

t.test('rejects non-MP3 and oversize input with coded errors', async (t) => {
  await t.rejects(dec.decode(new TextEncoder().encode('<html>not audio</html>'), 'PCMU'), {
    code: 'MEDIA_UNSUPPORTED_AUDIO',
    message: /not an MP3/,
  });
  await t.rejects(
    dec.decode(Uint8Array.of(0xff, 0xf1, 0x50, 0x80), 'PCMU'),
    { code: 'MEDIA_UNSUPPORTED_AUDIO' },
    'ADTS AAC header refused',
  );
  await t.rejects(dec.decode(new Uint8Array(64 * 1024 + 1).fill(0xff), 'PCMU'), { code: 'MEDIA_AUDIO_TOO_LARGE' });
  // Looks like MP3 (ID3 tag) but holds no frames: the worker reports it.
  const fake = new Uint8Array(200);
  fake.set([0x49, 0x44, 0x33, 4, 0, 0, 0, 0, 0, 10]);
  await t.rejects(dec.decode(fake, 'PCMU'), { code: 'MEDIA_UNSUPPORTED_AUDIO', message: /could not be decoded/ });
});
