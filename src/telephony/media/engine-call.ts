import { channel } from 'node:diagnostics_channel';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type {
  ActionsOutcome,
  CallAction,
  CallEnd,
  CallEndCause,
  CallLanguage,
  CallState,
  EngineCall,
  EngineCallEvents,
  GatherResult,
} from '../engine.js';
import { runActions, type ActionClock, type ActionMedia, type PromptRenderer } from './actions.js';
import { MediaError } from './errors.js';
import { decodeG711, encodeG711 } from './g711.js';

/**
 * What every engine's call shares once it has a media stream: the event listeners, and the media
 * operations of `EngineCall` (speak, play, gather, pause, the action script, hangup) over the
 * stream. Each engine keeps only how it places, answers and ends a call.
 */

type Listeners = { [E in keyof EngineCallEvents]: EngineCallEvents[E][] };

export interface CallEvents {
  on<E extends keyof EngineCallEvents>(event: E, listener: EngineCallEvents[E]): void;
  emit<E extends keyof EngineCallEvents>(event: E, ...args: Parameters<EngineCallEvents[E]>): void;
}

/** Listeners called in order; one that throws is logged and does not stop the others. */
export function createCallEvents(log: Logger): CallEvents {
  const listeners: Listeners = { dialling: [], ringing: [], answered: [], ended: [] };
  return {
    on(event, listener) {
      listeners[event].push(listener);
    },
    emit(event, ...args) {
      for (const l of listeners[event]) {
        try {
          (l as (...a: typeof args) => void)(...args);
        } catch (err) {
          log.error({ err, event }, 'call event listener failed');
        }
      }
    },
  };
}

export interface EngineCallParts {
  callId: string;
  state(): CallState;
  ended: Promise<CallEnd>;
  events: CallEvents;
  /** The answered call's media; throws (MEDIA_SESSION_CLOSED) otherwise. */
  media(): ActionMedia;
  renderer: PromptRenderer;
  language: CallLanguage;
  clock: ActionClock;
  /** Aborted when the call ends: a running script stops at once. */
  signal: AbortSignal;
  endLocally(cause: CallEndCause, reason: string): Promise<CallEnd>;
}

/** Ends the call (once, by `end`), then takes its signalling leg down; a failed hangup is only logged. */
export async function endThenHangUp(
  end: () => CallEnd,
  leg: { hangup(): Promise<void> } | null,
  log: Logger,
): Promise<CallEnd> {
  const result = end();
  try {
    await leg?.hangup();
  } catch (err) {
    log.warn({ err }, 'signalling hangup failed');
  }
  return result;
}

/**
 * Each streamed speech's first audio, for whoever measures speech latency (bench/ai): `renderedAt`
 * when the synthesiser handed it over, `queuedAt` when it went to the media (after the speech
 * before it); performance.now() times. Nothing is built unless someone subscribes.
 */
export const speechAudioChannel = channel('svc-exchange.media.speech-audio');

export interface SpeechAudioEvent {
  callId: string;
  text: string;
  renderedAt: number;
  queuedAt: number;
}

export const notAnswered = (): MediaError => new MediaError('MEDIA_SESSION_CLOSED', 'call is not answered');

export function engineCall(p: EngineCallParts): EngineCall {
  function run(actions: readonly CallAction[], onGathered?: (r: GatherResult) => void): Promise<ActionsOutcome> {
    return runActions({
      media: p.media(),
      actions,
      language: p.language,
      renderer: p.renderer,
      clock: p.clock,
      signal: p.signal,
      onGathered,
    });
  }
  // Speeches hand their audio to the media in the order they were asked for: `handedOver` settles
  // when the last one asked has queued all of its audio, so the next may render meanwhile and
  // queue right behind it. `interrupt` moves to a new generation: audio of an older one is dropped.
  let handedOver: Promise<void> = Promise.resolve();
  let generation = 0;

  /** Speech rendered and played piece by piece, from the first frame espeak-ng writes. */
  async function speakStreaming(
    media: ActionMedia,
    sayStream: NonNullable<PromptRenderer['sayStream']>,
    text: string,
    opts: { language?: CallLanguage; voice?: string } | undefined,
  ): Promise<{ interrupted: boolean }> {
    const mine = generation;
    const before = handedOver;
    let done = (): void => undefined;
    handedOver = new Promise((resolve) => {
      done = resolve;
    });
    const plays: Promise<{ interrupted: boolean }>[] = [];
    const held: Uint8Array[] = [];
    let myTurn = false;
    let renderedAt = 0;
    const hand = (audio: Uint8Array): void => {
      if (mine !== generation) return;
      if (plays.length === 0 && speechAudioChannel.hasSubscribers)
        speechAudioChannel.publish({
          callId: p.callId,
          text,
          renderedAt,
          queuedAt: performance.now(),
        } satisfies SpeechAudioEvent);
      plays.push(media.play(audio));
    };
    void before.then(() => {
      myTurn = true;
      for (const audio of held.splice(0)) hand(audio);
    });
    try {
      await sayStream(text, opts?.language ?? p.language, media.codec, opts?.voice, (audio) => {
        renderedAt ||= performance.now();
        if (myTurn) hand(audio);
        else held.push(audio);
      });
      await before;
    } finally {
      done();
    }
    const results = await Promise.all(plays);
    return { interrupted: mine !== generation || results.some((r) => r.interrupted) };
  }

  return {
    callId: p.callId,
    get state() {
      return p.state();
    },
    ended: p.ended,
    on: (event, listener) => p.events.on(event, listener),
    async speak(text, opts) {
      const media = p.media();
      if (media.gapless && p.renderer.sayStream)
        return speakStreaming(media, p.renderer.sayStream.bind(p.renderer), text, opts);
      return media.play(await p.renderer.say(text, opts?.language ?? p.language, media.codec, opts?.voice));
    },
    readyVoice(opts) {
      p.renderer.warm?.(opts?.language ?? p.language, opts?.voice);
    },
    async play(mp3) {
      const media = p.media();
      return media.play(await p.renderer.play(mp3, media.codec));
    },
    async gather(spec) {
      const outcome = await run([{ gather: spec }]);
      return outcome.gathered[0] ?? { index: 0, digits: null, status: 'no_input' };
    },
    async pause(seconds) {
      await run([{ pause: seconds }]);
    },
    listen(listener) {
      const media = p.media();
      if (!media.onAudio) throw new MediaError('MEDIA_UNSUPPORTED', 'this media engine cannot hand out call audio');
      return media.onAudio((frame) => listener(frame, media.codec));
    },
    async send(frame, codec) {
      const media = p.media();
      await media.play(codec === media.codec ? frame : encodeG711(media.codec, decodeG711(codec, frame)));
    },
    interrupt() {
      generation++;
      if (p.state() === 'answered') p.media().stop();
    },
    runActions: (actions, opts) => run(actions, opts?.onGathered),
    hangup: () =>
      p.state() === 'answered'
        ? p.endLocally('completed', 'hung up by the platform')
        : p.endLocally('cancelled', 'cancelled before answer'),
  };
}
