import { parentPort } from 'node:worker_threads';
import { MPEGDecoder } from 'mpg123-decoder';
import { encodeG711 } from './g711.js';
import { downmix, floatToInt16, resampleLinear, TELEPHONY_RATE } from './pcm.js';
import type { Mp3Request, Mp3Response } from './mp3.js';

/** Decodes MP3 off the main thread: WebAssembly mpg123, downmix, resample to 8 kHz, G.711. */

const port = parentPort;
if (!port) throw new Error('mp3-worker must run in a worker thread');

let decoder: MPEGDecoder | null = null;
let queue: Promise<void> = Promise.resolve();

async function decode(req: Mp3Request): Promise<Mp3Response> {
  if (!decoder) {
    decoder = new MPEGDecoder();
    await decoder.ready;
  } else {
    await decoder.reset();
  }
  const result = decoder.decode(req.data);
  if (result.samplesDecoded === 0 || result.sampleRate === 0)
    return { id: req.id, error: 'no MPEG audio frames could be decoded' };
  const pcm = floatToInt16(downmix(result.channelData.map((ch) => ch.subarray(0, result.samplesDecoded))));
  const audio = encodeG711(req.codec, resampleLinear(pcm, result.sampleRate, TELEPHONY_RATE));
  return { id: req.id, audio, sourceRate: result.sampleRate, channels: result.channelData.length };
}

port.on('message', (req: Mp3Request) => {
  // One decode at a time: the WebAssembly decoder holds state between calls.
  queue = queue.then(async () => {
    let res: Mp3Response;
    try {
      res = await decode(req);
    } catch (err) {
      res = { id: req.id, error: err instanceof Error ? err.message : 'decoder failed' };
    }
    port.postMessage(res, 'audio' in res ? [res.audio.buffer as ArrayBuffer] : []);
  });
});
