/**
 * Trunk B2BUA: reseller calls in (digest or whitelisted IP), supplier legs out with failover
 * (spec "Voice and SMS" failover rule, "Authentication" SIP trunk paragraph). Business decisions are injected.
 */
import { createHmac, randomBytes, randomInt } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from '../../platform/clock.js';
import { answerChallenge, createDigestServer, type DigestServerOptions } from './digest.js';
import { createUacDialog, createUasDialog, dialogRequest, type Dialog } from './dialog.js';
import { parseUri } from './headers.js';
import { createLoopMarker, type LoopMarker } from './loop-marker.js';
import { callIdOf, cseqOf, fromOf, getHeader, maxForwardsOf, tagOf, toOf, type HeaderField, type SipRequest, type SipResponse } from './message.js';
import { probeEndpoint, type ProbeResult } from './probe.js';
import { expiryMs, isRefresh, negotiateSession, refreshMs, sessionExpiresValue, type SessionTerms, type SessionTimerPolicy } from './session-timer.js';
import type { SipStack } from './stack.js';
import type { ClientTransaction, ServerTransaction } from './transaction.js';
import type { SipPeer, SipTransportName } from './transport.js';
import type { CallMediaRelay } from '../media/call-relay.js';

export interface TrunkEndpoint {
  /** Where the INVITE goes: the checked address when the endpoint was saved as a name. */
  host: string;
  port: number;
  transport: SipTransportName;
  /** TLS: the endpoint's name, for SNI and the certificate check, when `host` is its checked address. */
  servername?: string;
  techPrefix?: string;
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
}

export interface CallAttribution {
  accountId: string;
  subAccountId?: string;
  purchaseId?: string;
  /** How the caller was recognised. */
  via: 'ip' | 'digest';
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
  callId: string;
  sourceIp: string;
}

export type CallPlan =
  | { reject: { status: number; reason: string } }
  | { callGroupId: string; maxDurationSeconds: number; candidates: TrunkCandidate[] };

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
  | 'caller-bye' | 'callee-bye' | 'max-duration' | 'caller-cancel' | 'failed' | 'no-answer' | 'ack-timeout' | 'shutdown' | 'session-expired'
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
  lookupSipUser(username: string): Promise<{ ha1: string; accountId: string; subAccountId?: string; purchaseId?: string } | null>;
  planCall(input: PlanCallInput): Promise<CallPlan>;
  onAttemptEnded?(attempt: AttemptRecord): void | Promise<void>;
  onAnswered?(event: { callGroupId: string; callId: string; routeId: string; answeredAt: Date; attempt: number }): void | Promise<void>;
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

export interface TrunkB2bua {
  probeEndpoint(target: SipPeer, opts?: { timeoutMs?: number }): Promise<ProbeResult>;
  activeCalls(): number;
  /** Ends every call with BYE/CANCEL (shutdown drain). */
  hangupAll(): void;
}

const RETRYABLE = new Set([403, 480, 500, 502, 503, 504]);
const ALLOW = 'INVITE, ACK, CANCEL, BYE, OPTIONS, INFO, UPDATE';
const E164 = /^[1-9]\d{5,14}$/;

/** Numbers in logs keep a prefix only (CONVENTIONS: no full phone numbers). */
const mask = (n: string): string => (n.length > 5 ? `${n.slice(0, 5)}…` : n);

