/** Client and server transactions (RFC 3261 §17) with RFC 6026's Accepted state. */
import {
  canonicalName,
  createResponse,
  cseqOf,
  getHeader,
  serialize,
  tagOf,
  toOf,
  type HeaderField,
  type SipRequest,
  type SipResponse,
} from './message.js';
import type { Expiries, Expiry, ExpiryOwner } from './expiry.js';
import { isReliable, type SipPeer } from './transport.js';

/** Timers come through this so tests can run the RFC timers on a fake scheduler. */
export interface SipTimers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
  /** Milliseconds on a clock that never goes back; what `set` waits on. */
  now(): number;
  /**
   * How late a transaction timer may fire so that one wake-up serves several (expiry.ts). Absent:
   * on time, as a test's fake scheduler wants.
   */
  lateMs?: number;
}

export const realTimers: SipTimers = {
  set(fn, ms) {
    const h = setTimeout(fn, ms);
    h.unref();
    return h;
  },
  clear(h) {
    clearTimeout(h as ReturnType<typeof setTimeout>);
  },
  now: () => performance.now(),
  // Against Timer A's 500 ms, the shortest RFC timer, and no peer can tell.
  lateMs: 10,
};

export interface TimerValues {
  t1: number;
  t2: number;
  t4: number;
}

export const DEFAULT_TIMERS: TimerValues = { t1: 500, t2: 4000, t4: 5000 };

export interface TransactionContext {
  timers: SipTimers;
  /** The stack's timer queues (one per duration) that run every transaction timer. */
  expiries: Expiries;
  values: TimerValues;
  /** Sends without a promise (`SipTransport.post`); `onError` hears of a failed send. */
  post(msg: SipRequest | SipResponse | Uint8Array, dest: SipPeer, onError?: (err: Error) => void): void;
  terminated(tx: ClientTransaction | ServerTransaction): void;
  /**
   * Whether a UDP peer has shown it receives what we send to its address. Non-2xx finals to INVITEs
   * are retransmitted (Timer G) only to such peers: to a forged source address each INVITE would
   * otherwise send ten responses to the victim over 32 s. Absent: every peer is.
   */
  returnRoutable?(peer: SipPeer): boolean;
  /**
   * A 2xx to an INVITE whose TU has let go, from a fork it never ACKed (RFC 3261 §13.2.2.4): the
   * call is answered elsewhere or over, so the stack ACKs this dialog and hangs it up.
   */
  unwantedAnswer?(res: SipResponse, tx: ClientTransaction): void;
}

export type TransactionState =
  'calling' | 'trying' | 'proceeding' | 'completed' | 'accepted' | 'confirmed' | 'terminated';

export interface ClientTransactionHandlers {
  /**
   * Every provisional and final response; in Accepted, 2xx retransmissions too until the TU ACKs
   * through the transaction (`acked`), after which the transaction answers them itself.
   */
  onResponse(res: SipResponse, tx: ClientTransaction): void;
  /** Timer B/F fired or the transport failed before a final response. */
  onTimeout(tx: ClientTransaction, cause: 'timeout' | 'transport'): void;
}

const EMPTY = Buffer.alloc(0);
/** The headers a client transaction keeps: what the ACK of a non-2xx and another fork's dialog need. */
const CLIENT_KEEPS = new Map([
  ['via', 'Via'],
  ['from', 'From'],
  ['to', 'To'],
  ['call-id', 'Call-ID'],
  ['cseq', 'CSeq'],
  ['route', 'Route'],
  ['max-forwards', 'Max-Forwards'],
]);
/** A server transaction answers nothing more: the stack only needs the INVITE's ACK key. */
const SERVER_KEEPS = new Map([
  ['call-id', 'Call-ID'],
  ['cseq', 'CSeq'],
]);

/**
 * What a transaction keeps of its request once it will neither send it again nor answer from it
 * (to the end of Timers D, J, L or M, 32 s on UDP): the headers `keeps` names (the top Via only),
 * no body, each value copied. The whole message, SDP and all, times the calls of 32 s, was most of
 * what the old-space collector had to mark at a thousand calls a second.
 */
function skeleton(req: SipRequest, keeps: Map<string, string>): SipRequest {
  const kept: HeaderField[] = [];
  let viaDone = false;
  for (const h of req.headers) {
    const n = canonicalName(h.name);
    const name = keeps.get(n);
    if (name === undefined || (n === 'via' && viaDone)) continue;
    viaDone ||= n === 'via';
    kept.push({ name, value: own(n === 'via' ? (h.value.split(',')[0] as string) : h.value) });
  }
  return {
    kind: 'request',
    method: req.method,
    uri: keeps === CLIENT_KEEPS ? own(req.uri) : '',
    version: req.version,
    // An array pushed to has room for 17 entries; its copy, for what it holds.
    headers: kept.slice(),
    body: EMPTY,
  };
}

