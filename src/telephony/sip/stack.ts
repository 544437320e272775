/** Transaction layer dispatch: matches messages to transactions, handles CANCEL and 2xx ACKs (RFC 3261 §17.1.3, §17.2.3). */
import type { Logger } from 'pino';
import { createUacDialog, dialogId, dialogRequest, requestDialogId, type Dialog } from './dialog.js';
import { Expiries } from './expiry.js';
import { formatVia } from './headers.js';
import type { OverloadGuard } from './overload.js';
import { randomText } from '../../platform/random-pool.js';
import {
  callIdOf,
  canonicalName,
  cseqOf,
  detached,
  fromOf,
  maxForwardsOf,
  tagOf,
  toOf,
  topVia,
  type HeaderField,
  type SipRequest,
  type SipResponse,
} from './message.js';
import {
  ClientTransaction,
  DEFAULT_TIMERS,
  realTimers,
  ServerTransaction,
  type ClientTransactionHandlers,
  type SipTimers,
  type TimerValues,
  type TransactionContext,
} from './transaction.js';
import { responseTarget, type SipPeer, type SipTransport, type SipTransportName } from './transport.js';

const randomHex = (bytes: number): string => randomText(bytes, 'hex');
/**
 * One link of the request chain: answers the request, or passes it on with `next()`. The dialog
 * registry runs first; what no link answers gets 481 (in a dialog) or 503 (outside) at the end.
 */
export type SipRequestHandler = (req: SipRequest, tx: ServerTransaction, source: SipPeer, next: () => void) => void;

export interface SipStack {
  readonly transport: SipTransport;
  readonly timers: SipTimers;
  readonly timerValues: TimerValues;
  /**
   * New requests (not retransmissions, not ACK) that no registered dialog owns, in registration
   * order; INVITEs have had 100 Trying sent.
   */
  onRequest(handler: SipRequestHandler): void;
  /**
   * Makes `handler` the only receiver of the dialog's in-dialog requests (its `next()` hands a
   * request back to the chain). Returns the call that removes it.
   */
  registerDialog(dialog: Pick<Dialog, 'callId' | 'localTag' | 'remoteTag'>, handler: SipRequestHandler): () => void;
  /** Dialogs with an owner. */
  dialogCount(): number;
  /** ACKs no transaction claimed (e.g. arriving after Timer L). */
  onStrayAck(handler: (ack: SipRequest, source: SipPeer) => void): void;
  /** Sends a request in a new client transaction; a Via with a fresh branch is put on top. */
  sendRequest(req: SipRequest, dest: SipPeer, handlers: ClientTransactionHandlers): ClientTransaction;
  /**
   * Sends an ACK for a 2xx outside any transaction (RFC 3261 §13.2.2.4). With the INVITE's client
   * transaction, the stack takes over what is left of it: this ACK is resent for the 2xx's
   * retransmissions, a 2xx of another fork is ACKed and hung up, and the TU's handlers are let go.
   */
  sendAck(ack: SipRequest, dest: SipPeer, invite?: ClientTransaction): Promise<void>;
  /**
   * ACKs a 2xx to our INVITE that nobody wants (answered after we gave up, or by a second fork) and
   * hangs its dialog up, its retransmissions ACKed by the stack; the TU's handlers are let go.
   */
  hangUpAnswer(res: SipResponse, invite: ClientTransaction): void;
  newBranch(): string;
  newTag(): string;
  newCallId(): string;
  /** Our Contact URI for a transport. */
  contactUri(user: string | undefined, transport: SipTransportName): string;
  close(): Promise<void>;
}

export interface SipStackOptions {
  transport: SipTransport;
  log: Logger;
  timers?: SipTimers;
  timerValues?: Partial<TimerValues>;
  /** Refuses new INVITEs (no To tag) with 503 while the daemon is overloaded; none: every one is taken. */
  overload?: OverloadGuard;
}

const MAGIC = 'z9hG4bK';
/** RFC 3261 §17.2.1: 100 Trying may be skipped when the TU answers within 200 ms. */
const TRYING_DELAY_MS = 200;

/** Addresses remembered as return-routable; the oldest are forgotten first. */
const MAX_ROUTABLE = 50_000;

