/**
 * Writes a mono MPEG-1 Layer I stream at 48 kHz carrying a steady tone in one subband. No MP3
 * encoder is available on the build machine and the only Layer III file at hand is silent, so
 * this gives the decoder tests audio with real signal; mpg123 decodes all three layers.
 */
export function mpegLayer1Tone(frames: number): Uint8Array {
  const FRAME_BYTES = 192; // 12 × 192 kbit/s ÷ 48 kHz × 4
  const out = new Uint8Array(frames * FRAME_BYTES);
  for (let f = 0; f < frames; f++) {
    const base = f * FRAME_BYTES;
    // sync, MPEG-1, Layer I, no CRC | 192 kbit/s, 48 kHz | mono
    out.set([0xff, 0xff, 0x64, 0xc0], base);
    let bitPos = (base + 4) * 8;
    const put = (value: number, bits: number): void => {
      for (let i = bits - 1; i >= 0; i--) {
        if ((value >> i) & 1) out[bitPos >> 3] = (out[bitPos >> 3] as number) | (0x80 >> (bitPos & 7));
        bitPos++;
      }
    };
    const SUBBAND = 1;
    for (let sb = 0; sb < 32; sb++) put(sb === SUBBAND ? 3 : 0, 4); // 4-bit samples in one subband
    put(4, 6); // scalefactor index 4: about 1.0 full scale
    for (let s = 0; s < 12; s++) put(s % 2 === 0 ? 0b1110 : 0b0001, 4);
  }
  return out;
}
