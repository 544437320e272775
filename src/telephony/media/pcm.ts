/** Sample-rate conversion and channel downmixing to the 8 kHz mono 16-bit that G.711 carries. */

export const TELEPHONY_RATE = 8000;

/** Averages channels into one; channels shorter than the first are treated as silent past their end. */
export function downmix(channels: readonly Float32Array[]): Float32Array {
  const first = channels[0];
  if (!first) return new Float32Array(0);
  if (channels.length === 1) return first;
  const out = new Float32Array(first.length);
  for (const ch of channels) {
    const n = Math.min(ch.length, out.length);
    for (let i = 0; i < n; i++) out[i] = (out[i] as number) + (ch[i] as number);
  }
  const scale = 1 / channels.length;
  for (let i = 0; i < out.length; i++) out[i] = (out[i] as number) * scale;
  return out;
}

export function floatToInt16(input: Float32Array): Int16Array {
  const out = new Int16Array(input.length);
  for (let i = 0; i < input.length; i++) {
    const v = Math.max(-1, Math.min(1, input[i] as number));
    out[i] = v < 0 ? Math.round(v * 32768) : Math.round(v * 32767);
  }
  return out;
}

/**
 * Linear-interpolation resampler. When shrinking the rate, a moving average as wide as the
 * ratio runs first: it is a crude low-pass, but it keeps most energy above 4 kHz (sibilants in
 * 22.05 kHz speech) from folding back as audible aliasing.
 */
export function resampleLinear(input: Int16Array, fromRate: number, toRate: number): Int16Array {
  if (!(fromRate > 0) || !(toRate > 0)) throw new RangeError('sample rates must be positive');
  if (fromRate === toRate) return input;
  let source: Int16Array | Float32Array = input;
  const ratio = fromRate / toRate;
  const width = Math.floor(ratio);
  if (width >= 2) {
    const filtered = new Float32Array(input.length);
    let acc = 0;
    for (let i = 0; i < input.length; i++) {
      acc += input[i] as number;
      if (i >= width) acc -= input[i - width] as number;
      filtered[i] = acc / Math.min(i + 1, width);
    }
    source = filtered;
  }
  const outLength = Math.floor((input.length * toRate) / fromRate);
  const out = new Int16Array(outLength);
  const last = source.length - 1;
  for (let i = 0; i < outLength; i++) {
    const pos = i * ratio;
    const idx = Math.floor(pos);
    const frac = pos - idx;
    const a = source[Math.min(idx, last)] as number;
    const b = source[Math.min(idx + 1, last)] as number;
    out[i] = Math.max(-32768, Math.min(32767, Math.round(a + (b - a) * frac)));
  }
  return out;
}

export interface WavAudio {
  sampleRate: number;
  channels: number;
  /** Interleaved 16-bit samples. */
  samples: Int16Array;
}

/**
 * Parses a 16-bit PCM WAV. espeak-ng writes its `--stdout` header before it knows the length,
 * so a data chunk size that runs past the end of the buffer means "to the end".
 */
export function parseWav(buf: Uint8Array): WavAudio {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const tag = (off: number): string =>
    String.fromCharCode(buf[off] ?? 0, buf[off + 1] ?? 0, buf[off + 2] ?? 0, buf[off + 3] ?? 0);
  if (buf.length < 12 || tag(0) !== 'RIFF' || tag(8) !== 'WAVE') throw new Error('not a RIFF/WAVE stream');
  let off = 12;
  let sampleRate = 0;
  let channels = 0;
  while (off + 8 <= buf.length) {
    const id = tag(off);
    const size = view.getUint32(off + 4, true);
    const body = off + 8;
    if (id === 'fmt ') {
      const format = view.getUint16(body, true);
      channels = view.getUint16(body + 2, true);
      sampleRate = view.getUint32(body + 4, true);
      const bits = view.getUint16(body + 14, true);
      if (format !== 1 || bits !== 16) throw new Error('only 16-bit PCM WAV is supported');
    } else if (id === 'data') {
      if (!sampleRate || !channels) throw new Error('WAV data chunk before fmt chunk');
      const end = size === 0 || body + size > buf.length ? buf.length : body + size;
      const count = Math.floor((end - body) / 2);
      const samples = new Int16Array(count);
      for (let i = 0; i < count; i++) samples[i] = view.getInt16(body + i * 2, true);
      return { sampleRate, channels, samples };
    }
    off = body + size + (size & 1);
  }
  throw new Error('WAV has no data chunk');
}

/** Converts a WAV of any rate and channel count to 8 kHz mono 16-bit. */
export function wavToTelephony(wav: WavAudio): Int16Array {
  let mono = wav.samples;
  if (wav.channels > 1) {
    const frames = Math.floor(wav.samples.length / wav.channels);
    mono = new Int16Array(frames);
    for (let i = 0; i < frames; i++) {
      let sum = 0;
      for (let c = 0; c < wav.channels; c++) sum += wav.samples[i * wav.channels + c] as number;
      mono[i] = Math.round(sum / wav.channels);
    }
  }
  return resampleLinear(mono, wav.sampleRate, TELEPHONY_RATE);
}