/**
 * A copy of `s` that holds nothing else alive. A header value is a slice of its datagram's whole
 * header text, or a concatenation of such slices, and V8 keeps the text alive as long as the value.
 * (V8 copies strings shorter than 13 characters instead of slicing them.)
 */
function own(s: string): string {
  return s.length < 13 ? s : Buffer.from(s, 'utf8').toString('utf8');
}

/**
 * A message serialized into its own memory, to be resent as it is. A small Buffer is otherwise a
 * slice of Node's shared 8 KB pool, and keeping it keeps the whole pool block.
 */
function keptBytes(msg: SipRequest | SipResponse): Uint8Array {
  return serialize(msg, true);
}

/**
 * A transaction's two timers (kinds below): at most one retransmission or delayed send and one
 * that ends a state are pending at a time, so two slots replace a map of named timers.
 */
class TimerSlots {
  resend: Expiry | undefined = undefined;
  end: Expiry | undefined = undefined;
  constructor(
    private readonly expiries: Expiries,
    private readonly owner: ExpiryOwner,
  ) {}
  setResend(ms: number, kind: number): void {
    this.resend?.cancel();
    this.resend = this.expiries.add(ms, this.owner, kind);
  }
  setEnd(ms: number, kind: number): void {
    this.end?.cancel();
    this.end = this.expiries.add(ms, this.owner, kind);
  }
  clearResend(): void {
    this.resend?.cancel();
    this.resend = undefined;
  }
  clearAll(): void {
    this.clearResend();
    this.end?.cancel();
    this.end = undefined;
  }
  /** Called as an entry expires: it no longer needs cancelling. */
  fired(kind: number): void {
    if (kind === RETRANSMIT || kind === TRYING) this.resend = undefined;
    else this.end = undefined;
  }
}

// Timer kinds. RETRANSMIT: Timer A/E (client), the 2xx resend or Timer G (server). TRYING: the
// delayed 100. TIMEOUT: Timer B/F. LAST_WORD: Timer L (its TU may hear of a missing ACK). END:
// every timer that only terminates (D, K, M, H, I, J).
const RETRANSMIT = 0;
const TRYING = 1;
const TIMEOUT = 2;
const LAST_WORD = 3;
const END = 4;

interface SentAck {
  tag: string;
  ack: Uint8Array;
  dest: SipPeer;
}

export class ClientTransaction implements ExpiryOwner {
  state: TransactionState;
  readonly isInvite: boolean;
  private readonly t: TimerSlots;
  /** Timer A/E's next interval. */
  private interval = 0;
  private cancelWanted = false;
  /**
   * The ACK sent for a 2xx's To tag (its fork's dialog), resent for that 2xx's retransmissions;
   * `otherAcks` for other forks, seldom any.
   */
  private ack?: SentAck;
  private otherAcks?: SentAck[];
  /** Gone once the TU has ACKed a 2xx (see `acked`). */
  private handlers: ClientTransactionHandlers | undefined;

  constructor(
    private readonly ctx: TransactionContext,
    readonly key: string,
    /** Reduced to its skeleton once the request will not be sent again. */
    public request: SipRequest,
    readonly dest: SipPeer,
    handlers: ClientTransactionHandlers,
    /** Sends a CANCEL for this INVITE; provided by the stack. */
    private readonly sendCancel?: (tx: ClientTransaction) => void,
  ) {
    this.isInvite = request.method === 'INVITE';
    this.state = this.isInvite ? 'calling' : 'trying';
    this.t = new TimerSlots(ctx.expiries, this);
    this.handlers = handlers;
  }

  start(): void {
    const { t1 } = this.ctx.values;
    this.transmit();
    if (!isReliable(this.dest.transport)) {
      this.interval = t1;
      this.t.setResend(t1, RETRANSMIT);
    }
    // Timer B / Timer F.
    this.t.setEnd(64 * t1, TIMEOUT);
  }

  /** One of this transaction's timers expired (see `TimerSlots`). */
  expire(kind: number): void {
    this.t.fired(kind);
    if (kind === RETRANSMIT) return this.retransmit();
    if (kind === TIMEOUT) {
      const pending = this.isInvite ? this.state === 'calling' : this.state === 'trying' || this.state === 'proceeding';
      if (pending) {
        const h = this.handlers;
        this.terminate();
        h?.onTimeout(this, 'timeout');
      }
      return;
    }
    this.terminate();
  }

