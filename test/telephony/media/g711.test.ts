import t from 'tap';
import { decodeG711, encodeG711, G711_SILENCE } from '../../../src/telephony/media/g711.js';

t.test('silence encodes to the codec idle byte and decodes near zero', async (t) => {
  t.equal(encodeG711('PCMU', Int16Array.of(0))[0], 0xff);
  t.equal(encodeG711('PCMA', Int16Array.of(0))[0], 0xd5);
  t.equal(decodeG711('PCMU', Uint8Array.of(G711_SILENCE.PCMU))[0], 0);
  t.equal(decodeG711('PCMA', Uint8Array.of(G711_SILENCE.PCMA))[0], 8);
});

t.test('known reference values (ITU-T G.711 tables)', async (t) => {
  // µ-law 0x80 / 0x00 are the extremes, A-law 0xAA / 0x2A likewise.
  t.equal(decodeG711('PCMU', Uint8Array.of(0x80))[0], 32124);
  t.equal(decodeG711('PCMU', Uint8Array.of(0x00))[0], -32124);
  t.equal(decodeG711('PCMA', Uint8Array.of(0xaa))[0], 32256);
  t.equal(decodeG711('PCMA', Uint8Array.of(0x2a))[0], -32256);
  t.same([...encodeG711('PCMU', Int16Array.of(32767, -32768))], [0x80, 0x00]);
  t.same([...encodeG711('PCMA', Int16Array.of(32767, -32768))], [0xaa, 0x2a]);
});

for (const codec of ['PCMU', 'PCMA'] as const) {
  t.test(`${codec} round trip stays within the segment step`, async (t) => {
    const pcm = new Int16Array(65536);
    for (let i = 0; i < 65536; i++) pcm[i] = i - 32768;
    const back = decodeG711(codec, encodeG711(codec, pcm));
    let worst = 0;
    for (let i = 0; i < pcm.length; i++) {
      const v = pcm[i] as number;
      const err = Math.abs((back[i] as number) - v) / Math.max(256, Math.abs(v));
      worst = Math.max(worst, err);
    }
    t.ok(worst < 0.07, `relative error ${worst.toFixed(4)} below 7%`);
    // Every byte decodes, and re-encoding a decoded value gives the same byte (except -0/+0 pairs).
    const all = new Uint8Array(256).map((_, i) => i);
    const re = encodeG711(codec, decodeG711(codec, all));
    const mismatches = [...all].filter((b, i) => re[i] !== b);
    t.ok(mismatches.length <= 1, `decoded bytes re-encode to themselves (${mismatches.length} mismatch)`);
  });
}
