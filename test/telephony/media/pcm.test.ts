import t from 'tap';
import {
  createWavStream,
  downmix,
  floatToInt16,
  parseWav,
  resampleLinear,
  wavToTelephony,
} from '../../../src/telephony/media/pcm.js';

function wav(rate: number, channels: number, samples: number[], streamingHeader = false): Uint8Array {
  const data = Buffer.alloc(samples.length * 2);
  samples.forEach((s, i) => data.writeInt16LE(s, i * 2));
  const h = Buffer.alloc(44);
  h.write('RIFF', 0);
  h.writeUInt32LE(streamingHeader ? 0x7fffffff : 36 + data.length, 4);
  h.write('WAVE', 8);
  h.write('fmt ', 12);
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(channels, 22);
  h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(rate * channels * 2, 28);
  h.writeUInt16LE(channels * 2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36);
  h.writeUInt32LE(streamingHeader ? 0x7fffffff : data.length, 40);
  return Buffer.concat([h, data]);
}

t.test('parseWav reads fmt and data, including a streaming header', async (t) => {
  const a = parseWav(wav(22050, 1, [1, -2, 3]));
  t.same([a.sampleRate, a.channels, [...a.samples]], [22050, 1, [1, -2, 3]]);
  const b = parseWav(wav(16000, 2, [5, 6, 7, 8], true));
  t.same([...b.samples], [5, 6, 7, 8]);
  t.throws(() => parseWav(Buffer.from('ID3 not a wav file')), /RIFF/);
});

t.test('resampling keeps duration and a low tone', async (t) => {
  const rate = 22050;
  const input = new Int16Array(rate); // one second of 440 Hz
  for (let i = 0; i < input.length; i++) input[i] = Math.round(10000 * Math.sin((2 * Math.PI * 440 * i) / rate));
  const out = resampleLinear(input, rate, 8000);
  t.equal(out.length, 8000);
  // Zero crossings of a 440 Hz tone over one second: about 880.
  let crossings = 0;
  for (let i = 1; i < out.length; i++) if ((out[i - 1] as number) < 0 !== (out[i] as number) < 0) crossings++;
  t.ok(Math.abs(crossings - 880) <= 4, `crossings ${crossings}`);
  const peak = out.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  t.ok(peak > 8000 && peak <= 10000, `amplitude kept (${peak})`);
  t.equal(resampleLinear(input, 8000, 8000), input, 'same rate is a no-op');
  t.throws(() => resampleLinear(input, 0, 8000));
});

t.test('downmix averages channels and wavToTelephony gives 8 kHz mono', async (t) => {
  const m = downmix([Float32Array.of(1, 0.5), Float32Array.of(0, 0.5)]);
  t.same([...m], [0.5, 0.5]);
  t.same([...floatToInt16(Float32Array.of(1, -1, 0, 2))], [32767, -32768, 0, 32767]);
  const stereo = wav(
    16000,
    2,
    Array.from({ length: 3200 }, (_, i) => (i % 2 ? 1000 : 3000)),
  );
  const out = wavToTelephony(parseWav(stereo));
  t.equal(out.length, 800);
  t.equal(out[400], 2000);
});

t.test('createWavStream over pieces of any size equals wavToTelephony over the whole', async (t) => {
  for (const [rate, channels] of [
    [22050, 1],
    [16000, 2],
    [8000, 1],
    [4000, 1],
  ] as const) {
    const samples = Array.from({ length: 2000 * channels }, (_, i) =>
      Math.round(8000 * Math.sin(i / 7) + ((i * 37) % 300)),
    );
    const bytes = wav(rate, channels, samples, true);
    const whole = wavToTelephony(parseWav(bytes));
    // Pieces cut at odd places: inside the header, inside a sample, inside a frame of channels.
    for (const size of [1, 7, 45, 333, 4096]) {
      const s = createWavStream();
      const out: number[] = [];
      for (let at = 0; at < bytes.length; at += size) out.push(...s.push(bytes.subarray(at, at + size)));
      out.push(...s.end());
      t.same(out, [...whole], `${rate} Hz, ${channels} channel(s), pieces of ${size} bytes`);
    }
  }
  t.throws(() => createWavStream().push(Buffer.from('ID3 not a wav file')), /RIFF/);
  t.throws(() => createWavStream().end(), /no data/);
});
