import { channel } from 'node:diagnostics_channel';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { EngineCall } from '../../telephony/engine.js';
import { decodeG711 } from '../../telephony/media/g711.js';
import { isTtsLanguage } from '../../telephony/media/tts.js';
import type { ChatProvider, SpeechProvider, TranscriptionProvider } from './providers.js';
import { wavOf } from './providers.js';
import { readToolCalls, toolsFor, turnMessages, type AgentPrompt } from './turn.js';

/**
 * The conversation an AI voice agent holds on an answered call (issue 25, "AI voice agents": on a
 * call): it speaks `firstMessage`, listens to the caller, finds the end of each utterance by
 * silence, has it transcribed, streams the model's next turn and speaks it sentence by sentence
 * as the text arrives, and acts on the model's tools (end, transfer, capture). The caller talking
 * over the agent cuts the agent's audio short (barge-in). The call's `maxDuration` (at most the
 * agent's `maxCallSeconds`) ends it in the engine.
 */

export interface AgentOnCall extends AgentPrompt {
  id: string;
  model: string;
  voiceId: string | null;
  language: string;
}

export interface TranscriptTurn {
  role: 'agent' | 'caller';
  text: string;
  at: string;
  /** Agent turns answering the caller: ms from the end of the caller's speech to the agent's first audio. */
  latencyMs?: number;
  /** The caller spoke over this agent turn and cut it short. */
  interrupted?: boolean;
}

export type ConversationOutcome =
  'ended_by_agent' | 'transfer_requested' | 'caller_hung_up' | 'call_ended' | 'provider_failed';

export interface ConversationResult {
  outcome: ConversationOutcome;
  transcript: TranscriptTurn[];
  captured: Record<string, string>;
  transferTo: string | null;
  turnLatencyMs: number[];
}

export interface ConversationDeps {
  chat: ChatProvider;
  stt: TranscriptionProvider;
  /** Premium voices' speech endpoint (`openai:<voice>`); espeak-ng voices speak through the engine. */
  speech: SpeechProvider | null;
  log: Logger;
  now: () => Date;
  /** Silence after speech that ends the caller's turn (ms). */
  endOfSpeechMs: number;
  /** Mean absolute sample level above which a frame counts as speech. */
  speechLevel: number;
}

const RATE = 8000;
/** Speech shorter than this is a click or a cough, not a turn. */
const MIN_SPEECH_MS = 200;
/** Speech this long while the agent talks interrupts it. */
const BARGE_IN_MS = 300;
/** Audio kept from before speech starts, so the first syllable is not clipped. */
const PRE_ROLL_MS = 200;
/** One utterance is cut at this length and sent as it is. */
const MAX_UTTERANCE_MS = 30_000;

interface Utterance {
  pcm: Int16Array;
  /** performance.now() of the last voiced frame: the end of the caller's speech. */
  endedAt: number;
  /** performance.now() when the silence after it ended the turn. */
  endpointedAt: number;
}

/**
 * Where each answered turn's time went, for whoever measures turn latency (bench/ai); all times
 * are performance.now(). Nothing is built unless someone subscribes.
 */
export const turnTimingChannel = channel('svc-exchange.ai-agents.turn');

export interface TurnTiming {
  callId: string;
  /** The caller's last voiced frame reached the agent. */
  speechEndedAt: number;
  /** The silence after it ended the turn. */
  endpointedAt: number;
  /** The audio went to the speech-to-text provider, and its text came back. */
  sttSentAt: number;
  sttDoneAt: number;
  /** The turn went to the chat model, and its first words came back. */
  chatSentAt: number;
  firstTextAt: number | null;
  /** The first sentence was handed to speech. */
  firstSentenceAt: number | null;
  /** The whole reply had arrived. */
  chatDoneAt: number;
}

