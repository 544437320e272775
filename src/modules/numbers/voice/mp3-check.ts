/**
 * Whether bytes are an MPEG audio file (what the media plane's greeting player decodes): an ID3v2
 * tag may come first, then two consecutive valid frame headers. The file's name and the declared
 * content type are never trusted: a WAV, an image or a script with an .mp3 name is refused here.
 */

// Kbit/s by [version is MPEG-1][layer index][bitrate index]; 0 = free or bad.
const BITRATES: Record<'v1' | 'v2', Record<number, number[]>> = {
  v1: {
    3: [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448],
    2: [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],
    1: [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
  },
  v2: {
    3: [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],
    2: [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
    1: [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
  },
};
const RATES: Record<number, number[]> = { 3: [44100, 48000, 32000], 2: [22050, 24000, 16000], 0: [11025, 12000, 8000] };

/** The length of the frame whose header starts at `at`, or null when no valid header is there. */
function frameLength(b: Uint8Array, at: number): number | null {
  if (at + 4 > b.length) return null;
  const h1 = b[at + 1]!;
  const h2 = b[at + 2]!;
  if (b[at] !== 0xff || (h1 & 0xe0) !== 0xe0) return null;
  const version = (h1 >> 3) & 3; // 3 MPEG-1, 2 MPEG-2, 0 MPEG-2.5, 1 reserved
  const layer = (h1 >> 1) & 3; // 3 layer I, 2 layer II, 1 layer III, 0 reserved
  const bitrateIndex = h2 >> 4;
  const rateIndex = (h2 >> 2) & 3;
  if (version === 1 || layer === 0 || bitrateIndex === 0 || bitrateIndex === 15 || rateIndex === 3) return null;
  const kbps = BITRATES[version === 3 ? 'v1' : 'v2'][layer]![bitrateIndex]!;
  const rate = RATES[version]![rateIndex]!;
  const padding = (h2 >> 1) & 1;
  if (layer === 3) return Math.floor(((12 * kbps * 1000) / rate + padding) * 4);
  const perFrame = layer === 1 && version !== 3 ? 72 : 144;
  return Math.floor((perFrame * kbps * 1000) / rate) + padding;
}

export function isMp3(b: Uint8Array): boolean {
  let at = 0;
  // ID3v2: "ID3", version, flags, then a 28-bit synchsafe size (plus a 10-byte footer when flagged).
  if (b.length >= 10 && b[0] === 0x49 && b[1] === 0x44 && b[2] === 0x33) {
    const size = ((b[6]! & 0x7f) << 21) | ((b[7]! & 0x7f) << 14) | ((b[8]! & 0x7f) << 7) | (b[9]! & 0x7f);
    at = 10 + size + (b[5]! & 0x10 ? 10 : 0);
  }
  const first = frameLength(b, at);
  if (first === null || first < 4) return false;
  // One frame header can be chance; the next one starting where this one ends is a stream.
  return at + first === b.length || frameLength(b, at + first) !== null;
}