  private retransmit(): void {
    if (this.state !== 'calling' && this.state !== 'trying' && this.state !== 'proceeding') return;
    if (this.isInvite && this.state !== 'calling') return;
    this.transmit();
    this.interval = this.isInvite ? this.interval * 2 : Math.min(this.interval * 2, this.ctx.values.t2);
    if (!this.isInvite && this.state === 'proceeding') this.interval = this.ctx.values.t2;
    this.t.setResend(this.interval, RETRANSMIT);
  }

  private transmit(): void {
    this.ctx.post(this.request, this.dest, () => {
      if (this.state === 'terminated' || this.state === 'completed' || this.state === 'accepted') return;
      const h = this.handlers;
      this.terminate();
      h?.onTimeout(this, 'transport');
    });
  }

  /** Asks for a CANCEL; sent once a provisional response has arrived (RFC 3261 §9.1). */
  cancel(): void {
    if (!this.isInvite || this.cancelWanted) return;
    this.cancelWanted = true;
    if (this.state === 'proceeding') this.sendCancel?.(this);
  }

  get cancelRequested(): boolean {
    return this.cancelWanted;
  }

  receive(res: SipResponse): void {
    const { t1, t4 } = this.ctx.values;
    const reliable = isReliable(this.dest.transport);
    if (this.state === 'terminated') return;
    if (res.status < 200) {
      if (this.state === 'calling' || this.state === 'trying' || this.state === 'proceeding') {
        const first = this.state !== 'proceeding';
        this.state = 'proceeding';
        if (this.isInvite) this.t.clearResend();
        this.handlers?.onResponse(res, this);
        if (first && this.cancelWanted) this.sendCancel?.(this);
      }
      return;
    }
    if (this.isInvite && res.status < 300) {
      if (this.state === 'completed') return;
      const first = this.state !== 'accepted';
      if (first) {
        this.state = 'accepted';
        this.t.clearAll();
        // Timer M (RFC 6026 §8.4): 2xx retransmissions and other forks' 2xx still come until then.
        this.t.setEnd(64 * t1, END);
      }
      const tag = tagOf(toOf(res)) ?? '';
      const sent = this.ack?.tag === tag ? this.ack : this.otherAcks?.find((a) => a.tag === tag);
      if (sent) this.ctx.post(sent.ack, sent.dest);
      else if (this.handlers) this.handlers.onResponse(res, this);
      else this.ctx.unwantedAnswer?.(res, this);
      return;
    }
    if (this.state === 'completed') {
      if (this.isInvite) this.sendAck(res);
      return;
    }
    if (this.state === 'accepted') return;
    this.state = 'completed';
    this.t.clearAll();
    if (this.isInvite) {
      this.request = skeleton(this.request, CLIENT_KEEPS);
      this.sendAck(res);
      this.t.setEnd(reliable ? 0 : 32_000, END);
    } else {
      this.t.setEnd(reliable ? 0 : t4, END);
    }
    // Completed only absorbs retransmissions of this final (Timer D is 32 s on UDP): the TU has had
    // its last word, and its handlers need not outlive it.
    const h = this.handlers;
    this.handlers = undefined;
    h?.onResponse(res, this);
  }

  /**
   * The ACK just sent for a 2xx of this INVITE (its To carries the 2xx's tag): the transaction
   * resends it for that 2xx's retransmissions until Timer M, and lets go of the TU's handlers. They
   * held the TU's whole call for Timer M's 32 s after it had ended, hundreds of MB at a thousand
   * calls a second; a later 2xx of another fork goes to the stack (`unwantedAnswer`) instead.
   */
  acked(ack: SipRequest, dest: SipPeer): Uint8Array | undefined {
    if (this.state !== 'accepted') return undefined;
    const bytes = keptBytes(ack);
    const sent = { tag: tagOf(toOf(ack)) ?? '', ack: bytes, dest };
    if (!this.ack) this.ack = sent;
    else (this.otherAcks ??= []).push(sent);
    this.handlers = undefined;
    this.request = skeleton(this.request, CLIENT_KEEPS);
    return bytes;
  }

