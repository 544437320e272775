import type { Logger } from 'pino';
import type {
  CallEnd,
  CallEndCause,
  CallEngine,
  CallState,
  EngineCall,
  OriginateRequest,
  RouteEndpoint,
} from '../engine.js';
import { realClock } from './actions.js';
import { createCallEvents, endThenHangUp, engineCall, notAnswered } from './engine-call.js';
import type { ActionClock, PromptRenderer } from './actions.js';
import { MediaError } from './errors.js';
import type { G711Codec } from './g711.js';
import type { MediaPool, MediaSession } from './pool.js';

/**
 * The native engine: our SIP stack carries the signalling, our RTP workers the media.
 *
 * The seam to the SIP stack is `SignallingDialer`: the engine opens a media session, hands the
 * SDP offer to `dial`, and learns about ringing, answer (with the SDP answer) and the end of the
 * call through `DialEvents`. The SIP side sends INVITE, handles provisional responses, ACK,
 * CANCEL and BYE; it never sees RTP. The lead wires `src/telephony/sip/` to this interface.
 */

export interface DialRequest {
  callId: string;
  to: string;
  from: string;
  endpoint: RouteEndpoint;
  /** Our SDP offer, to go in the INVITE body. */
  offerSdp: string;
}

/** What the signalling layer reports about one outgoing leg; each at most once, in this order. */
export interface DialEvents {
  /** A 180 or 183 arrived. */
  ringing(): void;
  /** A 2xx with the callee's SDP answer arrived (and was ACKed). */
  answered(answerSdp: string): void;
  /**
   * The leg is over: a final non-2xx before answer (`sipStatus` set), a BYE from the callee
   * after answer, or a transport failure. Not called for an end that `SignallingLeg.hangup` started.
   */
  ended(info: { sipStatus: number | null; reason: string }): void;
}

export interface SignallingLeg {
  /** CANCEL before answer, BYE after; resolves when the dialog is over. */
  hangup(): Promise<void>;
}

export interface SignallingDialer {
  dial(request: DialRequest, events: DialEvents): SignallingLeg;
}

export interface NativeEngineOptions {
  pool: MediaPool;
  dialer: SignallingDialer;
  renderer: PromptRenderer;
  log: Logger;
  /** Codec we prefer in offers (default PCMU); PCMA is always offered as well. */
  codec?: G711Codec;
  clock?: ActionClock;
  now?: () => Date;
}

/** How a final SIP status before answer reads as a call outcome. */
export function causeForStatus(status: number | null): CallEndCause {
  if (status === 486 || status === 600) return 'busy';
  if (status === 408 || status === 480 || status === 487) return 'no_answer';
  return 'failed';
}

export function createNativeEngine(options: NativeEngineOptions): CallEngine {
  const { pool, dialer, renderer } = options;
  const clock = options.clock ?? realClock;
  const now = options.now ?? (() => new Date());
  const live = new Set<EngineCall>();

  function originate(req: OriginateRequest): EngineCall {
    const log = options.log.child({ callId: req.callId });
    const events = createCallEvents(log);
    const emit = events.emit;
    const abort = new AbortController();
    let state: CallState = 'dialling';
    let session: MediaSession | null = null;
    let leg: SignallingLeg | null = null;
    let answeredAt: Date | null = null;
    let maxTimer: unknown = null;
    let resolveEnded: (end: CallEnd) => void = () => undefined;
    const ended = new Promise<CallEnd>((resolve) => {
      resolveEnded = resolve;
    });
    let endResult: CallEnd | null = null;

    /** Ends the call once; later calls return the first result. */
    function finish(cause: CallEndCause, by: 'local' | 'remote', sipStatus: number | null, reason: string): CallEnd {
      if (endResult) return endResult;
      state = 'ended';
      endResult = { cause, by, sipStatus, reason, answeredAt, endedAt: now() };
      if (maxTimer !== null) clock.clearTimeout(maxTimer);
      abort.abort();
      live.delete(call);
      const s = session;
      session = null;
      void s?.close();
      log.info({ cause, by, sipStatus }, 'call ended');
      emit('ended', endResult);
      resolveEnded(endResult);
      return endResult;
    }

    async function endLocally(cause: CallEndCause, reason: string): Promise<CallEnd> {
      if (endResult) return endResult;
      return endThenHangUp(() => finish(cause, 'local', null, reason), leg, log);
    }

    const call: EngineCall = engineCall({
      callId: req.callId,
      state: () => state,
      ended,
      events,
      media: () => {
        if (state !== 'answered' || !session) throw notAnswered();
        return session;
      },
      renderer,
      language: req.language ?? 'en',
      clock,
      signal: abort.signal,
      endLocally,
    });
    live.add(call);

    const start = async (): Promise<void> => {
      const s = await pool.openSession({ codec: options.codec ?? 'PCMU' });
      if (endResult) {
        await s.close();
        return;
      }
      session = s;
      s.onTimeout(() => void endLocally('media_timeout', 'no audio from the far end'));
      emit('dialling', now());
      leg = dialer.dial(
        { callId: req.callId, to: req.to, from: req.from, endpoint: req.endpoint, offerSdp: s.offerSdp() },
        {
          ringing() {
            if (state !== 'dialling') return;
            state = 'ringing';
            emit('ringing');
          },
          answered(answerSdp) {
            if (endResult || state === 'answered') return;
            try {
              s.acceptAnswer(answerSdp);
            } catch (err) {
              log.warn({ err }, 'answer SDP unusable');
              void endLocally(
                'failed',
                err instanceof MediaError && err.code === 'MEDIA_NO_COMMON_CODEC'
                  ? 'no common codec'
                  : 'unusable SDP answer',
              );
              return;
            }
            state = 'answered';
            answeredAt = now();
            maxTimer = clock.setTimeout(
              () => void endLocally('max_duration', 'maximum duration reached'),
              req.maxDurationSec * 1000,
            );
            emit('answered', answeredAt);
          },
          ended(info) {
            if (state === 'answered') finish('completed', 'remote', null, info.reason);
            else finish(causeForStatus(info.sipStatus), 'remote', info.sipStatus, info.reason);
          },
        },
      );
    };
    start().catch((err: unknown) => {
      log.error({ err }, 'call could not start');
      finish(
        'failed',
        'local',
        null,
        err instanceof MediaError && err.code === 'MEDIA_NO_PORT' ? 'no media port free' : 'call could not start',
      );
    });
    return call;
  }

  return {
    originate,
    async close() {
      await Promise.all([...live].map((c) => c.hangup()));
    },
  };
}
