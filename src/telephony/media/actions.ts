import type { DtmfKey } from './dtmf.js';
import type { G711Codec } from './g711.js';
import type { Mp3Decoder } from './mp3.js';
import type { Tts, TtsLanguage } from './tts.js';
import type { ActionsOutcome, CallAction, GatherResult, GatherSpec } from '../engine.js';

/**
 * Runs a call's actions (spec: action items of POST /comms/calls) against a media stream:
 * say, play, gather, pause, hangup, in order. A key press interrupts the prompt being played;
 * keys pressed outside a gather are not kept.
 */

export type { ActionsOutcome, CallAction, GatherResult, GatherSpec } from '../engine.js';

/** What the runner needs from a media stream; a native session and an ARI channel both fit. */
export interface ActionMedia {
  readonly codec: G711Codec;
  play(audio: Uint8Array): Promise<{ interrupted: boolean }>;
  stop(): void;
  onDtmf(listener: (key: DtmfKey) => void): () => void;
  /** The far end's voice frames in `codec`; absent where the engine cannot hand audio out. */
  onAudio?(listener: (frame: Uint8Array) => void): () => void;
  /**
   * Plays queue back to back with no gap between them (the native RTP session), so speech can be
   * handed over piece by piece as it is rendered; absent where each play starts on its own.
   */
  readonly gapless?: boolean;
}

/** Turns prompts into G.711 in the stream's codec. */
export interface PromptRenderer {
  /** `voice`: an espeak-ng voice (with its variant, `en-us+f3`) instead of the language's own. */
  say(text: string, language: TtsLanguage, codec: G711Codec, voice?: string): Promise<Uint8Array>;
  /** `say` handing the audio to `onAudio` in order as it is rendered (whole 20 ms frames). */
  sayStream?(
    text: string,
    language: TtsLanguage,
    codec: G711Codec,
    voice: string | undefined,
    onAudio: (audio: Uint8Array) => void,
  ): Promise<void>;
  play(mp3: Uint8Array, codec: G711Codec): Promise<Uint8Array>;
  /** Makes the next `say` in this voice start faster (a synthesiser started ahead). */
  warm?(language: TtsLanguage, voice?: string): void;
}

