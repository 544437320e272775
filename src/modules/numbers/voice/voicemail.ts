import type { AnsweredCall } from '../../../telephony/media/answered-call.js';
import { decodeG711, encodeG711, type G711Codec } from '../../../telephony/media/g711.js';
import { TELEPHONY_RATE } from '../../../telephony/media/pcm.js';
import type { GreetingAudio } from './greeting-cache.js';

/** What a number's voicemail says and how long it listens (the number's voicemail settings). */
export interface VoicemailScript {
  /** The greeting: decoded audio in both laws (an uploaded or URL greeting) or text spoken with the built-in voices. */
  greeting: { audio: GreetingAudio } | { text: string };
  maxSeconds: number;
  /** Silence after the caller last spoke (or after the beep, if never) that ends the message. */
  silenceSeconds: number;
  /** Mean absolute sample level above which a frame is speech (`[ai] speech_level`). */
  speechLevel: number;
}

export interface RecordedMessage {
  /** 16-bit mono PCM at 8 kHz, from the beep to the end. */
  pcm: Int16Array;
  durationMs: number;
  /** Why it stopped. */
  end: 'silence' | 'max_length' | 'caller_hung_up';
}

const BEEP_HZ = 1000;
const BEEP_MS = 400;

/** A 1 kHz tone, the cue to speak, in the call's codec. */
export function beep(codec: G711Codec): Uint8Array {
  const n = (TELEPHONY_RATE * BEEP_MS) / 1000;
  const pcm = new Int16Array(n);
  for (let i = 0; i < n; i++) pcm[i] = Math.round(8000 * Math.sin((2 * Math.PI * BEEP_HZ * i) / TELEPHONY_RATE));
  return encodeG711(codec, pcm);
}

/**
 * Voicemail on an answered call: the greeting, the beep, then the caller's audio until the caller
 * hangs up, stays silent for `silenceSeconds`, or `maxSeconds` pass. The message is the audio from
 * the beep on; the caller's silence before hanging up stays in it, as on any answering machine.
 */
export async function recordVoicemail(answered: AnsweredCall, s: VoicemailScript): Promise<RecordedMessage | null> {
  const { call, session } = answered;
  const over = (): boolean => call.state === 'ended';
  if ('audio' in s.greeting) await session.play(s.greeting.audio[session.codec]);
  else await call.speak(s.greeting.text);
  if (over()) return null;
  // The beep goes out through the same queue as every prompt: its end is when the recording starts.
  await session.play(beep(session.codec));
  if (over()) return null;
  const chunks: Int16Array[] = [];
  let samples = 0;

  return new Promise<RecordedMessage>((resolve) => {
    let done = false;
    let silence: NodeJS.Timeout | undefined;
    const finish = (end: RecordedMessage['end']) => {
      if (done) return;
      done = true;
      clearTimeout(silence);
      clearTimeout(limit);
      unlisten();
      const pcm = new Int16Array(samples);
      let at = 0;
      for (const c of chunks) {
        pcm.set(c, at);
        at += c.length;
      }
      resolve({ pcm, durationMs: Math.round((samples * 1000) / TELEPHONY_RATE), end });
    };
    const armSilence = () => {
      clearTimeout(silence);
      silence = setTimeout(() => finish('silence'), s.silenceSeconds * 1000);
    };
    const maxSamples = s.maxSeconds * TELEPHONY_RATE;
    const unlisten = call.listen((frame, frameCodec) => {
      if (done) return;
      const pcm = decodeG711(frameCodec, frame);
      const room = maxSamples - samples;
      const kept = pcm.length > room ? pcm.subarray(0, room) : pcm;
      chunks.push(kept);
      samples += kept.length;
      let sum = 0;
      for (const v of pcm) sum += Math.abs(v);
      if (pcm.length > 0 && sum / pcm.length >= s.speechLevel) armSilence();
      if (samples >= maxSamples) finish('max_length');
    });
    // Wall time bounds the message too: a caller whose audio stops (on hold, muted RTP) still ends it.
    const limit = setTimeout(() => finish('max_length'), s.maxSeconds * 1000 + 1000);
    armSilence();
    void call.ended.then(() => finish('caller_hung_up'));
  });
}
