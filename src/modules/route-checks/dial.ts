import type { LegOutcome } from '../../telephony/calls/sip-dialer.js';
import type { CallEngine, RouteEndpoint } from '../../telephony/engine.js';

/** How a check leg is driven once the route answers or rings. */
export type DialKind =
  /** Held `holdMs` after answer, then ended; cancelled after `ringTimeoutMs` of ringing. */
  | 'full'
  /** Cancelled at the first provisional ringing (or hung up at once if answered): no call is placed. */
  | 'light'
  /** Rings `ringMs` (a person may answer: then held `holdMs`), then cancelled. */
  | 'ring_me';

/** What was seen on the wire, with times in ms after the INVITE. */
export interface DialObservation {
  rang: boolean;
  answered: boolean;
  ringMs: number | null;
  answerMs: number | null;
  /** Seconds from answer to end (0 when not answered). */
  connectedSeconds: number;
  sipStatus: number | null;
  noResponse: boolean;
  mediaTimeout: boolean;
  endedAt: Date;
}

export interface DialRequest {
  engine: CallEngine;
  takeLeg(callId: string): LegOutcome | undefined;
  legId: string;
  to: string;
  from: string;
  endpoint: RouteEndpoint;
  kind: DialKind;
  holdMs: number;
  ringTimeoutMs: number;
  ringMeMs: number;
  now(): Date;
  /** Shutdown: the call is ended at once (the verdict then says what was seen so far). */
  signal: AbortSignal;
}

/**
 * One check call over the shared call engine (the same SIP stack and dialler as API calls). The
 * timers here only decide when we end the call; what happened comes from the engine's events.
 */
export async function dialOnce(r: DialRequest): Promise<DialObservation> {
  const started = r.now().getTime();
  const call = r.engine.originate({
    callId: r.legId,
    to: r.to,
    from: r.from,
    endpoint: r.endpoint,
    // The engine's own cap: a hold never reaches it, it only guards against a stuck timer.
    maxDurationSec: Math.max(10, Math.ceil(r.holdMs / 1000) + 5),
  });
  let ringMs: number | null = null;
  let answerMs: number | null = null;
  const timers: NodeJS.Timeout[] = [];
  const after = (ms: number) => timers.push(setTimeout(() => void call.hangup().catch(() => undefined), ms));
  call.on('ringing', () => {
    if (ringMs !== null) return;
    ringMs = r.now().getTime() - started;
    if (r.kind === 'light') void call.hangup().catch(() => undefined);
    else if (r.kind === 'ring_me') after(r.ringMeMs);
  });
  call.on('answered', (at) => {
    answerMs = at.getTime() - started;
    for (const t of timers.splice(0)) clearTimeout(t);
    if (r.kind === 'light') void call.hangup().catch(() => undefined);
    else after(r.holdMs);
  });
  // Ringing (or silence after 100 Trying) that never turns into an answer is given up on.
  after(r.kind === 'ring_me' ? r.ringTimeoutMs + r.ringMeMs : r.ringTimeoutMs);
  const abort = () => void call.hangup().catch(() => undefined);
  r.signal.addEventListener('abort', abort, { once: true });
  const end = await call.ended;
  r.signal.removeEventListener('abort', abort);
  for (const t of timers) clearTimeout(t);
  const leg = r.takeLeg(r.legId);
  const connectedSeconds = end.answeredAt
    ? Math.max(0, Math.ceil((end.endedAt.getTime() - end.answeredAt.getTime()) / 1000))
    : 0;
  return {
    rang: ringMs !== null || leg?.ringing === true,
    answered: end.answeredAt !== null,
    ringMs,
    answerMs,
    connectedSeconds,
    sipStatus: end.answeredAt ? 200 : (end.sipStatus ?? leg?.sipStatus ?? null),
    noResponse: leg?.noResponse === true,
    mediaTimeout: end.cause === 'media_timeout',
    endedAt: end.endedAt,
  };
}
