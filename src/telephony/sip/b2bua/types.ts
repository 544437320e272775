/**
 * The trunk B2BUA's types: what the business side (`TrunkPolicy`) sees, and the call state every
 * concern's functions take explicitly instead of sharing one closure.
 */
import type { Logger } from 'pino';
import type { Clock } from '../../../platform/clock.js';
import type { CallMediaRelay } from '../../media/call-relay.js';
import type { DigestServer, DigestServerOptions } from '../digest.js';
import type { Dialog } from '../dialog.js';
import type { LoopMarker } from '../loop-marker.js';
import type { SipRequest } from '../message.js';
import type { ProbeResult } from '../probe.js';
import type { SessionTerms, SessionTimerPolicy } from '../session-timer.js';
import type { SipStack } from '../stack.js';
import type { ClientTransaction, ServerTransaction } from '../transaction.js';
import type { SipPeer, SipTransportName } from '../transport.js';

export interface TrunkEndpoint {
  /** Where the INVITE goes: the checked address when the endpoint was saved as a name. */
  host: string;
  port: number;
  transport: SipTransportName;
  /** TLS: the endpoint's name, for SNI and the certificate check, when `host` is its checked address. */
  servername?: string;
  techPrefix?: string;
  /**
   * The request-URI user this endpoint is dialled with instead of the tech prefix and the call's
   * number: the exchange's own answering of a rented number (voicemail, an AI voice agent).
   */
  user?: string;
  username?: string;
  password?: string;
  /** Lower is tried first. */
  priority: number;
  weight: number;
}

export interface TrunkCandidate {
  routeId: string;
  endpoints: TrunkEndpoint[];
  /** `proxy`: the call's audio is relayed through the media plane; `direct` (default): SDP passes through. */
  mediaMode?: 'direct' | 'proxy';
  /**
   * Ringing this long without an answer: the leg is cancelled and the call goes to its `fallback`
   * candidate, else ends unanswered (a rented number's ring timeout). Absent: only `noAnswerMs` bounds it.
   */
  ringTimeoutMs?: number;
  /**
   * The call's last resort (the exchange's own voicemail on a number), listed last: dialled once the
   * others failed, refused (busy included) or rang out, even after ringing, and outside the route limit.
   */
  fallback?: boolean;
}

export interface CallAttribution {
  accountId: string;
  subAccountId?: string;
  purchaseId?: string;
  /** How the caller was recognised; `handler`: a call another handler took and bridged (it knows its payer). */
  via: 'ip' | 'digest' | 'handler';
  username?: string;
}

export interface PlanCallInput {
  accountId: string;
  subAccountId?: string;
  purchaseId?: string;
  /** E.164 without '+'. */
  to: string;
  /** Caller ID from From, passed through. */
  from: string;
  /** The caller's number that rates the call by origin: P-Asserted-Identity, else From ('' when none). */
  origin?: string;
  callId: string;
  sourceIp: string;
}

export type CallPlan =
  | { reject: { status: number; reason: string } }
  | {
      callGroupId: string;
      maxDurationSeconds: number;
      candidates: TrunkCandidate[];
      /** The number the legs dial when it is not the caller's (a rented number forwarded elsewhere). */
      to?: string;
    };

export interface AttemptRecord {
  callGroupId: string;
  index: number;
  routeId: string;
  endpoint: { host: string; port: number; transport: SipTransportName };
  startedAt: Date;
  endedAt: Date;
  /** Final status from the supplier; null when none came back. */
  sipCode: number | null;
  reason: string;
  outcome: 'answered' | 'failed' | 'timeout' | 'cancelled' | 'no-answer';
  ringing: boolean;
  /** Post-dial delay: first INVITE sent to the first 18x or 2xx; null when neither came. */
  pddMs: number | null;
}

export type HangupCause =
  | 'caller-bye'
  | 'callee-bye'
  | 'max-duration'
  | 'caller-cancel'
  | 'failed'
  | 'no-answer'
  | 'ack-timeout'
  | 'shutdown'
  | 'session-expired'
  | 'media-timeout';

export interface CallEndedEvent {
  callGroupId: string;
  callId: string;
  attribution: CallAttribution;
  to: string;
  from: string;
  startedAt: Date;
  answeredAt: Date | null;
  endedAt: Date;
  /** Connected time; 0 when never answered. */
  durationMs: number;
  /** 200 for an answered call, else the status the caller got. */
  sipCode: number;
  hangupCause: HangupCause;
  /** The route that connected, if any. */
  routeId: string | null;
  attempts: AttemptRecord[];
}

export interface TrunkPolicy {
  /** A whitelisted source IP: no digest needed. */
  resolveByIp(sourceIp: string): Promise<{ accountId: string } | null>;
  /** A bare `sub_…` or a purchase SIP username; HA1 over the fixed realm. */
  lookupSipUser(
    username: string,
  ): Promise<{ ha1: string; accountId: string; subAccountId?: string; purchaseId?: string } | null>;
  planCall(input: PlanCallInput): Promise<CallPlan>;
  onAttemptEnded?(attempt: AttemptRecord): void | Promise<void>;
  onAnswered?(event: {
    callGroupId: string;
    callId: string;
    routeId: string;
    answeredAt: Date;
    attempt: number;
  }): void | Promise<void>;
  onCallEnded(event: CallEndedEvent): void | Promise<void>;
}

