/**
 * G.711 µ-law (PCMU) and A-law (PCMA). Encoding goes through 64 Ki lookup tables built once
 * on first use, so the per-sample cost on the hot path is one array read.
 */
export type G711Codec = 'PCMU' | 'PCMA';

export const G711_PAYLOAD_TYPE: Readonly<Record<G711Codec, number>> = Object.freeze({ PCMU: 0, PCMA: 8 });

/** The encoded value of a zero sample: what an idle line sends. */
export const G711_SILENCE: Readonly<Record<G711Codec, number>> = Object.freeze({ PCMU: 0xff, PCMA: 0xd5 });

const ULAW_BIAS = 0x84;
const ULAW_CLIP = 32635;

function ulawEncodeSample(input: number): number {
  let sample = input;
  const sign = sample < 0 ? 0x80 : 0;
  if (sign) sample = -sample;
  if (sample > ULAW_CLIP) sample = ULAW_CLIP;
  sample += ULAW_BIAS;
  let exponent = 7;
  for (let mask = 0x4000; (sample & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
  const mantissa = (sample >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

function ulawDecodeSample(input: number): number {
  const u = ~input & 0xff;
  const exponent = (u >> 4) & 0x07;
  const sample = ((((u & 0x0f) << 3) + ULAW_BIAS) << exponent) - ULAW_BIAS;
  return u & 0x80 ? -sample : sample;
}

const ALAW_SEG_END = [0x1f, 0x3f, 0x7f, 0xff, 0x1ff, 0x3ff, 0x7ff, 0xfff];

function alawEncodeSample(input: number): number {
  let pcm = input >> 3;
  let mask: number;
  if (pcm >= 0) {
    mask = 0xd5;
  } else {
    mask = 0x55;
    pcm = -pcm - 1;
  }
  let seg = 0;
  while (seg < 8 && pcm > (ALAW_SEG_END[seg] as number)) seg++;
  if (seg >= 8) return 0x7f ^ mask;
  const aval = (seg << 4) | (seg < 2 ? (pcm >> 1) & 0x0f : (pcm >> seg) & 0x0f);
  return aval ^ mask;
}

function alawDecodeSample(input: number): number {
  const a = input ^ 0x55;
  let t = (a & 0x0f) << 4;
  const seg = (a & 0x70) >> 4;
  if (seg === 0) t += 8;
  else if (seg === 1) t += 0x108;
  else t = (t + 0x108) << (seg - 1);
  return a & 0x80 ? t : -t;
}

interface Tables {
  encode: Uint8Array;
  decode: Int16Array;
}

const tables: Partial<Record<G711Codec, Tables>> = {};

function tablesFor(codec: G711Codec): Tables {
  const cached = tables[codec];
  if (cached) return cached;
  const enc = codec === 'PCMU' ? ulawEncodeSample : alawEncodeSample;
  const dec = codec === 'PCMU' ? ulawDecodeSample : alawDecodeSample;
  // Indexed by the sample's 16-bit two's-complement pattern.
  const encode = new Uint8Array(65536);
  for (let i = 0; i < 65536; i++) encode[i] = enc(i >= 32768 ? i - 65536 : i);
  const decode = new Int16Array(256);
  for (let i = 0; i < 256; i++) decode[i] = dec(i);
  const built = { encode, decode };
  tables[codec] = built;
  return built;
}

/** Encodes 16-bit linear PCM to G.711, one byte per sample. */
export function encodeG711(codec: G711Codec, pcm: Int16Array): Uint8Array {
  const { encode } = tablesFor(codec);
  const out = new Uint8Array(pcm.length);
  for (let i = 0; i < pcm.length; i++) out[i] = encode[(pcm[i] as number) & 0xffff] as number;
  return out;
}

/** Decodes G.711 bytes to 16-bit linear PCM. */
export function decodeG711(codec: G711Codec, data: Uint8Array): Int16Array {
  const { decode } = tablesFor(codec);
  const out = new Int16Array(data.length);
  for (let i = 0; i < data.length; i++) out[i] = decode[data[i] as number] as number;
  return out;
}

export function isG711Codec(value: unknown): value is G711Codec {
  return value === 'PCMU' || value === 'PCMA';
}