  /** ACK for a non-2xx final response, within the transaction (RFC 3261 §17.1.1.3). */
  private sendAck(res: SipResponse): void {
    const req = this.request;
    const headers = [];
    let viaDone = false;
    for (const h of req.headers) {
      const n = canonicalName(h.name);
      if (n === 'via' && !viaDone) {
        headers.push({ name: h.name, value: h.value.split(',')[0] as string });
        viaDone = true;
      } else if (n === 'from' || n === 'call-id' || n === 'route' || n === 'max-forwards') headers.push(h);
    }
    headers.push({ name: 'To', value: getHeader(res, 'to') ?? '' });
    headers.push({ name: 'CSeq', value: `${cseqOf(req).seq} ACK` });
    const ack: SipRequest = {
      kind: 'request',
      method: 'ACK',
      uri: req.uri,
      version: 'SIP/2.0',
      headers,
      body: Buffer.alloc(0),
    };
    this.ctx.post(ack, this.dest);
  }

  terminate(): void {
    if (this.state === 'terminated') return;
    this.state = 'terminated';
    this.t.clearAll();
    this.ctx.terminated(this);
    this.handlers = undefined;
    this.ack = undefined;
    this.otherAcks = undefined;
  }
}

export class ServerTransaction implements ExpiryOwner {
  state: TransactionState;
  readonly isInvite: boolean;
  private readonly t: TimerSlots;
  /** The last response's resend interval, and the state it is resent in (see `resendWhile`). */
  private interval = 0;
  private resendIn: TransactionState = 'accepted';
  private last?: SipResponse;
  /** A non-INVITE's final response or an INVITE's refusal, resent as these bytes (see `completeInvite`). */
  private finalBytes?: Uint8Array;
  /** Our To tag on an INVITE's refusal, kept apart from the response (see `completeInvite`). */
  private finalTag?: string;
  /** Set by the TU: called when a CANCEL for this INVITE arrived (after 200 to the CANCEL and 487 here). */
  onCancel?: () => void;
  /** Set by the TU: called when a 2xx was retransmitted for 64*T1 without an ACK. */
  onAckTimeout?: () => void;
  /** Set by the TU: called when the ACK for a 2xx arrived. */
  onAck?: (ack: SipRequest) => void;

  constructor(
    private readonly ctx: TransactionContext,
    readonly key: string,
    /** Reduced to its skeleton once nothing more is answered from it. */
    public request: SipRequest,
    readonly source: SipPeer,
    /** Where responses go (RFC 3261 §18.2.2). */
    readonly replyTo: SipPeer,
  ) {
    this.isInvite = request.method === 'INVITE';
    this.state = this.isInvite ? 'proceeding' : 'trying';
    this.t = new TimerSlots(ctx.expiries, this);
  }

  /** One of this transaction's timers expired (see `TimerSlots`). */
  expire(kind: number): void {
    this.t.fired(kind);
    if (kind === TRYING) {
      if (!this.last && this.state === 'proceeding') this.reply(100, 'Trying');
    } else if (kind === RETRANSMIT) {
      const again = this.finalBytes ?? this.last;
      if (this.state !== this.resendIn || !again) return;
      this.transmit(again);
      this.interval = Math.min(this.interval * 2, this.ctx.values.t2);
      this.t.setResend(this.interval, RETRANSMIT);
    } else if (kind === LAST_WORD) {
      const unacked = this.state === 'accepted' ? this.onAckTimeout : undefined;
      this.terminate();
      unacked?.();
    } else this.terminate();
  }

  /** Sends a response built from the request; returns it so the TU can keep the tag. */
  reply(status: number, reason: string, opts: Parameters<typeof createResponse>[3] = {}): SipResponse {
    const res = createResponse(this.request, status, reason, opts);
    this.respond(res);
    return res;
  }

  /**
   * Sends 100 Trying after `ms` unless a response has gone out by then (RFC 3261 §17.2.1 lets the
   * server skip it when the TU answers within 200 ms): a challenge or a refusal is then the only
   * datagram an unverified source gets, and the caller keeps retransmitting its INVITE until it
   * arrives.
   */
  tryingAfter(ms: number): void {
    this.t.setResend(ms, TRYING);
  }

  respond(res: SipResponse): void {
    if (this.state !== 'trying' && this.state !== 'proceeding') return;
    const { t1 } = this.ctx.values;
    const reliable = isReliable(this.replyTo.transport);
    // Only the delayed 100 can be pending before a final: resends start with one.
    this.t.clearResend();
    if (!this.isInvite && res.status >= 200) {
      // Only resent from now to Timer J (32 s on UDP), to retransmissions of the request.
      this.state = 'completed';
      this.finalBytes = keptBytes(res);
      this.last = undefined;
      this.request = skeleton(this.request, SERVER_KEEPS);
      this.transmit(this.finalBytes);
      this.t.setEnd(reliable ? 0 : 64 * t1, END);
      return;
    }
    if (res.status >= 300) {
      this.completeInvite(res);
      return;
    }
    this.last = res;
    this.transmit(res);
    if (res.status < 200) {
      this.state = 'proceeding';
      return;
    }
    // RFC 6026 Accepted: 2xx is retransmitted (the TU's duty in §13.3.1.4, kept here) until the ACK.
    this.state = 'accepted';
    if (!reliable) this.resendWhile('accepted');
    this.t.setEnd(64 * t1, LAST_WORD);
  }