/** Energy-based turn detection over 8 kHz frames. */
function createTurnDetector(o: {
  endOfSpeechMs: number;
  speechLevel: number;
  onUtterance(u: Utterance): void;
  onSpeech(speechMs: number): void;
}) {
  let frames: Int16Array[] = [];
  let preRoll: Int16Array[] = [];
  let preRollMs = 0;
  let speechMs = 0;
  let silenceMs = 0;
  let totalMs = 0;
  let lastVoiced = 0;
  // A phone that stops sending RTP in silence (DTX) sends no quiet frames to count: the turn ends
  // when no frame has come for the end-of-speech time.
  let quiet: NodeJS.Timeout | null = null;

  const flush = () => {
    if (quiet) clearTimeout(quiet);
    quiet = null;
    if (speechMs >= MIN_SPEECH_MS) {
      const length = frames.reduce((n, f) => n + f.length, 0);
      const pcm = new Int16Array(length);
      let at = 0;
      for (const f of frames) {
        pcm.set(f, at);
        at += f.length;
      }
      o.onUtterance({ pcm, endedAt: lastVoiced, endpointedAt: performance.now() });
    }
    frames = [];
    speechMs = silenceMs = totalMs = 0;
  };

  return {
    push(pcm: Int16Array) {
      const ms = (pcm.length * 1000) / RATE;
      let sum = 0;
      for (let i = 0; i < pcm.length; i++) sum += Math.abs(pcm[i] as number);
      const voiced = pcm.length > 0 && sum / pcm.length >= o.speechLevel;
      if (frames.length === 0) {
        if (!voiced) {
          preRoll.push(pcm);
          preRollMs += ms;
          while (preRollMs > PRE_ROLL_MS && preRoll.length > 1) preRollMs -= (preRoll.shift()!.length * 1000) / RATE;
          return;
        }
        frames = preRoll;
        preRoll = [];
        preRollMs = 0;
      }
      frames.push(pcm);
      totalMs += ms;
      if (voiced) {
        speechMs += ms;
        silenceMs = 0;
        lastVoiced = performance.now();
        o.onSpeech(speechMs);
      } else silenceMs += ms;
      if (silenceMs >= o.endOfSpeechMs || totalMs >= MAX_UTTERANCE_MS) {
        flush();
        return;
      }
      if (quiet) clearTimeout(quiet);
      quiet = setTimeout(flush, o.endOfSpeechMs);
      quiet.unref();
    },
    close() {
      if (quiet) clearTimeout(quiet);
      quiet = null;
    },
  };
}

/** The end of each complete sentence in `text` after `from` (a boundary is `.`, `!`, `?` or `;` then a space). */
function sentenceEnd(text: string, from: number): number {
  const re = /[.!?;](\s|$)/g;
  re.lastIndex = from;
  const m = re.exec(text);
  return m && m.index + 1 < text.length ? m.index + 1 : -1;
}