interface Leg {
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

interface Call {
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
}

/** Picks the endpoint order: lowest priority first, weighted random among equals. */
export function orderEndpoints(endpoints: TrunkEndpoint[], rand: (max: number) => number = randomInt): TrunkEndpoint[] {
  const byPriority = new Map<number, TrunkEndpoint[]>();
  for (const e of endpoints) byPriority.set(e.priority, [...(byPriority.get(e.priority) ?? []), e]);
  const out: TrunkEndpoint[] = [];
  for (const p of [...byPriority.keys()].sort((a, b) => a - b)) {
    const pool = [...(byPriority.get(p) ?? [])];
    while (pool.length) {
      const total = pool.reduce((s, e) => s + Math.max(e.weight, 0), 0);
      let idx = 0;
      if (total > 0) {
        let r = rand(total);
        idx = pool.findIndex((e) => (r -= Math.max(e.weight, 0)) < 0);
      }
      out.push(...pool.splice(Math.max(idx, 0), 1));
    }
  }
  return out;
}

export function createTrunkB2bua(opts: TrunkB2buaOptions): TrunkB2bua {
  const { stack, log, clock, policy } = opts;
  const digest = createDigestServer({ realm: opts.realm, secret: opts.nonceSecret, ...opts.digest, now: () => clock.now().getTime() });
  const loop = opts.loopMarker ?? createLoopMarker(opts.nonceSecret);
  const setupTimeoutMs = opts.setupTimeoutMs ?? 4000;
  const noAnswerMs = opts.noAnswerMs ?? 90_000;
  const maxRoutes = opts.maxRoutes ?? 3;
  const sessionPolicy: SessionTimerPolicy = opts.sessionTimer ?? { minSeSeconds: 90, defaultSeconds: 1800 };
  const calls = new Set<Call>();
  /**
   * Our To tag for every response to a caller's INVITEs of one Call-ID and From tag: the 401
   * challenge, the refusals and the dialog's own. A 401 retransmitted (its ACK read late under
   * load) can reach the caller after our 200, and a UA that takes the tag of the last response it
   * saw (sipp does) would hang up a call we know under another tag: its BYE would get 481 and the
   * call would stay up and billed. Keyed by a per-process secret, so still unguessable (RFC 3261 §19.3).
   */
  const tagSecret = randomBytes(16);
  const dialogTagOf = (req: SipRequest): string =>
    createHmac('sha256', tagSecret).update(`${callIdOf(req)}\0${tagOf(fromOf(req)) ?? ''}`).digest('hex').slice(0, 16);
  /** In-dialog lookup by Call-ID and our tag, for either leg. */
  const dialogs = new Map<string, { call: Call; side: 'in' | 'out' }>();

  const later = (call: Call, ms: number, fn: () => void): unknown => {
    const h = stack.timers.set(fn, ms);
    call.timers.push(h);
    return h;
  };

  const notify = (what: string, fn: () => void | Promise<void>): void => {
    Promise.resolve()
      .then(fn)
      .catch((err: unknown) => log.error({ err, what }, 'trunk policy callback failed'));
  };

  const send = (req: SipRequest, dest: SipPeer): ClientTransaction =>
    stack.sendRequest(req, dest, { onResponse: () => undefined, onTimeout: () => undefined });

  const copyHeaders = (res: SipResponse, names: string[]): HeaderField[] => {
    const out: HeaderField[] = [];
    for (const n of names) {
      const v = getHeader(res, n);
      if (v !== undefined) out.push({ name: n, value: v });
    }
    return out;
  };

  function recordAttempt(call: Call, leg: Leg, sipCode: number | null, reason: string, outcome: AttemptRecord['outcome']): void {
    if (leg.ended) return;
    leg.ended = true;
    if (leg.setupTimer !== undefined) stack.timers.clear(leg.setupTimer);
    const a: AttemptRecord = {
      callGroupId: call.callGroupId,
      index: leg.index,
      routeId: leg.routeId,
      endpoint: { host: leg.endpoint.host, port: leg.endpoint.port, transport: leg.endpoint.transport },
      startedAt: leg.startedAt,
      endedAt: clock.now(),
      sipCode,
      reason,
      outcome,
      ringing: leg.ringing,
      pddMs: leg.alertedAt ? leg.alertedAt.getTime() - leg.startedAt.getTime() : null,
    };
    call.attempts.push(a);
    if (policy.onAttemptEnded) notify('onAttemptEnded', () => policy.onAttemptEnded?.(a));
  }

  function finish(call: Call, hangupCause: HangupCause, sipCode: number): void {
    if (call.ended) return;
    call.ended = true;
    calls.delete(call);
    for (const h of call.timers) stack.timers.clear(h);
    if (call.inDialog) dialogs.delete(`${call.inDialog.callId}|${call.inDialog.localTag}`);
    const leg = call.leg;
    if (leg?.dialog) dialogs.delete(`${leg.dialog.callId}|${leg.dialog.localTag}`);
    if (leg && !leg.ended) recordAttempt(call, leg, call.answeredAt ? 200 : sipCode, hangupCause, call.answeredAt ? 'answered' : 'cancelled');
    closeRelay(call);
    const endedAt = clock.now();
    const event: CallEndedEvent = {
      callGroupId: call.callGroupId,
      callId: call.callId,
      attribution: call.attribution,
      to: call.to,
      from: call.from,
      startedAt: call.startedAt,
      answeredAt: call.answeredAt,
      endedAt,
      durationMs: call.answeredAt ? endedAt.getTime() - call.answeredAt.getTime() : 0,
      sipCode: call.answeredAt ? 200 : sipCode,
      hangupCause,
      routeId: call.answeredAt && leg ? leg.routeId : null,
      attempts: call.attempts,
    };
    call.log.info({ hangupCause, sipCode: event.sipCode, durationMs: event.durationMs, attempts: call.attempts.length }, 'trunk call ended');
    notify('onCallEnded', () => policy.onCallEnded(event));
  }

  function closeRelay(call: Call): void {
    const relay = call.relay;
    call.relay = undefined;
    relay?.close().catch((err: unknown) => call.log.warn({ err }, 'media relay close failed'));
  }

  /** SDP from one side as the other side gets it: through the relay when the leg's media is proxied. */
  function sdpVia(call: Call, leg: Leg | undefined, from: 'caller' | 'callee', body: Buffer): Buffer {
    return leg?.proxied && call.relay ? call.relay.pass(from, body) : body;
  }

  /** Tells the caller the call failed, passing the supplier's status, Reason and Retry-After through. */
  function failToCaller(call: Call, status: number, reason: string, res?: SipResponse, cause: HangupCause = 'failed'): void {
    const headers = res ? copyHeaders(res, ['Reason', 'Retry-After', 'Warning']) : [];
    call.inTx.reply(status, reason, { toTag: call.localTag, headers });
    finish(call, cause, status);
  }

  function byeBoth(call: Call, except?: 'in' | 'out'): void {
    if (call.inDialog && except !== 'in') {
      const { req, dest } = dialogRequest(call.inDialog, 'BYE');
      send(req, dest);
    }
    const d = call.leg?.dialog;
    if (d && except !== 'out') {
      const { req, dest } = dialogRequest(d, 'BYE');
      send(req, dest);
    }
  }

  function buildLegInvite(call: Call, ep: TrunkEndpoint, fromTag: string, outCallId: string, cseq: number, body: Buffer): SipRequest {
    const host = ep.host.includes(':') ? `[${ep.host}]` : ep.host;
    const user = `${ep.techPrefix ?? ''}${call.to}`;
    const target = `sip:${user}@${host}:${ep.port}${ep.transport === 'udp' ? '' : `;transport=${ep.transport}`}`;
    const inFrom = fromOf(call.inReq);
    const display = inFrom.displayName !== undefined ? `"${inFrom.displayName.replace(/(["\\])/g, '\\$1')}" ` : '';
    const mf = maxForwardsOf(call.inReq);
    const headers: HeaderField[] = [
      { name: 'From', value: `${display}<sip:${call.from}@${stack.transport.host}>;tag=${fromTag}` },
      { name: 'To', value: `<sip:${user}@${host}:${ep.port}>` },
      { name: 'Call-ID', value: outCallId },
      { name: 'CSeq', value: `${cseq} INVITE` },
      { name: 'Max-Forwards', value: String(Math.min(mf === undefined ? 70 : mf - 1, 70)) },
      { name: 'Contact', value: `<${stack.contactUri('b2bua', ep.transport)}>` },
      { name: 'Allow', value: ALLOW },
      { ...loop.header },
    ];
    const ct = getHeader(call.inReq, 'content-type');
    if (ct !== undefined && body.length) headers.push({ name: 'Content-Type', value: ct });
    return { kind: 'request', method: 'INVITE', uri: target, version: 'SIP/2.0', headers, body };
  }

  function startLeg(call: Call, index: number, routeId: string, ep: TrunkEndpoint, proxied: boolean, auth?: { challenge: string; header: string; prev: Leg }): void {
    const fromTag = auth ? (tagOf(fromOf(auth.prev.req)) ?? stack.newTag()) : stack.newTag();
    const outCallId = auth ? callIdOf(auth.prev.req) : stack.newCallId();
    // Each leg gets the caller's offer afresh: the relay learns the caller's address again (unchanged) and the leg sees the relay's port.
    const body = proxied && call.relay ? call.relay.pass('caller', call.inReq.body) : call.inReq.body;
    const req = buildLegInvite(call, ep, fromTag, outCallId, auth ? cseqOf(auth.prev.req).seq + 1 : 1, body);
    if (auth) {
      const value = answerChallenge({ challenge: auth.challenge, method: 'INVITE', uri: req.uri, username: ep.username ?? '', password: ep.password ?? '' });
      req.headers.push({ name: auth.header, value });
    }
    const dest: SipPeer = { transport: ep.transport, host: ep.host, port: ep.port, ...(ep.servername ? { servername: ep.servername } : {}) };
    const leg: Leg = {
      index,
      routeId,
      endpoint: ep,
      dest,
      req,
      startedAt: auth ? auth.prev.startedAt : clock.now(),
      authTried: !!auth,
      provisional: false,
      ringing: false,
      ended: false,
      proxied: proxied && call.relay !== undefined,
      ct: undefined as unknown as ClientTransaction,
    };
    call.leg = leg;
    leg.ct = stack.sendRequest(req, dest, {
      onResponse: (res) => onLegResponse(call, leg, res),
      onTimeout: () => onLegNoResponse(call, leg),
    });
    leg.setupTimer = later(call, setupTimeoutMs, () => {
      if (!leg.provisional && !leg.ended) onLegNoResponse(call, leg);
    });
  }

  function tryNext(call: Call, last?: { status: number; reason: string; res?: SipResponse }): void {
    if (call.ended) return;
    if (call.cancelled) return finish(call, 'caller-cancel', 487);
    const limit = Math.min(maxRoutes, call.candidates.length);
    while (call.nextRoute < limit) {
      const cand = call.candidates[call.nextRoute++] as TrunkCandidate;
      const ep = orderEndpoints(cand.endpoints)[0];
      if (!ep) continue;
      call.log.info({ routeId: cand.routeId, attempt: call.nextRoute, host: ep.host }, 'trunk leg started');
      startLeg(call, call.nextRoute, cand.routeId, ep, cand.mediaMode === 'proxy');
      return;
    }
    if (last) failToCaller(call, last.status, last.reason, last.res);
    else failToCaller(call, 503, 'Service Unavailable');
  }

  function onLegNoResponse(call: Call, leg: Leg): void {
    if (leg.ended || call.leg !== leg || call.ended) return;
    // Nothing came back before any provisional: the leg is abandoned (a late 1xx gets a CANCEL).
    leg.ct.cancel();
    recordAttempt(call, leg, null, 'no response', 'timeout');
    if (leg.ringing) return failToCaller(call, 408, 'Request Timeout');
    tryNext(call, { status: 408, reason: 'Request Timeout' });
  }

  function onLegResponse(call: Call, leg: Leg, res: SipResponse): void {
    const current = call.leg === leg && !leg.ended && !call.ended;
    // 100 Trying only says the supplier got the INVITE; post-dial delay ends when the far end alerts or answers.
    if (current && !leg.alertedAt && ((res.status >= 180 && res.status < 190) || (res.status >= 200 && res.status < 300))) leg.alertedAt = clock.now();
    if (res.status >= 200 && res.status < 300) {
      if (!current && !(call.leg === leg && call.answeredAt)) {
        // A late answer on an abandoned leg: acknowledge and hang it up.
        const d = createUacDialog(leg.req, res, leg.dest.transport, stack.contactUri('b2bua', leg.dest.transport));
        const ack = dialogRequest(d, 'ACK', { cseq: cseqOf(leg.req).seq });
        void stack.sendAck(ack.req, ack.dest).catch(() => undefined);
        const bye = dialogRequest(d, 'BYE');
        send(bye.req, bye.dest);
        return;
      }
      return onLegAnswered(call, leg, res);
    }
    if (!current) return;
    if (res.status < 200) {
      if (!leg.provisional && leg.setupTimer !== undefined) stack.timers.clear(leg.setupTimer);
      leg.provisional = true;
      if (res.status === 100) return;
      // 180/183: the call now stays on this route whatever happens (spec failover rule).
      if (!call.ringing) later(call, noAnswerMs, () => onNoAnswer(call));
      leg.ringing = true;
      call.ringing = true;
      const headers: HeaderField[] = [{ name: 'Contact', value: `<${stack.contactUri(undefined, call.source.transport)}>` }];
      const ct = getHeader(res, 'content-type');
      if (ct !== undefined && res.body.length) headers.push({ name: 'Content-Type', value: ct });
      call.inTx.reply(res.status, res.reason, { toTag: call.localTag, headers, body: sdpVia(call, leg, 'callee', res.body) });
      return;
    }
    const challenge = res.status === 401 ? getHeader(res, 'www-authenticate') : res.status === 407 ? getHeader(res, 'proxy-authenticate') : undefined;
    if (challenge !== undefined && !leg.authTried && leg.endpoint.username && leg.endpoint.password !== undefined) {
      leg.ended = true;
      if (leg.setupTimer !== undefined) stack.timers.clear(leg.setupTimer);
      startLeg(call, leg.index, leg.routeId, leg.endpoint, leg.proxied, {
        challenge,
        header: res.status === 401 ? 'Authorization' : 'Proxy-Authorization',
        prev: leg,
      });
      return;
    }
    recordAttempt(call, leg, res.status, res.reason, 'failed');
    if (RETRYABLE.has(res.status) && !call.ringing && !call.cancelled) {
      return tryNext(call, { status: res.status, reason: res.reason, res });
    }
    if (call.cancelled) return finish(call, 'caller-cancel', 487);
    failToCaller(call, res.status, res.reason, res);
  }

  function onLegAnswered(call: Call, leg: Leg, res: SipResponse): void {
    const contact = stack.contactUri('b2bua', leg.dest.transport);
    if (!leg.dialog) leg.dialog = createUacDialog(leg.req, res, leg.dest.transport, contact);
    const ack = dialogRequest(leg.dialog, 'ACK', { cseq: cseqOf(leg.req).seq });
    void stack.sendAck(ack.req, ack.dest).catch((err: unknown) => call.log.warn({ err }, 'ack to supplier failed'));
    if (call.answeredAt) return; // a 2xx retransmission: re-ACKed above
    if (call.cancelled || call.ended) {
      const bye = dialogRequest(leg.dialog, 'BYE');
      send(bye.req, bye.dest);
      return;
    }
    if (leg.setupTimer !== undefined) stack.timers.clear(leg.setupTimer);
    call.answeredAt = clock.now();
    dialogs.set(`${leg.dialog.callId}|${leg.dialog.localTag}`, { call, side: 'out' });
    const inContact = stack.contactUri(undefined, call.source.transport);
    call.inDialog = createUasDialog(call.inReq, call.localTag, call.source.transport, inContact, call.source);
    dialogs.set(`${call.inDialog.callId}|${call.localTag}`, { call, side: 'in' });
    const headers: HeaderField[] = [
      { name: 'Contact', value: `<${inContact}>` },
      { name: 'Allow', value: ALLOW },
    ];
    const ct = getHeader(res, 'content-type');
    if (ct !== undefined && res.body.length) headers.push({ name: 'Content-Type', value: ct });
    headers.push(...sessionHeaders(call));
    const body = sdpVia(call, leg, 'callee', res.body);
    if (body.length) call.sdpToCaller = { body, type: ct };
    if (leg.proxied && call.relay) {
      call.relay.answered();
      call.relay.onTimeout(() => {
        if (call.ended) return;
        call.log.info('no media either way: call ended');
        byeBoth(call);
        finish(call, 'media-timeout', 200);
      });
    } else {
      // An earlier route relayed media, the one that answered does not.
      closeRelay(call);
    }
    call.inTx.onAckTimeout = () => {
      byeBoth(call);
      finish(call, 'ack-timeout', 200);
    };
    call.inTx.reply(200, 'OK', { toTag: call.localTag, headers, body });
    armSession(call);
    call.log.info({ routeId: leg.routeId, attempt: leg.index }, 'trunk call answered');
    const answeredAt = call.answeredAt;
    if (policy.onAnswered) notify('onAnswered', () => policy.onAnswered?.({ callGroupId: call.callGroupId, callId: call.callId, routeId: leg.routeId, answeredAt, attempt: leg.index }));
    if (call.maxDurationSeconds > 0) {
      later(call, call.maxDurationSeconds * 1000, () => {
        if (call.ended) return;
        byeBoth(call);
        finish(call, 'max-duration', 200);
      });
    }
  }

  /** Session-Expires and Require for a 2xx to the caller, when the caller uses session timers. */
  function sessionHeaders(call: Call): HeaderField[] {
    if (!call.session) return [];
    return [
      { name: 'Session-Expires', value: sessionExpiresValue(call.session) },
      { name: 'Require', value: 'timer' },
      { name: 'Supported', value: 'timer' },
    ];
  }

  /**
   * (Re)starts the caller-side session timer after a 2xx to an INVITE, re-INVITE or UPDATE. The
   * caller refreshing: the call ends if no refresh comes in time (RFC 4028 §10). We refreshing: at
   * half the interval.
   */
  function armSession(call: Call): void {
    if (!call.session || call.ended) return;
    if (call.sessionTimer !== undefined) stack.timers.clear(call.sessionTimer);
    const terms = call.session;
    if (terms.refresher === 'uac') {
      call.sessionTimer = later(call, expiryMs(terms.interval), () => {
        if (call.ended) return;
        call.log.info({ interval: terms.interval }, 'session expired: the caller stopped refreshing');
        byeBoth(call);
        finish(call, 'session-expired', 200);
      });
    } else {
      call.sessionTimer = later(call, refreshMs(terms.interval), () => refreshCaller(call));
    }
  }

  /** Our refresh when the caller asked us to be the refresher: UPDATE if it allows it, else a re-INVITE re-offering the same SDP. */
  function refreshCaller(call: Call): void {
    const d = call.inDialog;
    if (call.ended || !d || !call.session) return;
    const allow = getHeader(call.inReq, 'allow') ?? '';
    const method = /\bUPDATE\b/i.test(allow) ? 'UPDATE' : 'INVITE';
    const headers: HeaderField[] = [
      { name: 'Session-Expires', value: sessionExpiresValue(call.session) },
      { name: 'Supported', value: 'timer' },
    ];
    const offer = method === 'INVITE' ? call.sdpToCaller : undefined;
    if (offer?.type !== undefined) headers.push({ name: 'Content-Type', value: offer.type });
    const { req, dest } = dialogRequest(d, method, { headers, ...(offer ? { body: offer.body } : {}) });
    const seq = cseqOf(req).seq;
    const expire = () => {
      if (call.ended) return;
      call.log.info({ method }, 'session refresh to the caller failed');
      byeBoth(call);
      finish(call, 'session-expired', 200);
    };
    stack.sendRequest(req, dest, {
      onResponse: (res) => {
        if (res.status < 200) return;
        if (method === 'INVITE' && res.status < 300) {
          const ack = dialogRequest(d, 'ACK', { cseq: seq });
          void stack.sendAck(ack.req, ack.dest).catch(() => undefined);
        }
        if (res.status < 300) armSession(call);
        else expire();
      },
      onTimeout: expire,
    });
  }

  function onNoAnswer(call: Call): void {
    if (call.ended || call.answeredAt) return;
    const leg = call.leg;
    if (leg) {
      leg.ct.cancel();
      recordAttempt(call, leg, null, 'no answer', 'no-answer');
    }
    failToCaller(call, 480, 'Temporarily Unavailable', undefined, 'no-answer');
  }

  function onCallerCancel(call: Call): void {
    call.cancelled = true;
    if (call.ended) return;
    const leg = call.leg;
    if (!leg) return; // still authenticating or planning: tryNext sees the flag
    if (call.answeredAt) return;
    leg.ct.cancel();
    recordAttempt(call, leg, 487, 'caller cancelled', 'cancelled');
    finish(call, 'caller-cancel', 487);
  }

  async function authenticate(req: SipRequest, tx: ServerTransaction, source: SipPeer, tag: string): Promise<CallAttribution | undefined> {
    const byIp = await policy.resolveByIp(source.host);
    if (byIp) return { accountId: byIp.accountId, via: 'ip' };
    const challenge = (c?: { nonce?: string; stale?: boolean }): void => {
      tx.reply(401, 'Unauthorized', { toTag: tag, headers: [{ name: 'WWW-Authenticate', value: digest.challenge(c) }] });
    };
    const creds = digest.parseCredentials(getHeader(req, 'authorization') ?? getHeader(req, 'proxy-authorization'));
    if (!creds) return void challenge();
    const username = creds.params['username'] ?? '';
    const user = username ? await policy.lookupSipUser(username) : null;
    if (!user) {
      tx.reply(403, 'Forbidden', { toTag: tag });
      return undefined;
    }
    const verdict = digest.check(creds, req.method, user.ha1);
    switch (verdict.result) {
      case 'ok': {
        const a: CallAttribution = { accountId: user.accountId, via: 'digest', username };
        if (user.subAccountId !== undefined) a.subAccountId = user.subAccountId;
        if (user.purchaseId !== undefined) a.purchaseId = user.purchaseId;
        return a;
      }
      case 'wrong-realm':
        return void challenge({ nonce: verdict.nonce });
      case 'stale':
        return void challenge({ stale: true });
      case 'bad-nonce':
        return void challenge();
      case 'bad-response':
        tx.reply(403, 'Forbidden', { toTag: tag });
        return undefined;
    }
  }

  async function onInvite(req: SipRequest, tx: ServerTransaction, source: SipPeer): Promise<void> {
    let cancelledEarly = false;
    const holder: { call?: Call } = {};
    tx.onCancel = () => {
      if (holder.call) onCallerCancel(holder.call);
      else cancelledEarly = true;
    };
    const tag = dialogTagOf(req);
    // A route whose supplier is the exchange (directly or through a peer that sends it back)
    // would otherwise loop until Max-Forwards runs out, holding money and a slot on every pass.
    if (loop.carriedBy(req)) {
      log.warn({ source: `${source.host}:${source.port}` }, 'looped INVITE refused');
      tx.reply(482, 'Loop Detected', { toTag: tag });
      return;
    }
    const uri = parseUri(req.uri);
    if (uri.scheme !== 'sip' && uri.scheme !== 'sips') {
      tx.reply(416, 'Unsupported URI Scheme', { toTag: tag });
      return;
    }
    const attribution = await authenticate(req, tx, source, tag);
    if (!attribution || cancelledEarly) return;
    const to = uri.user ?? '';
    if (!E164.test(to)) {
      tx.reply(484, 'Address Incomplete', { toTag: tag });
      return;
    }
    const negotiated = negotiateSession(req, sessionPolicy);
    if ('reject' in negotiated) {
      // Before planning, so a too-short interval holds no money and no slot.
      tx.reply(422, 'Session Interval Too Small', { toTag: tag, headers: [{ name: 'Min-SE', value: String(negotiated.reject.minSe) }] });
      return;
    }
    const from = fromOf(req).uri.user ?? '';
    const callId = callIdOf(req);
    const plan = await policy.planCall({ ...attribution, to, from, callId, sourceIp: source.host });
    if (cancelledEarly) return;
    if ('reject' in plan) {
      tx.reply(plan.reject.status, plan.reject.reason, {
        toTag: tag,
        headers: [{ name: 'Reason', value: `SIP;cause=${plan.reject.status};text="${plan.reject.reason.replace(/"/g, "'")}"` }],
      });
      return;
    }
    const call: Call = {
      callId,
      log: log.child({ callId, callGroupId: plan.callGroupId, to: mask(to) }),
      inReq: req,
      inTx: tx,
      source,
      localTag: tag,
      attribution,
      to,
      from,
      callGroupId: plan.callGroupId,
      candidates: plan.candidates,
      maxDurationSeconds: plan.maxDurationSeconds,
      nextRoute: 0,
      attempts: [],
      ringing: false,
      cancelled: false,
      ended: false,
      startedAt: clock.now(),
      answeredAt: null,
      timers: [],
      session: negotiated.terms,
      callerSdp: req.body,
    };
    holder.call = call;
    calls.add(call);
    const tried = plan.candidates.slice(0, maxRoutes);
    if (opts.media && tried.some((c) => c.mediaMode === 'proxy')) {
      try {
        call.relay = await opts.media.openRelay();
      } catch (err) {
        call.log.error({ err }, 'no media relay for a proxy-media route');
        return failToCaller(call, 503, 'Service Unavailable');
      }
      if (call.ended) return closeRelay(call);
    }
    tryNext(call);
  }

  function onInDialog(req: SipRequest, tx: ServerTransaction): void {
    const entry = dialogs.get(`${callIdOf(req)}|${tagOf(toOf(req)) ?? ''}`);
    if (!entry) {
      // Not a trunk dialog: it may be a call the platform placed (API calls), whose handler runs
      // after ours in the same tick and answers first; a transaction keeps only its first reply.
      queueMicrotask(() => tx.reply(481, 'Call/Transaction Does Not Exist'));
      return;
    }
    const { call, side } = entry;
    if (req.method === 'BYE') {
      tx.reply(200, 'OK');
      byeBoth(call, side);
      finish(call, side === 'in' ? 'caller-bye' : 'callee-bye', 200);
      return;
    }
    const other = side === 'in' ? call.leg?.dialog : call.inDialog;
    if (!other) {
      tx.reply(481, 'Call/Transaction Does Not Exist');
      return;
    }
    const offerAnswer = req.method === 'INVITE' || req.method === 'UPDATE';
    if (side === 'in' && offerAnswer && isRefresh(call.callerSdp, req.body)) return answerRefresh(call, req, tx);
    // Re-INVITE, UPDATE, INFO…: relayed to the other leg, the answer relayed back (SDP through the
    // media relay when the route proxies media, else unchanged: media stays direct).
    const ct = getHeader(req, 'content-type');
    const sender = side === 'in' ? 'caller' : 'callee';
    const receiver = side === 'in' ? 'callee' : 'caller';
    const outBody = offerAnswer ? sdpVia(call, call.leg, sender, req.body) : req.body;
    const { req: out, dest } = dialogRequest(other, req.method, {
      body: outBody,
      headers: ct !== undefined && outBody.length ? [{ name: 'Content-Type', value: ct }] : [],
    });
    const seq = cseqOf(out).seq;
    const ackOther = (a: { body: Buffer; type: string | undefined }) => {
      const headers: HeaderField[] = a.type !== undefined && a.body.length ? [{ name: 'Content-Type', value: a.type }] : [];
      const ack = dialogRequest(other, 'ACK', { cseq: seq, body: a.body, headers });
      void stack.sendAck(ack.req, ack.dest).catch(() => undefined);
    };
    // A re-INVITE without SDP (delayed offer): the 2xx carries the other side's offer and the answer
    // comes in the sender's ACK (RFC 3261 §13.2.1, RFC 3264 §4), so the ACK to the other side waits for it.
    const delayedOffer = req.method === 'INVITE' && req.body.length === 0;
    let offerPassed = false;
    let answerAck: { body: Buffer; type: string | undefined } | null = null;
    stack.sendRequest(out, dest, {
      onResponse: (res) => {
        if (res.status < 200) return;
        if (req.method === 'INVITE' && res.status < 300) {
          if (!delayedOffer || res.body.length === 0) ackOther({ body: Buffer.alloc(0), type: undefined });
          else if (offerPassed) {
            // A retransmitted 2xx: ACKed again once the answer is known; the sender's 2xx has its own retransmissions.
            if (answerAck) ackOther(answerAck);
            return;
          } else {
            offerPassed = true;
            tx.onAck = (ack) => {
              const type = getHeader(ack, 'content-type');
              const body = sdpVia(call, call.leg, sender, ack.body);
              answerAck = { body, type };
              if (side === 'in' && ack.body.length) call.callerSdp = ack.body;
              if (side === 'out' && body.length) call.sdpToCaller = { body, type };
              ackOther(answerAck);
            };
            // No ACK from the sender: the other side still gets one (without an answer) and ends the call as it sees fit.
            tx.onAckTimeout = () => {
              if (answerAck) return;
              answerAck = { body: Buffer.alloc(0), type: undefined };
              ackOther(answerAck);
            };
          }
        }
        // A refused offer leaves the session as it was (RFC 3264 §8), the relay's target included.
        if (offerAnswer && res.status >= 300 && call.leg?.proxied) call.relay?.refused(sender);
        const rct = getHeader(res, 'content-type');
        const resBody = offerAnswer && res.status < 300 ? sdpVia(call, call.leg, receiver, res.body) : res.body;
        const headers: HeaderField[] = rct !== undefined && resBody.length ? [{ name: 'Content-Type', value: rct }] : [];
        if (req.method === 'INVITE') headers.push({ name: 'Contact', value: `<${call.inDialog === other ? (call.leg?.dialog?.contact ?? '') : (call.inDialog?.contact ?? '')}>` });
        if (offerAnswer && res.status < 300) {
          // A media change that went through refreshes the caller's session as well (RFC 4028 §10).
          if (side === 'in') {
            const n = negotiateSession(req, sessionPolicy, call.session ?? undefined);
            if ('terms' in n) call.session = n.terms;
            if (req.body.length) call.callerSdp = req.body;
            if (resBody.length) call.sdpToCaller = { body: resBody, type: rct };
            headers.push(...sessionHeaders(call));
          } else {
            if (res.body.length) call.callerSdp = res.body;
            if (outBody.length) call.sdpToCaller = { body: outBody, type: ct };
          }
          armSession(call);
        }
        tx.reply(res.status, res.reason, { headers, body: resBody });
      },
      onTimeout: () => {
        if (offerAnswer && call.leg?.proxied) call.relay?.refused(sender);
        tx.reply(408, 'Request Timeout');
      },
    });
  }

  /**
   * A re-INVITE or UPDATE from the caller that changes nothing but the session timer: answered here
   * with the SDP the caller already has, so a supplier that knows nothing of session timers is not
   * bothered every few minutes.
   */
  function answerRefresh(call: Call, req: SipRequest, tx: ServerTransaction): void {
    const n = negotiateSession(req, sessionPolicy, call.session ?? undefined);
    if ('reject' in n) {
      tx.reply(422, 'Session Interval Too Small', { headers: [{ name: 'Min-SE', value: String(n.reject.minSe) }] });
      return;
    }
    call.session = n.terms;
    const headers: HeaderField[] = [...sessionHeaders(call)];
    if (req.method === 'INVITE') headers.push({ name: 'Contact', value: `<${call.inDialog?.contact ?? ''}>` }, { name: 'Allow', value: ALLOW });
    // A re-INVITE always gets SDP (the answer, or our offer when it had none); an UPDATE only when it offered.
    const sdp = req.method === 'INVITE' || req.body.length ? call.sdpToCaller : undefined;
    if (sdp?.type !== undefined) headers.push({ name: 'Content-Type', value: sdp.type });
    tx.reply(200, 'OK', { headers, ...(sdp ? { body: sdp.body } : {}) });
    armSession(call);
  }

  stack.onRequest((req, tx, source) => {
    const hasTag = tagOf(toOf(req)) !== undefined;
    if (hasTag) return onInDialog(req, tx);
    switch (req.method) {
      case 'INVITE':
        onInvite(req, tx, source).catch((err: unknown) => {
          log.error({ err }, 'trunk invite failed');
          tx.reply(500, 'Server Internal Error', { toTag: stack.newTag() });
        });
        return;
      case 'OPTIONS':
        tx.reply(200, 'OK', { toTag: stack.newTag(), headers: [{ name: 'Allow', value: ALLOW }, { name: 'Accept', value: 'application/sdp' }] });
        return;
      case 'BYE':
        tx.reply(481, 'Call/Transaction Does Not Exist');
        return;
      default:
        tx.reply(405, 'Method Not Allowed', { toTag: stack.newTag(), headers: [{ name: 'Allow', value: ALLOW }] });
    }
  });

  return {
    probeEndpoint: (target, o) => probeEndpoint(stack, target, o),
    activeCalls: () => calls.size,
    hangupAll() {
      for (const call of [...calls]) {
        if (call.answeredAt) byeBoth(call);
        else {
          call.leg?.ct.cancel();
          call.inTx.reply(503, 'Service Unavailable', { toTag: call.localTag });
        }
        finish(call, 'shutdown', call.answeredAt ? 200 : 503);
      }
    },
  };
}