  /**
   * A refusal or challenge of an INVITE: from now on the transaction only resends the final's bytes
   * (Timer G, retransmitted INVITEs) and checks the ACK's To tag, to Timer I (T4, 5 s) after the ACK
   * or Timer H (32 s) without one. It keeps those bytes, the tag and the request's skeleton: the
   * response object shares the INVITE's header lines, and they keep its whole header text alive. The
   * 401 of every trunk call's first INVITE lived on so, each survived two scavenges and was promoted.
   */
  private completeInvite(res: SipResponse): void {
    this.state = 'completed';
    // Nothing calls the TU after a refusal (a CANCEL finds it answered, no 2xx awaits an ACK), and
    // Timer H keeps this transaction 32 s when the caller never ACKs.
    this.releaseTu();
    const tag = tagOf(toOf(res));
    if (tag !== undefined) this.finalTag = own(tag);
    this.finalBytes = keptBytes(res);
    this.request = skeleton(this.request, SERVER_KEEPS);
    this.transmit(this.finalBytes);
    // Sent once to a source not known to receive us (Kamailio's stateless challenge): its own INVITE
    // retransmissions (Timer A) still fetch the response again from this transaction.
    if (!isReliable(this.replyTo.transport) && (this.ctx.returnRoutable?.(this.replyTo) ?? true))
      this.resendWhile('completed');
    this.t.setEnd(64 * this.ctx.values.t1, END);
  }

  /**
   * Resends the last response at T1, then at doubling intervals up to T2, while in `state` (the
   * 2xx in Accepted, Timer G in Completed).
   */
  private resendWhile(state: TransactionState): void {
    this.resendIn = state;
    this.interval = this.ctx.values.t1;
    this.t.setResend(this.interval, RETRANSMIT);
  }

  /** A retransmitted request matched this transaction. */
  retransmission(): void {
    if (this.finalBytes) {
      // A confirmed INVITE transaction only absorbs (RFC 3261 §17.2.1).
      if (this.state === 'completed') this.transmit(this.finalBytes);
    } else if (this.last && this.state !== 'accepted' && this.state !== 'confirmed') this.transmit(this.last);
  }

  /** ACK for a non-2xx final (same branch). */
  ackForFinal(): void {
    if (this.state !== 'completed') return;
    this.state = 'confirmed';
    this.t.clearAll();
    this.t.setEnd(isReliable(this.replyTo.transport) ? 0 : this.ctx.values.t4, END);
  }

  /** ACK for the 2xx (new branch, matched by dialog). */
  ackFor2xx(ack: SipRequest): void {
    if (this.state !== 'accepted') return;
    this.state = 'confirmed';
    this.t.clearResend();
    const onAck = this.onAck;
    this.releaseTu();
    // Left to Timer L only to absorb retransmitted INVITEs.
    this.request = skeleton(this.request, SERVER_KEEPS);
    onAck?.(ack);
  }

  /**
   * Lets go of the TU's callbacks and the last response once nothing can call or resend them. A
   * confirmed INVITE transaction lives on until Timer L (32 s on UDP) only to absorb retransmitted
   * INVITEs; holding the callbacks kept each finished call's whole graph (both legs, their dialogs
   * and messages) alive that long, hundreds of MB at a thousand calls a second.
   */
  private releaseTu(): void {
    this.onAck = undefined;
    this.onCancel = undefined;
    this.onAckTimeout = undefined;
    this.last = undefined;
  }

  /** Our To tag on the last response sent, which the ACK of a final response echoes. */
  get responseTag(): string | undefined {
    return this.last ? tagOf(toOf(this.last)) : this.finalTag;
  }

  private transmit(res: SipResponse | Uint8Array): void {
    this.ctx.post(res, this.replyTo);
  }

  terminate(): void {
    if (this.state === 'terminated') return;
    this.state = 'terminated';
    this.t.clearAll();
    this.ctx.terminated(this);
    this.releaseTu();
  }
}