export interface TrunkB2buaOptions {
  stack: SipStack;
  log: Logger;
  clock: Clock;
  /** The configured primary SIP host, used as digest realm on every address. */
  realm: string;
  /** Signs nonces. */
  nonceSecret: string | Buffer;
  /** The loop marker shared with the API call dialer; made from `nonceSecret` when absent. */
  loopMarker?: LoopMarker;
  policy: TrunkPolicy;
  digest?: Pick<DigestServerOptions, 'nonceTtlMs' | 'nonceMaxUses'>;
  /** No provisional response from a supplier within this: next route (default 4000). */
  setupTimeoutMs?: number;
  /** Ringing without answer this long: 480 to the caller, never retried (default 90000). */
  noAnswerMs?: number;
  /** Routes tried at most (spec: three). */
  maxRoutes?: number;
  /** RFC 4028 session timers toward the caller (default: Min-SE 90 s, 1800 s when the caller proposes none). */
  sessionTimer?: SessionTimerPolicy;
  /** Media relays for routes in proxy media mode; without it every route's media is direct. */
  media?: { openRelay(): Promise<CallMediaRelay> };
}

/** Told of a bridged call's answer and end, beside the policy (which settles the legs' money). */
export interface CallObserver {
  answered?(answeredAt: Date): void;
  ended?(event: CallEndedEvent): void;
}

/** A call another request handler took and hands to the B2BUA (see `TrunkB2bua.bridge`). */
export interface BridgeInput {
  /** Who the call is for: named in the ended event. */
  attribution: CallAttribution;
  /** The number the legs dial unless the plan names one (or an endpoint its own user). */
  to: string;
  /** Made once the caller's session terms are agreed; a `reject` is handed back, not sent. */
  plan(): Promise<CallPlan>;
  observer?: CallObserver;
}

export interface TrunkB2bua {
  probeEndpoint(target: SipPeer, opts?: { timeoutMs?: number }): Promise<ProbeResult>;
  /**
   * Places the B legs of an INVITE another handler took (its caller and source already checked):
   * `placed`, the call is the B2BUA's from then on (CANCEL, answer, in-dialog requests, teardown);
   * `reject` or `cancelled`, nothing was answered and the INVITE is the handler's again.
   */
  bridge(req: SipRequest, tx: ServerTransaction, source: SipPeer, input: BridgeInput): Promise<BridgeOutcome>;
  activeCalls(): number;
  /** Ends every call with BYE/CANCEL (shutdown drain). */
  hangupAll(): void;
}

export interface Leg {
  index: number;
  routeId: string;
  endpoint: TrunkEndpoint;
  dest: SipPeer;
  req: SipRequest;
  ct: ClientTransaction;
  startedAt: Date;
  authTried: boolean;
  provisional: boolean;
  ringing: boolean;
  /** When the first 18x or 2xx arrived (post-dial delay). */
  alertedAt?: Date;
  setupTimer?: unknown;
  dialog?: Dialog;
  ended: boolean;
  /** The route's media is relayed: SDP both ways goes through `call.relay`. */
  proxied: boolean;
}

export interface Call {
  callId: string;
  log: Logger;
  inReq: SipRequest;
  inTx: ServerTransaction;
  source: SipPeer;
  localTag: string;
  attribution: CallAttribution;
  to: string;
  from: string;
  callGroupId: string;
  candidates: TrunkCandidate[];
  maxDurationSeconds: number;
  nextRoute: number;
  leg?: Leg;
  /** The call-wide no-answer timer runs (armed at the first ringing, kept across a ring-out). */
  noAnswerArmed?: boolean;
  attempts: AttemptRecord[];
  ringing: boolean;
  cancelled: boolean;
  ended: boolean;
  startedAt: Date;
  answeredAt: Date | null;
  inDialog?: Dialog;
  timers: unknown[];
  /** Session timer agreed with the caller; null: the caller does not support timers. */
  session: SessionTerms | null;
  sessionTimer?: unknown;
  /** The caller's latest SDP and ours to it: a re-offer of the same is a refresh, answered here. */
  callerSdp: Buffer;
  sdpToCaller?: { body: Buffer; type: string | undefined };
  /** Opened when a candidate route relays media; closed with the call, or once a direct route answers. */
  relay?: CallMediaRelay;
  /** Take the call's dialogs out of the stack's registry. */
  unregister: Array<() => void>;
  /** A bridged call's handler, told of the answer and the end. */
  observer?: CallObserver;
}

/** What became of an INVITE handed to `bridge`: its legs are under way, or nothing was answered. */
export type BridgeOutcome =
  { placed: true } | { reject: { status: number; reason: string }; minSe?: number } | { cancelled: true };

/** What every part of the B2BUA shares: its dependencies, settings and live calls. */
export interface B2buaContext {
  stack: SipStack;
  log: Logger;
  clock: Clock;
  policy: TrunkPolicy;
  digest: DigestServer;
  loop: LoopMarker;
  setupTimeoutMs: number;
  noAnswerMs: number;
  maxRoutes: number;
  sessionPolicy: SessionTimerPolicy;
  media: TrunkB2buaOptions['media'];
  calls: Set<Call>;
  /** Our To tag for a caller's INVITE (the same for every INVITE of its Call-ID and From tag). */
  dialogTagOf(req: SipRequest): string;
}

export const ALLOW = 'INVITE, ACK, CANCEL, BYE, OPTIONS, INFO, UPDATE';

/** Numbers in logs keep a prefix only (CONVENTIONS: no full phone numbers). */
export const mask = (n: string): string => (n.length > 5 ? `${n.slice(0, 5)}…` : n);