function serverKey(req: SipRequest, method: string): string {
  const via = topVia(req);
  const branch = via.params['branch'];
  const sentBy = `${via.host}:${via.port ?? ''}`;
  // Copied: built of slices, the key would keep the request's whole header text alive as long as
  // its transaction (32 s after the call for Timer L, the whole call for the B2BUA's INVITE).
  if (branch && branch.startsWith(MAGIC)) return detached(`${branch}|${sentBy}|${method}`);
  // RFC 2543 peers: match on the dialog-ish identifiers instead (§17.2.3).
  return detached(`${callIdOf(req)}|${cseqOf(req).seq}|${tagOf(fromOf(req)) ?? ''}|${sentBy}|${method}`);
}

export function createSipStack(opts: SipStackOptions): SipStack {
  const { transport, log } = opts;
  const timers = opts.timers ?? realTimers;
  const values: TimerValues = { ...DEFAULT_TIMERS, ...opts.timerValues };
  const clients = new Map<string, ClientTransaction>();
  const servers = new Map<string, ServerTransaction>();
  const awaitingAck = new Map<string, ServerTransaction>();
  const requestHandlers: SipRequestHandler[] = [];
  const dialogs = new Map<string, SipRequestHandler>();
  // UDP source addresses that proved they receive what we send there: they echoed a To tag or a
  // branch of ours, which only a peer reading our datagrams can know.
  const routable = new Map<string, true>();
  const markRoutable = (host: string): void => {
    routable.delete(host);
    routable.set(host, true);
    if (routable.size > MAX_ROUTABLE) {
      const first = routable.keys().next();
      if (!first.done) routable.delete(first.value);
    }
  };
  const isRoutable = (peer: SipPeer): boolean => peer.transport !== 'udp' || routable.has(peer.host);
  const strayAckHandlers: Array<(ack: SipRequest, source: SipPeer) => void> = [];
  const overload = opts.overload;
  // INVITEs admitted and not yet answered finally, kept only when the guard caps them. A transaction
  // leaves at its end, or at its final response when the set reaches the cap and is swept: below the
  // cap its size is an upper bound and no sweep is needed.
  const setupCap = overload?.setupCap ?? 0;
  const inSetup = setupCap > 0 ? new Set<ServerTransaction>() : null;
  // INVITE transactions whose retransmissions the guard no longer counts: one already counted, or
  // one it refused (a caller that retransmits after our 503, as sipp -nd does, is no queue of ours).
  const uncounted = new WeakSet<ServerTransaction>();
  const setupCount = (): number => {
    if (!inSetup) return 0;
    if (inSetup.size >= setupCap) for (const tx of inSetup) if (tx.state !== 'proceeding') inSetup.delete(tx);
    return inSetup.size;
  };

  const expiries = new Expiries(timers);
  const ctx: TransactionContext = {
    timers,
    expiries,
    values,
    post: (msg, dest, onError) => transport.post(msg, dest, onError),
    returnRoutable: isRoutable,
    terminated(tx) {
      if (tx instanceof ClientTransaction) {
        if (clients.get(tx.key) === tx) clients.delete(tx.key);
      } else {
        if (servers.get(tx.key) === tx) servers.delete(tx.key);
        inSetup?.delete(tx);
        if (tx.isInvite) {
          const ak = ackKey(tx.request);
          if (awaitingAck.get(ak) === tx) awaitingAck.delete(ak);
        }
      }
    },
    unwantedAnswer: hangUpAnswer,
  };

  const ackKey = (req: SipRequest): string => `${callIdOf(req)}|${cseqOf(req).seq}`;
  const newBranch = (): string => MAGIC + randomHex(12);

  // TLS has its own listener port; sent-by names the port a peer would open a new connection to.
  const portFor = (t: SipTransportName): number =>
    t === 'tls' ? (transport.tlsPort ?? transport.port) : transport.port;
  const viaFor = (dest: SipPeer, branch: string): string =>
    `SIP/2.0/${dest.transport.toUpperCase()} ${transport.host}:${portFor(dest.transport)};branch=${branch};rport`;

  const withVia = (req: SipRequest, dest: SipPeer, branch: string): void => {
    req.headers.unshift({ name: 'Via', value: viaFor(dest, branch) });
  };

  const sendCancel = (inv: ClientTransaction): void => {
    const req = inv.request;
    const headers: HeaderField[] = [];
    let viaDone = false;
    for (const h of req.headers) {
      const n = canonicalName(h.name);
      if (n === 'via' && !viaDone) {
        headers.push({ name: 'Via', value: h.value.split(',')[0] as string });
        viaDone = true;
      } else if (n === 'from' || n === 'to' || n === 'call-id' || n === 'route' || n === 'max-forwards')
        headers.push(h);
    }
    headers.push({ name: 'CSeq', value: `${cseqOf(req).seq} CANCEL` });
    const cancel: SipRequest = {
      kind: 'request',
      method: 'CANCEL',
      uri: req.uri,
      version: 'SIP/2.0',
      headers,
      body: Buffer.alloc(0),
    };
    const branch = topVia(cancel).params['branch'] ?? '';
    const tx = new ClientTransaction(ctx, `${branch}|CANCEL`, cancel, inv.dest, {
      onResponse: () => undefined,
      onTimeout: () => undefined,
    });
    clients.set(tx.key, tx);
    tx.start();
  };

  const handleCancel = (req: SipRequest, source: SipPeer, replyTo: SipPeer): void => {
    const key = serverKey(req, 'CANCEL');
    const existing = servers.get(key);
    if (existing) return existing.retransmission();
    const tx = new ServerTransaction(ctx, key, req, source, replyTo);
    servers.set(key, tx);
    const invite = servers.get(serverKey(req, 'INVITE'));
    if (!invite) {
      tx.reply(481, 'Call/Transaction Does Not Exist');
      return;
    }
    tx.reply(200, 'OK');
    if (invite.state === 'proceeding') {
      const prevTag = invite.responseTag;
      // The 487 makes the transaction let go of its TU's callbacks.
      const told = invite.onCancel;
      invite.reply(487, 'Request Terminated', { toTag: prevTag ?? newTag() });
      told?.();
    }
  };

  const handleRequest = (req: SipRequest, source: SipPeer): void => {
    const via = topVia(req);
    const replyTo: SipPeer = source.transport === 'udp' ? responseTarget(via, 'udp') : source;
    if (req.method === 'ACK') {
      const st = servers.get(serverKey(req, 'INVITE'));
      // The final's To tag is ours and unguessable (RFC 3261 §19.3): an ACK that carries it proves the
      // source read our response, where a forged source address cannot.
      const echoesOurTag = (tx: ServerTransaction): boolean => {
        const ours = tx.responseTag;
        return ours !== undefined && tagOf(toOf(req)) === ours;
      };
      if (st && st.state === 'completed') {
        if (source.transport === 'udp' && echoesOurTag(st)) markRoutable(source.host);
        return st.ackForFinal();
      }
      if (st && st.state === 'confirmed') return;
      const pending = awaitingAck.get(ackKey(req));
      if (pending) {
        awaitingAck.delete(ackKey(req));
        if (source.transport === 'udp' && echoesOurTag(pending)) markRoutable(source.host);
        return pending.ackFor2xx(req);
      }
      for (const h of strayAckHandlers) h(req, source);
      return;
    }
    if (req.method === 'CANCEL') return handleCancel(req, source, replyTo);
    const key = serverKey(req, req.method);
    const existing = servers.get(key);
    if (existing) {
      // A caller retransmits a new INVITE only when no response reached it within T1: the
      // overload control's earliest sign of a queue of ours (docs/sip.md, "Overload").
      if (overload && existing.isInvite && !uncounted.has(existing) && tagOf(toOf(req)) === undefined) {
        uncounted.add(existing);
        overload.retransmitted();
      }
      return existing.retransmission();
    }
    const tx = new ServerTransaction(ctx, key, req, source, replyTo);
    servers.set(key, tx);
    if (req.method === 'INVITE') {
      // Only calls not yet admitted: whatever finishes an admitted call (in-dialog requests, ACK,
      // CANCEL, BYE, responses) is never refused. The transaction stays only to absorb the INVITE's
      // retransmissions and the ACK; nothing reaches the TU, the ledger or the database.
      if (overload && tagOf(toOf(req)) === undefined && overload.refuse(setupCount())) {
        uncounted.add(tx);
        tx.reply(503, 'Service Unavailable', {
          toTag: newTag(),
          headers: [{ name: 'Retry-After', value: overload.retryAfter }],
        });
        return;
      }
      inSetup?.add(tx);
      awaitingAck.set(ackKey(req), tx);
      // 100 Trying only when the TU has said nothing within 200 ms (RFC 3261 §17.2.1): the challenge,
      // a refusal or the supplier's ringing usually come first, and each 100 sent costs a
      // serialisation and a UDP send (the largest item on the call-path profile). For a source not
      // yet proved routable the wait also keeps a forged INVITE from drawing two packets.
      tx.tryingAfter(TRYING_DELAY_MS);
    }
    if (maxForwardsOf(req) === 0 && req.method !== 'OPTIONS') {
      tx.reply(483, 'Too Many Hops', { toTag: newTag() });
      return;
    }
    dispatch(req, tx, source);
  };

  // drachtio-srf's dialog() middleware: an in-dialog request goes to its dialog's owner, never to
  // every user of the stack; one answer for requests nobody owns, once, at the end of the chain.
  const dispatch = (req: SipRequest, tx: ServerTransaction, source: SipPeer): void => {
    const id = requestDialogId(req);
    let at = 0;
    const next = (): void => {
      const h = requestHandlers[at++];
      if (h) return h(req, tx, source, next);
      if (id !== undefined) tx.reply(481, 'Call/Transaction Does Not Exist');
      else tx.reply(503, 'Service Unavailable', { toTag: newTag() });
    };
    const owner = id === undefined ? undefined : dialogs.get(id);
    if (owner) return owner(req, tx, source, next);
    next();
  };

  const handleResponse = (res: SipResponse, source: SipPeer): void => {
    const via = topVia(res);
    const viaPort = via.port ?? (via.transport.toUpperCase() === 'TLS' ? 5061 : 5060);
    if (via.host !== transport.host.toLowerCase() || (viaPort !== transport.port && viaPort !== transport.tlsPort)) {
      log.debug({ via: formatVia(via) }, 'sip response not for us');
      return;
    }
    const key = `${via.params['branch'] ?? ''}|${cseqOf(res).method}`;
    const tx = clients.get(key);
    if (!tx) {
      log.debug({ status: res.status }, 'stray sip response');
      return;
    }
    // Our branch is random: a response matching it came from a peer that read our request.
    if (source.transport === 'udp') markRoutable(source.host);
    tx.receive(res);
  };

  transport.onMessage((msg, source) => {
    try {
      if (msg.kind === 'request') handleRequest(msg, source);
      else handleResponse(msg, source);
    } catch (err) {
      log.error({ err }, 'sip dispatch failed');
    }
  });

  function newTag(): string {
    return randomHex(8);
  }

  function sendRequest(req: SipRequest, dest: SipPeer, handlers: ClientTransactionHandlers): ClientTransaction {
    const branch = newBranch();
    withVia(req, dest, branch);
    const tx = new ClientTransaction(ctx, `${branch}|${cseqOf(req).method}`, req, dest, handlers, sendCancel);
    clients.set(tx.key, tx);
    tx.start();
    return tx;
  }

  // Needs nothing of the call that sent the INVITE (the dialog comes from the INVITE and this 2xx),
  // so it serves after the TU has let go, with no reference to the call graph.
  function hangUpAnswer(res: SipResponse, inv: ClientTransaction): void {
    const d = createUacDialog(inv.request, res, inv.dest.transport, contactUri(undefined, inv.dest.transport));
    const ack = dialogRequest(d, 'ACK', { cseq: cseqOf(inv.request).seq });
    withVia(ack.req, ack.dest, newBranch());
    transport.post(inv.acked(ack.req, ack.dest) ?? ack.req, ack.dest);
    const bye = dialogRequest(d, 'BYE');
    sendRequest(bye.req, bye.dest, { onResponse: () => undefined, onTimeout: () => undefined });
  }

  function contactUri(user: string | undefined, t: SipTransportName): string {
    const u = user !== undefined ? `${user}@` : '';
    return `sip:${u}${transport.host}:${portFor(t)}${t === 'udp' ? '' : `;transport=${t}`}`;
  }

  return {
    transport,
    timers,
    timerValues: values,
    onRequest(h) {
      requestHandlers.push(h);
    },
    registerDialog(d, h) {
      const id = dialogId(d);
      dialogs.set(id, h);
      return () => {
        if (dialogs.get(id) === h) dialogs.delete(id);
      };
    },
    dialogCount: () => dialogs.size,
    onStrayAck(h) {
      strayAckHandlers.push(h);
    },
    sendRequest,
    async sendAck(ack, dest, invite) {
      withVia(ack, dest, newBranch());
      await transport.send(invite?.acked(ack, dest) ?? ack, dest);
    },
    hangUpAnswer,
    newBranch,
    newTag,
    newCallId: () => randomHex(16),
    contactUri,
    async close() {
      for (const tx of [...clients.values()]) tx.terminate();
      for (const tx of [...servers.values()]) tx.terminate();
      expiries.close();
      await transport.close();
    },
  };
}