export async function converse(
  call: EngineCall,
  agent: AgentOnCall,
  deps: ConversationDeps,
): Promise<ConversationResult> {
  const log = deps.log.child({ callId: call.callId, agentId: agent.id });
  const transcript: TranscriptTurn[] = [];
  const history: { role: 'user' | 'assistant'; content: string }[] = [];
  const captured: Record<string, string> = {};
  const turnLatencyMs: number[] = [];
  const lang = agent.language.slice(0, 2);
  const language = isTtsLanguage(lang) ? lang : 'en';
  const [voiceProvider, voiceName] = (agent.voiceId ?? 'espeak:en-us').split(':', 2) as [string, string | undefined];
  const ended = new AbortController();
  let bargedIn = false;
  let outcome: ConversationOutcome | null = null;
  let transferTo: string | null = null;

  void call.ended.then((end) => {
    outcome ??= end.by === 'remote' ? 'caller_hung_up' : 'call_ended';
    ended.abort();
  });

  const espeakVoice = voiceProvider === 'espeak' && voiceName ? { language, voice: voiceName } : { language };
  const premium = voiceProvider === 'openai' && deps.speech && voiceName ? voiceName : null;
  // Sentences being rendered or played; the caller's speech over any of them is barge-in.
  let speaking = 0;

  /**
   * Starts one sentence at once (rendering overlaps the model's streaming and the sentences before
   * it); the engine plays them in the order asked. Resolves true when it played to its end.
   */
  function say(text: string): Promise<boolean> {
    if (ended.signal.aborted) return Promise.resolve(false);
    speaking++;
    const played = premium
      ? deps.speech!.speak({ voice: premium, text }).then((mp3) => inOrder(() => call.play(mp3)))
      : call.speak(text, espeakVoice);
    const done = played
      .then((r) => !r.interrupted)
      .finally(() => {
        speaking--;
      });
    done.catch(() => undefined); // awaited, and so reported, by the turn
    return done;
  }
  // Premium speech arrives as whole MP3s, fetched in parallel and played one after another.
  let playing: Promise<unknown> = Promise.resolve();
  function inOrder<T>(play: () => Promise<T>): Promise<T> {
    const next = playing.then(play, play);
    playing = next.catch(() => undefined);
    return next;
  }

  // Utterances wait here while a turn is being answered; the loop below takes them in order.
  const queue: Utterance[] = [];
  let wake: (() => void) | null = null;
  const detector = createTurnDetector({
    endOfSpeechMs: deps.endOfSpeechMs,
    speechLevel: deps.speechLevel,
    onUtterance(u) {
      queue.push(u);
      wake?.();
    },
    onSpeech(ms) {
      if (speaking > 0 && ms >= BARGE_IN_MS && !bargedIn) {
        bargedIn = true;
        call.interrupt();
      }
    },
  });
  let unlisten: () => void;
  try {
    unlisten = call.listen((frame, codec) => detector.push(decodeG711(codec, frame)));
  } catch (err) {
    log.warn({ err }, 'the engine cannot hand out call audio; the agent cannot listen');
    return { outcome: 'provider_failed', transcript, captured, transferTo, turnLatencyMs };
  }
  ended.signal.addEventListener('abort', () => wake?.(), { once: true });
  if (!premium) call.readyVoice(espeakVoice);

  try {
    if (agent.firstMessage) {
      transcript.push({ role: 'agent', text: agent.firstMessage, at: deps.now().toISOString() });
      bargedIn = false;
      if (!(await say(agent.firstMessage)) && bargedIn) transcript[transcript.length - 1]!.interrupted = true;
    }
    while (!ended.signal.aborted) {
      if (queue.length === 0) {
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = null;
        continue;
      }
      // Everything the caller said since the last answer is one turn.
      const parts = queue.splice(0);
      const { endedAt, endpointedAt } = parts[parts.length - 1]!;
      const texts: string[] = [];
      const sttSentAt = performance.now();
      for (const u of parts) {
        const text = await deps.stt.transcribe({ wav: wavOf(u.pcm, RATE), language }, ended.signal);
        if (text) texts.push(text);
      }
      const sttDoneAt = performance.now();
      const heard = texts.join(' ').trim();
      if (!heard || ended.signal.aborted) continue;
      transcript.push({ role: 'caller', text: heard, at: deps.now().toISOString() });

      // Stream the answer; each finished sentence is spoken while the rest is still arriving.
      bargedIn = false;
      let text = '';
      let spokenTo = 0;
      let firstAudio: number | null = null;
      let firstTextAt: number | null = null;
      const sentences: Promise<boolean>[] = [];
      const speakNext = (sentence: string) => {
        if (bargedIn) return;
        firstAudio ??= performance.now();
        sentences.push(say(sentence));
      };
      const chatSentAt = performance.now();
      const reply = await deps.chat.stream(
        { model: agent.model, messages: turnMessages(agent, history, heard), tools: toolsFor(agent) },
        (delta) => {
          firstTextAt ??= performance.now();
          text += delta;
          let end: number;
          while ((end = sentenceEnd(text, spokenTo)) >= 0) {
            const sentence = text.slice(spokenTo, end).trim();
            spokenTo = end;
            if (sentence) speakNext(sentence);
          }
        },
        ended.signal,
      );
      const chatDoneAt = performance.now();
      const rest = reply.content.slice(spokenTo).trim();
      if (rest) speakNext(rest);
      if (turnTimingChannel.hasSubscribers)
        turnTimingChannel.publish({
          callId: call.callId,
          speechEndedAt: endedAt,
          endpointedAt,
          sttSentAt,
          sttDoneAt,
          chatSentAt,
          firstTextAt,
          firstSentenceAt: firstAudio,
          chatDoneAt,
        } satisfies TurnTiming);
      const turn: TranscriptTurn = { role: 'agent', text: reply.content.trim(), at: deps.now().toISOString() };
      transcript.push(turn);
      history.push({ role: 'user', content: heard }, { role: 'assistant', content: reply.content.trim() });
      const act = readToolCalls(agent, reply.toolCalls);
      Object.assign(captured, act.captured);
      await Promise.all(sentences);
      if (firstAudio !== null) {
        turn.latencyMs = Math.round(firstAudio - endedAt);
        turnLatencyMs.push(turn.latencyMs);
      }
      if (bargedIn) turn.interrupted = true;
      if (act.action !== 'continue' && !ended.signal.aborted) {
        outcome = act.action === 'end' ? 'ended_by_agent' : 'transfer_requested';
        transferTo = act.transferTo;
        break;
      }
    }
  } catch (err) {
    if (!ended.signal.aborted) {
      log.warn({ err }, 'agent turn failed');
      outcome = 'provider_failed';
    }
  } finally {
    unlisten();
    detector.close();
  }
  return { outcome: outcome ?? 'call_ended', transcript, captured, transferTo, turnLatencyMs };
}