/** Timers, injectable so tests need not wait out real gather timeouts. */
export interface ActionClock {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realClock: ActionClock = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

export interface RunActionsOptions {
  media: ActionMedia;
  actions: readonly CallAction[];
  /** Language for `say` items that name none (default `en`). */
  language?: TtsLanguage;
  renderer: PromptRenderer;
  clock?: ActionClock;
  /** Aborting stops the script at once (the call ended). */
  signal?: AbortSignal;
  onGathered?: (result: GatherResult) => void;
}

/** Renders with the TTS cache and the MP3 worker; a decoded MP3 is kept per byte array and codec. */
export function createPromptRenderer(deps: { tts: Tts; mp3: Mp3Decoder }): PromptRenderer {
  const decoded = new WeakMap<Uint8Array, Map<G711Codec, Promise<Uint8Array>>>();
  return {
    say: (text, language, codec, voice) =>
      deps.tts.synthesize(voice ? { text, language, codec, voice } : { text, language, codec }),
    warm: (language, voice) => deps.tts.warm(language, voice),
    async sayStream(text, language, codec, voice, onAudio) {
      await deps.tts.stream(voice ? { text, language, codec, voice } : { text, language, codec }, onAudio);
    },
    play(mp3, codec) {
      let byCodec = decoded.get(mp3);
      if (!byCodec) {
        byCodec = new Map();
        decoded.set(mp3, byCodec);
      }
      let audio = byCodec.get(codec);
      if (!audio) {
        audio = deps.mp3.decode(mp3, codec);
        byCodec.set(codec, audio);
        audio.catch(() => byCodec?.delete(codec));
      }
      return audio;
    },
  };
}

export async function runActions(options: RunActionsOptions): Promise<ActionsOutcome> {
  const { media, actions, renderer, signal, onGathered } = options;
  const clock = options.clock ?? realClock;
  const defaultLanguage = options.language ?? 'en';
  const gathered: GatherResult[] = [];

  // One subscription for the whole script; whoever is listening now gets the keys.
  let keySink: ((key: DtmfKey) => void) | null = null;
  const unsubscribe = media.onDtmf((key) => keySink?.(key));
  let abortWaiter: (() => void) | null = null;
  const onAbort = (): void => {
    media.stop();
    abortWaiter?.();
  };
  signal?.addEventListener('abort', onAbort);

  const render = (prompt: { say?: string; play?: Uint8Array; language?: TtsLanguage }): Promise<Uint8Array> | null => {
    if (prompt.play) return renderer.play(prompt.play, media.codec);
    if (prompt.say !== undefined) return renderer.say(prompt.say, prompt.language ?? defaultLanguage, media.codec);
    return null;
  };

  /** Plays a prompt that the next key press cuts short; `onKey` also receives that key. */
  async function playPrompt(audio: Uint8Array, onKey: (key: DtmfKey) => void): Promise<void> {
    let playing = true;
    keySink = (key) => {
      if (playing) {
        playing = false;
        media.stop();
      }
      onKey(key);
    };
    await media.play(audio);
    playing = false;
  }

  function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const handle = clock.setTimeout(() => {
        abortWaiter = null;
        resolve();
      }, ms);
      abortWaiter = () => {
        clock.clearTimeout(handle);
        abortWaiter = null;
        resolve();
      };
    });
  }

  async function collectOnce(spec: GatherSpec, audio: Uint8Array | null): Promise<string> {
    const maxDigits = spec.digits ?? 1;
    const timeoutMs = (spec.timeout ?? 5) * 1000;
    const finishKey = spec.finishOnKey ?? '#';
    let digits = '';
    let done = false;
    let timer: unknown = null;
    let finish: () => void = () => undefined;
    const finished = new Promise<void>((resolve) => {
      finish = () => {
        if (done) return;
        done = true;
        if (timer !== null) clock.clearTimeout(timer);
        keySink = null;
        abortWaiter = null;
        resolve();
      };
    });
    abortWaiter = finish;
    const arm = (): void => {
      if (timer !== null) clock.clearTimeout(timer);
      timer = clock.setTimeout(finish, timeoutMs);
    };
    const onKey = (key: DtmfKey): void => {
      if (done) return;
      if (finishKey !== '' && key === finishKey) return finish();
      digits += key;
      if (digits.length >= maxDigits) return finish();
      arm();
    };
    if (audio) await playPrompt(audio, onKey);
    if (!done) {
      keySink = onKey;
      arm();
    }
    await finished;
    return digits;
  }

  async function gather(spec: GatherSpec, index: number, rendering: Promise<Uint8Array> | null): Promise<GatherResult> {
    const audio = rendering ? await rendering : null;
    const tries = spec.tries ?? 1;
    let result: GatherResult = { index, digits: null, status: 'no_input' };
    for (let attempt = 0; attempt < tries && !signal?.aborted; attempt++) {
      const digits = await collectOnce(spec, audio);
      if (digits !== '') {
        result = { index, digits, status: 'received' };
        break;
      }
    }
    return result;
  }

  // Every prompt starts rendering now, so each is ready when its turn comes and one prompt
  // follows another without a gap of silence.
  const prepared = actions.map((action) => {
    const prompt =
      'gather' in action ? render(action.gather) : 'say' in action || 'play' in action ? render(action) : null;
    prompt?.catch(() => undefined); // awaited (and so reported) when its action runs
    return prompt;
  });

  try {
    let gatherIndex = 0;
    for (const [i, action] of actions.entries()) {
      if (signal?.aborted) return { status: 'aborted', gathered };
      if ('hangup' in action) return { status: 'hangup', gathered };
      if ('pause' in action) {
        await sleep(action.pause * 1000);
      } else if ('gather' in action) {
        const result = await gather(action.gather, gatherIndex++, prepared[i] ?? null);
        if (signal?.aborted) return { status: 'aborted', gathered };
        gathered.push(result);
        onGathered?.(result);
      } else {
        const audio = await (prepared[i] as Promise<Uint8Array>);
        if (signal?.aborted) return { status: 'aborted', gathered };
        await playPrompt(audio, () => undefined);
        keySink = null;
      }
    }
    return { status: signal?.aborted ? 'aborted' : 'completed', gathered };
  } finally {
    keySink = null;
    unsubscribe();
    signal?.removeEventListener('abort', onAbort);
  }
}