/** 16-bit mono PCM as a WAV file (speech-to-text uploads, voicemail recordings). */
export function wavOf(pcm: Int16Array, sampleRate: number): Uint8Array {
  const data = Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
  const head = Buffer.alloc(44);
  head.write('RIFF', 0);
  head.writeUInt32LE(36 + data.length, 4);
  head.write('WAVEfmt ', 8);
  head.writeUInt32LE(16, 16);
  head.writeUInt16LE(1, 20);
  head.writeUInt16LE(1, 22);
  head.writeUInt32LE(sampleRate, 24);
  head.writeUInt32LE(sampleRate * 2, 28);
  head.writeUInt16LE(2, 32);
  head.writeUInt16LE(16, 34);
  head.write('data', 36);
  head.writeUInt32LE(data.length, 40);
  return Buffer.concat([head, data]);
}

/**
 * `resampleLinear` and `wavToTelephony` over a WAV that arrives in pieces (espeak-ng's `--stdout`
 * as it is written): `push` takes the next bytes and returns the 8 kHz samples they complete,
 * `end` the rest. The samples it returns, joined, equal `wavToTelephony(parseWav(all bytes))`.
 */
export function createWavStream(toRate = TELEPHONY_RATE): {
  push(bytes: Uint8Array): Int16Array;
  end(): Int16Array;
} {
  let head: Uint8Array = new Uint8Array(0);
  let format: { sampleRate: number; channels: number } | null = null;
  let carry: Uint8Array = new Uint8Array(0);
  let ratio = 1;
  let width = 1;
  // Filtered mono input so far, grown by doubling.
  let source = new Float32Array(4096);
  let length = 0;
  let acc = 0;
  const window: number[] = [];
  let nextOut = 0;

  /** Parses the header once all of it is here; returns the bytes after it, or null while it is incomplete. */
  function readHeader(bytes: Uint8Array): Uint8Array | null {
    const joined = new Uint8Array(head.length + bytes.length);
    joined.set(head);
    joined.set(bytes, head.length);
    head = joined;
    const view = new DataView(joined.buffer, joined.byteOffset, joined.byteLength);
    const tag = (off: number) => String.fromCharCode(...joined.subarray(off, off + 4));
    if (joined.length < 12) return null;
    if (tag(0) !== 'RIFF' || tag(8) !== 'WAVE') throw new Error('not a RIFF/WAVE stream');
    let off = 12;
    let fmt: { sampleRate: number; channels: number } | null = null;
    while (off + 8 <= joined.length) {
      const size = view.getUint32(off + 4, true);
      const body = off + 8;
      if (tag(off) === 'data') {
        if (!fmt) throw new Error('WAV data chunk before fmt chunk');
        format = fmt;
        ratio = fmt.sampleRate / toRate;
        width = Math.max(1, Math.floor(ratio));
        return joined.subarray(body);
      }
      if (tag(off) === 'fmt ') {
        if (body + 16 > joined.length) return null;
        if (view.getUint16(body, true) !== 1 || view.getUint16(body + 14, true) !== 16)
          throw new Error('only 16-bit PCM WAV is supported');
        fmt = { channels: view.getUint16(body + 2, true), sampleRate: view.getUint32(body + 4, true) };
      }
      off = body + size + (size & 1);
    }
    return null;
  }

  function append(bytes: Uint8Array): void {
    const f = format!;
    const all = carry.length ? new Uint8Array(carry.length + bytes.length) : bytes;
    if (carry.length) {
      all.set(carry);
      all.set(bytes, carry.length);
    }
    const frameBytes = 2 * f.channels;
    const frames = Math.floor(all.length / frameBytes);
    carry = all.slice(frames * frameBytes);
    if (length + frames > source.length) {
      const grown = new Float32Array(Math.max(source.length * 2, length + frames));
      grown.set(source.subarray(0, length));
      source = grown;
    }
    const view = new DataView(all.buffer, all.byteOffset, frames * frameBytes);
    for (let i = 0; i < frames; i++) {
      let sum = 0;
      for (let c = 0; c < f.channels; c++) sum += view.getInt16((i * f.channels + c) * 2, true);
      const x = f.channels > 1 ? Math.round(sum / f.channels) : sum;
      if (width >= 2) {
        acc += x;
        window.push(x);
        if (window.length > width) acc -= window.shift()!;
        source[length++] = acc / window.length;
      } else source[length++] = x;
    }
  }

  /** Output samples whose two source samples are both here (all of them at the end). */
  function emit(final: boolean): Int16Array {
    if (!format) return new Int16Array(0);
    if (format.sampleRate === toRate) {
      const out = new Int16Array(length - nextOut);
      for (let i = 0; i < out.length; i++) out[i] = source[nextOut + i] as number;
      nextOut = length;
      return out;
    }
    // As many as the batch resampler makes of the input so far (never more than of all of it).
    const total = Math.floor((length * toRate) / format.sampleRate);
    const last = length - 1;
    const out: number[] = [];
    for (let i = nextOut; i < total; i++) {
      const pos = i * ratio;
      const idx = Math.floor(pos);
      if (!final && idx + 1 > last) break;
      const frac = pos - idx;
      const a = source[Math.min(idx, last)] as number;
      const b = source[Math.min(idx + 1, last)] as number;
      out.push(Math.max(-32768, Math.min(32767, Math.round(a + (b - a) * frac))));
      nextOut = i + 1;
    }
    return Int16Array.from(out);
  }

  return {
    push(bytes) {
      if (!format) {
        const rest = readHeader(bytes);
        if (rest === null) return new Int16Array(0);
        bytes = rest;
      }
      append(bytes);
      return emit(false);
    },
    end() {
      if (!format) throw new Error('WAV has no data chunk');
      return emit(true);
    },
  };
}
