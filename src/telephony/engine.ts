/**
 * The call engine: what the call logic (src/telephony/calls/) drives to place a call and run its
 * actions. Nothing here names a native-engine type (RTP sessions, workers, SIP messages), so an
 * Asterisk ARI engine can implement the same interface (see ARCHITECTURE.md, "Scale-out").
 * The native implementation is `createNativeEngine` in `./media/native-engine.ts`.
 */

/** Languages of spoken text (spec: `language` of POST /comms/calls). */
export type CallLanguage = 'en' | 'es' | 'fr' | 'de' | 'pt' | 'hi';

/** Where a route sends the call: the supplier trunk's signalling address and credentials. */
export interface RouteEndpoint {
  host: string;
  port: number;
  transport: 'udp' | 'tcp' | 'tls';
  /** Digest credentials when the trunk asks for them. */
  username?: string;
  password?: string;
  /** Digits the supplier wants in front of the number. */
  techPrefix?: string;
}

export interface OriginateRequest {
  /** Our call id, carried into logs and the signalling layer for correlation. */
  callId: string;
  /** E.164 numbers. */
  to: string;
  from: string;
  endpoint: RouteEndpoint;
  /** The call is ended this many seconds after answer (spec: `maxDuration`). */
  maxDurationSec: number;
  /** Default language for `say` (default `en`). */
  language?: CallLanguage;
}

/** spec: action items of POST /comms/calls; `play` holds the MP3 bytes downloaded before dialling. */
export interface GatherSpec {
  /** Number of digits that completes the gather (1–20, default 1). */
  digits?: number;
  /** Seconds to wait for the first or next key after the prompt (1–30, default 5). */
  timeout?: number;
  /** `#` (default), `*`, or empty for none. */
  finishOnKey?: '#' | '*' | '';
  /** Times the prompt is played and input awaited (1–3, default 1). */
  tries?: number;
  say?: string;
  play?: Uint8Array;
  language?: CallLanguage;
}

export type CallAction =
  | { say: string; language?: CallLanguage }
  | { play: Uint8Array }
  | { gather: GatherSpec }
  | { pause: number }
  | { hangup: true };

/** spec: `gathered` items of the Call record. */
export interface GatherResult {
  /** 0 for the call's first gather action, 1 for the second, … */
  index: number;
  /** Keys pressed, finish key excluded; null when nothing was entered. */
  digits: string | null;
  status: 'received' | 'no_input';
}

export interface ActionsOutcome {
  /** `hangup`: a hangup action ended the script; `aborted`: the call ended while it ran. */
  status: 'completed' | 'hangup' | 'aborted';
  gathered: GatherResult[];
}

export type CallEndCause =
  /** Answered, then ended by either side. */
  | 'completed'
  | 'busy'
  | 'no_answer'
  /** Rejected, unreachable, or no common codec. `sipStatus` says more when there is one. */
  | 'failed'
  /** We gave up before answer (hangup() while ringing). */
  | 'cancelled'
  /** No audio arrived for the RTP timeout: the far end is gone. */
  | 'media_timeout'
  | 'max_duration'
  /** The media engine's host (an Asterisk of the farm) stopped answering; the call ended at that moment. */
  | 'media_host_lost';

export interface CallEnd {
  cause: CallEndCause;
  /** Who ended it: we did (`local`), the far end did (`remote`). */
  by: 'local' | 'remote';
  /** Final SIP status before answer, when the signalling layer had one. */
  sipStatus: number | null;
  /** Plain-words reason (spec: `hangupReason`). */
  reason: string;
  answeredAt: Date | null;
  endedAt: Date;
}

export type CallState = 'dialling' | 'ringing' | 'answered' | 'ended';

export interface EngineCallEvents {
  /** The INVITE is about to leave (media is ready): where post-dial delay starts. */
  dialling: (at: Date) => void;
  ringing: () => void;
  answered: (at: Date) => void;
  ended: (end: CallEnd) => void;
}

/** One call placed by an engine. Media methods reject unless the call is answered. */
export interface EngineCall {
  readonly callId: string;
  readonly state: CallState;
  on<E extends keyof EngineCallEvents>(event: E, listener: EngineCallEvents[E]): void;
  /** Resolves with how the call ended (also emitted as `ended`). */
  readonly ended: Promise<CallEnd>;
  /** `voice`: an espeak-ng voice name (variants too: `en-gb+f2`); default the language's voice. */
  speak(text: string, options?: { language?: CallLanguage; voice?: string }): Promise<{ interrupted: boolean }>;
  play(mp3: Uint8Array): Promise<{ interrupted: boolean }>;
  /** Readies speech in this voice ahead of `speak` (an AI agent's replies), where the engine can. */
  readyVoice(options?: { language?: CallLanguage; voice?: string }): void;
  gather(spec: GatherSpec): Promise<GatherResult>;
  pause(seconds: number): Promise<void>;
  /**
   * The far end's speech as it arrives: one G.711 frame per RTP packet, in `codec` (AI voice agents
   * transcribe it). Throws MEDIA_UNSUPPORTED where the engine cannot hand audio out.
   */
  listen(listener: (frame: Uint8Array, codec: 'PCMU' | 'PCMA') => void): () => void;
  /**
   * Queues one frame of another call's audio (G.711 in `codec`, converted to this call's codec) to go
   * out in the next free slot; resolves when it has been sent. Bridging two calls uses it.
   */
  send(frame: Uint8Array, codec: 'PCMU' | 'PCMA'): Promise<void>;
  /** Cuts the audio being played short (its play or speak resolves interrupted): barge-in. */
  interrupt(): void;
  /** Runs the call's actions in order; a `hangup` action does not itself hang up. */
  runActions(
    actions: readonly CallAction[],
    options?: { onGathered?: (result: GatherResult) => void },
  ): Promise<ActionsOutcome>;
  /** Cancels before answer, hangs up after. Idempotent. */
  hangup(): Promise<CallEnd>;
}

export interface CallEngine {
  originate(request: OriginateRequest): EngineCall;
  /** Ends every live call and releases the engine's resources. */
  close(): Promise<void>;
}
