import { randomUUID } from 'node:crypto';
import type { AddressInfo, Socket } from 'node:net';
import type { Logger } from 'pino';
import type { Clock } from '../platform/clock.js';
import { createConnectionCaps } from '../platform/connection-caps.js';
import { createCounters, type Counters } from '../platform/counters.js';
import { createReassembler, readPduPart } from './inbound.js';
import { buildReceiptText, messageStateFor } from './receipt-text.js';
import type { ReceiptStat } from './receipt-text.js';
import { createBindLockout } from './bind-lockout.js';
import { createPdu, createSmppListener, num, STATUS, str } from './smpp-lib.js';
import type { PDU, Session } from './smpp-lib.js';
import { encodeGsm7 } from './gsm7.js';
import { checkSender } from './sender.js';

/** What authenticate() grants a bind. throughputPerSecond 0 means unlimited. */
export interface SmppAccount {
  accountId: string;
  throughputPerSecond: number;
  /** Binds of this credential open at once (every daemon's, with shared `bindSlots`); absent: no limit. */
  maxBinds?: number;
}

/**
 * Where a credential's open binds are counted. Throughput is per bind, so without a cap a customer
 * multiplies it by opening more binds. Shared by the daemons when backed by shared counters.
 */
export interface BindSlots {
  /** Takes one of `limit` slots of `systemId`; false when all are taken. */
  acquire(systemId: string, limit: number): Promise<boolean>;
  release(systemId: string): Promise<void>;
}

/** The counter of a credential's open binds. */
export const bindSlotKey = (systemId: string) => `smpp-binds:${systemId}`;

/** Bind slots kept in concurrency counters (shared by the daemons when the counters are). */
export const countedSlots = (counters: Counters): BindSlots => ({
  acquire: (systemId, limit) => counters.acquire(bindSlotKey(systemId), limit),
  release: (systemId) => counters.release(bindSlotKey(systemId)),
});

export type BindType = 'transmitter' | 'receiver' | 'transceiver';

/** One whole customer message (concatenated input already joined). */
export interface SmppSubmission {
  to: string;
  from: string;
  sourceTon: number;
  sourceNpi: number;
  destTon: number;
  destNpi: number;
  text: string;
  /** data_coding the customer used (0, 1, 3 or 8). */
  dataCoding: number;
  /** Parts the customer sent (1 for a single submit_sm or message_payload). */
  parts: number;
  /**
   * Ids already answered for the earlier parts of a concatenated message (the last part gets the
   * messageId onSubmit returns). Keep them: receipts go back for each (CustomerReceipt.partMessageIds).
   */
  partMessageIds: string[];
  /** registered_delivery & 0x03: 0 none, 1 on final outcome, 2 on failure only. */
  registeredDelivery: number;
  serviceType: string;
  systemId: string;
  remoteIp: string;
  bindId: string;
}

export type SmppSubmitResult = { messageId: string } | { commandStatus: number };

/** A receipt to send back to a customer as deliver_sm. */
export interface CustomerReceipt {
  /** Our message id, as given in submit_sm_resp. */
  messageId: string;
  stat: ReceiptStat;
  err?: string;
  submitDate: Date;
  doneDate: Date;
  /** The original destination (becomes source_addr of the deliver_sm). */
  to: string;
  /** The original sender (becomes destination_addr). */
  from: string;
  /** Start of the original text; only [A-Za-z0-9 .,:+-] is kept. */
  text?: string;
  sub?: number;
  dlvrd?: number;
  /** Ids given to the earlier parts (SmppSubmission.partMessageIds); each gets its own deliver_sm. */
  partMessageIds?: string[];
}

export interface SmppServerOptions {
  /** Plain listener port; 0 picks a free one; null disables it. */
  port: number | null;
  /** TLS listener port; 0 picks a free one; null disables it. */
  tlsPort?: number | null;
  host?: string;
  tls: { key: string | Buffer; cert: string | Buffer } | null;
  log: Logger;
  clock: Clock;
  authenticate(systemId: string, password: string, remoteIp: string): Promise<SmppAccount | null>;
  /**
   * True when `remoteIp` is one of the addresses the credential `systemId` is restricted to (never
   * for a credential open to every address). Such a bind is not held by the id's lockout, only by
   * its own address's: failing binds with a customer's id from elsewhere must not lock the customer out.
   */
  isOwnAddress?(systemId: string, remoteIp: string): Promise<boolean>;
  onSubmit(account: SmppAccount, submission: SmppSubmission): Promise<SmppSubmitResult>;
  /** Counts each credential's open binds against `SmppAccount.maxBinds`. Default: in this process. */
  bindSlots?: BindSlots;
  idleTimeoutMs: number;
  /** A connection not bound by then is closed. Default 10 s. */
  bindTimeoutMs?: number;
  /** Connections open at once, plain and TLS together (counted before the TLS handshake). Default 1024. */
  maxConnections?: number;
  /** Connections open at once from one source address. Default 16. */
  maxPerSource?: number;
  /** Failed binds per system_id and per source before both are refused for lockoutMs. Default 5 in 5 minutes. */
  lockout?: { failures: number; lockoutMs: number };
  /** Id returned for a concatenated part that is not the last one. Default: a UUID. */
  newPartId?: () => string;
  /** How long parts of an incomplete concatenated message are kept. Default 5 minutes. */
  reassemblyHoldMs?: number;
  /** Receipts held per account while it has no receiver bind. Default 10,000 (oldest dropped). */
  receiptQueueCap?: number;
  /** Wait for deliver_sm_resp before the receipt is queued again. Default 10 s. */
  receiptResponseTimeoutMs?: number;
  /** Attempts of one receipt before it is dropped. Default 20. */
  receiptMaxAttempts?: number;
  /** Delay before re-sending receipts a bind refused or did not answer. Default 5 s. */
  receiptRetryMs?: number;
}

export interface SmppServer {
  start(): Promise<{ port: number | null; tlsPort: number | null }>;
  /** Unbind every session, then close the listeners. */
  stop(): Promise<void>;
  /**
   * Send a receipt to a receiver/transceiver bind of the account; 'queued' when none is bound
   * (held in memory, capped per account with the oldest dropped, re-sent when one binds).
   */
  deliverReceipt(accountId: string, receipt: CustomerReceipt): 'sent' | 'queued';
  /** Current binds (for status pages and tests). */
  binds(): Array<{ bindId: string; accountId: string; systemId: string; bindType: BindType; remoteIp: string }>;
  queuedReceipts(accountId: string): number;
  /**
   * A credential changed: `null` (disabled or gone) unbinds every session bound with it; otherwise
   * its new throughput applies to the next submit. Returns the sessions it touched.
   */
  credentialChanged(systemId: string, now: { throughputPerSecond: number } | null): number;
}

interface BindState {
  bindId: string;
  session: Session;
  remoteIp: string;
  log: Logger;
  bindType: BindType | null;
  systemId: string;
  account: SmppAccount | null;
  tokens: number;
  refillAt: number;
  idle: NodeJS.Timeout | null;
  bindTimer: NodeJS.Timeout | null;
  /** A bind is being checked: a second one on the connection is refused unchecked. */
  binding: boolean;
  /** The credential slot this bind holds (given back when the session closes). */
  slot: string | null;
  closing: boolean;
  /** Receipts written on this bind and not yet answered; failed over when the bind closes. */
  inflight: Set<(why: string) => void>;
}

interface QueuedReceipt {
  receipt: CustomerReceipt;
  attempts: number;
}

const BIND_COMMANDS: Record<string, BindType> = {
  bind_transmitter: 'transmitter',
  bind_receiver: 'receiver',
  bind_transceiver: 'transceiver',
};

/** SMPP 3.4 server for customer binds. */
export function createSmppServer(opts: SmppServerOptions): SmppServer {
  if (opts.tls === null && opts.tlsPort !== undefined && opts.tlsPort !== null) {
    throw new Error('tlsPort needs tls { key, cert }');
  }
  const log = opts.log;
  const now = () => opts.clock.now().getTime();
  const newPartId = opts.newPartId ?? (() => randomUUID());
  const queueCap = opts.receiptQueueCap ?? 10_000;
  const receiptTimeoutMs = opts.receiptResponseTimeoutMs ?? 10_000;
  const maxAttempts = opts.receiptMaxAttempts ?? 20;
  const retryMs = opts.receiptRetryMs ?? 5_000;
  const holdMs = opts.reassemblyHoldMs ?? 300_000;
  const reassembler = createReassembler({ holdMs, now });
  const binds = new Map<string, BindState>();
  const receiptQueues = new Map<string, QueuedReceipt[]>();
  const retryTimers = new Map<string, NodeJS.Timeout>();
  const servers: Array<ReturnType<typeof createSmppListener>> = [];
  let sweepTimer: NodeJS.Timeout | null = null;
  let rr = 0;
  const bindTimeoutMs = opts.bindTimeoutMs ?? 10_000;
  const maxConnections = opts.maxConnections ?? 1024;
  const maxPerSource = opts.maxPerSource ?? 16;
  const lockout = createBindLockout({ ...(opts.lockout ?? { failures: 5, lockoutMs: 300_000 }), now });
  const caps = createConnectionCaps({ max: maxConnections, perSource: maxPerSource });
  const bindSlots = opts.bindSlots ?? countedSlots(createCounters(null, 'local'));
  const releaseSlot = (b: BindState) => {
    if (b.slot === null) return;
    const systemId = b.slot;
    b.slot = null;
    bindSlots.release(systemId).catch((err: unknown) => log.warn({ err }, 'smpp bind slot not released'));
  };

  /** Counts a raw connection against the caps; over either it is destroyed before anything is read. */
  function admit(sock: Socket) {
    const refused = caps.admit(sock);
    if (refused)
      log.debug(
        { remoteIp: refused.ip, connections: refused.open, fromIp: refused.fromIp },
        'smpp connection refused: over the connection cap',
      );
  }

  /** Answers a bind with a failure and closes the connection: one guess per connection. */
  function refuseBind(b: BindState, pdu: PDU) {
    b.closing = true;
    if (b.session.socket.destroyed) return;
    b.session.send(pdu.response({ command_status: STATUS.ESME_RBINDFAIL }), () => b.session.socket.end());
    const t = setTimeout(() => b.session.socket.destroy(), 1000);
    t.unref();
  }

  function respond(b: BindState, pdu: PDU, fields: Record<string, unknown> = {}) {
    if (b.session.socket.destroyed) return;
    b.session.send(pdu.response(fields));
  }

  function touch(b: BindState) {
    if (b.idle) clearTimeout(b.idle);
    b.idle = setTimeout(() => {
      b.log.info({ idleTimeoutMs: opts.idleTimeoutMs }, 'smpp bind idle, closing');
      closeBind(b);
    }, opts.idleTimeoutMs);
    b.idle.unref();
  }

  function closeBind(b: BindState) {
    if (b.closing) return;
    b.closing = true;
    if (b.session.socket.destroyed) return;
    // Unbind first so the peer knows this is deliberate; the socket goes after a short grace.
    b.session.send(createPdu('unbind'), () => b.session.socket.destroy());
    const t = setTimeout(() => b.session.socket.destroy(), 1000);
    t.unref();
  }

  function takeToken(b: BindState): boolean {
    const tps = b.account?.throughputPerSecond ?? 0;
    if (!tps || tps <= 0) return true;
    const t = now();
    const elapsed = Math.max(0, t - b.refillAt) / 1000;
    b.tokens = Math.min(tps, b.tokens + elapsed * tps);
    b.refillAt = t;
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  async function handleBind(b: BindState, pdu: PDU, type: BindType) {
    if (b.bindType) {
      respond(b, pdu, { command_status: STATUS.ESME_RALYBND });
      return;
    }
    if (b.binding || b.closing) return refuseBind(b, pdu);
    b.binding = true;
    const systemId = str(pdu['system_id']);
    let account: SmppAccount | null;
    try {
      // The address lookup only runs while the id is locked: an ordinary bind costs no extra query.
      const locked =
        lockout.sourceLocked(b.remoteIp) ||
        (lockout.idLocked(systemId) && !(await opts.isOwnAddress?.(systemId, b.remoteIp)));
      if (locked) {
        b.log.info({ systemId }, 'smpp bind refused: locked out after failed binds');
        return refuseBind(b, pdu);
      }
      account = await opts.authenticate(systemId, str(pdu['password']), b.remoteIp);
    } catch (err) {
      // Not counted as a failure: the password was not checked (database or verifier unavailable).
      b.log.warn({ err }, 'smpp authenticate failed');
      return refuseBind(b, pdu);
    }
    if (!account) {
      lockout.failed(systemId, b.remoteIp);
      b.log.info({ systemId }, 'smpp bind refused');
      return refuseBind(b, pdu);
    }
    lockout.succeeded(systemId);
    if (account.maxBinds !== undefined) {
      let got: boolean;
      try {
        got = await bindSlots.acquire(systemId, account.maxBinds);
      } catch (err) {
        b.log.warn({ err }, 'smpp bind slots unavailable');
        return refuseBind(b, pdu);
      }
      // The password was right: not a failure for the lockout, only one bind too many.
      if (!got) {
        b.log.info(
          { systemId, maxBinds: account.maxBinds },
          'smpp bind refused: the credential has all its binds open',
        );
        return refuseBind(b, pdu);
      }
      b.slot = systemId;
      // The connection may have gone while the slot was taken: the close handler ran before it was ours.
      if (b.session.socket.destroyed) return releaseSlot(b);
    }
    if (b.closing || b.session.socket.destroyed) return;
    if (b.bindTimer) clearTimeout(b.bindTimer);
    b.bindTimer = null;
    b.binding = false;
    b.bindType = type;
    b.systemId = systemId;
    b.account = account;
    b.tokens = account.throughputPerSecond > 0 ? account.throughputPerSecond : 0;
    b.refillAt = now();
    b.log = b.log.child({ accountId: account.accountId, systemId, bindType: type });
    respond(b, pdu, { system_id: 'svc-exchange' });
    b.log.info({}, 'smpp bound');
    if (type !== 'transmitter') flushReceipts(account.accountId);
  }

  async function handleSubmit(b: BindState, pdu: PDU) {
    if (!b.account || (b.bindType !== 'transmitter' && b.bindType !== 'transceiver')) {
      respond(b, pdu, { command_status: STATUS.ESME_RINVBNDSTS });
      return;
    }
    if (!takeToken(b)) {
      respond(b, pdu, { command_status: STATUS.ESME_RTHROTTLED });
      return;
    }
    const part = readPduPart(pdu);
    if (!part) {
      respond(b, pdu, { command_status: STATUS.ESME_RINVMSGLEN });
      return;
    }
    const to = str(pdu['destination_addr']);
    const from = str(pdu['source_addr']);
    if (!to) {
      respond(b, pdu, { command_status: STATUS.ESME_RINVDSTADR });
      return;
    }
    const partId = part.concat ? newPartId() : undefined;
    const whole = reassembler.add(`${b.account.accountId}|${from}|${to}`, part, partId);
    if (whole === 'invalid') {
      respond(b, pdu, { command_status: STATUS.ESME_RINVDCS });
      return;
    }
    if (whole === 'pending') {
      // Earlier parts are answered at once: a customer with window 1 waits for this before the next part.
      respond(b, pdu, { message_id: partId });
      return;
    }
    const submission: SmppSubmission = {
      to,
      from,
      sourceTon: num(pdu['source_addr_ton']) ?? 0,
      sourceNpi: num(pdu['source_addr_npi']) ?? 0,
      destTon: num(pdu['dest_addr_ton']) ?? 0,
      destNpi: num(pdu['dest_addr_npi']) ?? 0,
      text: whole.text,
      dataCoding: whole.dataCoding,
      parts: whole.parts,
      partMessageIds: whole.earlierTags,
      registeredDelivery: (num(pdu['registered_delivery']) ?? 0) & 0x03,
      serviceType: str(pdu['service_type']),
      systemId: b.systemId,
      remoteIp: b.remoteIp,
      bindId: b.bindId,
    };
    let result: SmppSubmitResult;
    try {
      result = await opts.onSubmit(b.account, submission);
    } catch (err) {
      b.log.error({ err }, 'smpp onSubmit failed');
      result = { commandStatus: STATUS.ESME_RSYSERR };
    }
    if ('messageId' in result) respond(b, pdu, { message_id: result.messageId });
    else respond(b, pdu, { command_status: result.commandStatus || STATUS.ESME_RSYSERR });
  }

  function onPdu(b: BindState, pdu: PDU) {
    touch(b);
    if (pdu.isResponse()) return; // responses are routed to their callbacks by the library
    const bindType = BIND_COMMANDS[pdu.command];
    if (bindType) {
      void handleBind(b, pdu, bindType);
      return;
    }
    switch (pdu.command) {
      case 'enquire_link':
        respond(b, pdu);
        return;
      case 'unbind':
        b.closing = true;
        b.session.send(pdu.response(), () => b.session.socket.end());
        return;
      case 'submit_sm':
        void handleSubmit(b, pdu);
        return;
      case 'unknown':
        b.session.send(pdu.response());
        return;
      default:
        respond(b, pdu, { command_status: b.bindType ? STATUS.ESME_RINVCMDID : STATUS.ESME_RINVBNDSTS });
    }
  }

  function onSession(session: Session) {
    const bindId = randomUUID();
    const remoteIp = (session.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
    const b: BindState = {
      bindId,
      session,
      remoteIp,
      log: log.child({ bindId, remoteIp }),
      bindType: null,
      systemId: '',
      account: null,
      tokens: 0,
      refillAt: now(),
      idle: null,
      bindTimer: null,
      binding: false,
      slot: null,
      closing: false,
      inflight: new Set(),
    };
    binds.set(bindId, b);
    touch(b);
    // Unbound connections cost a descriptor and prove nothing: enquire_links do not keep one open.
    b.bindTimer = setTimeout(() => {
      // A bind being checked is ours to finish: it binds, or it is refused and the connection closed.
      if (b.bindType || b.binding) return;
      b.log.info({ bindTimeoutMs }, 'smpp connection not bound in time, closing');
      b.closing = true;
      session.socket.destroy();
    }, bindTimeoutMs);
    b.bindTimer.unref();
    session.on('pdu', (pdu: PDU) => onPdu(b, pdu));
    session.on('error', (err: Error) => {
      b.log.info({ err: err.message }, 'smpp session error, destroying socket');
      session.socket.destroy();
    });
    session.on('close', () => {
      if (b.idle) clearTimeout(b.idle);
      if (b.bindTimer) clearTimeout(b.bindTimer);
      binds.delete(bindId);
      releaseSlot(b);
      for (const fail of [...b.inflight]) fail('closed');
      b.log.info({}, 'smpp session closed');
    });
  }

  function receiverFor(accountId: string): BindState | null {
    const candidates = [...binds.values()].filter(
      (b) =>
        b.account?.accountId === accountId && (b.bindType === 'receiver' || b.bindType === 'transceiver') && !b.closing,
    );
    if (candidates.length === 0) return null;
    rr = (rr + 1) % candidates.length;
    return candidates[rr] as BindState;
  }

  function enqueue(accountId: string, q: QueuedReceipt) {
    let list = receiptQueues.get(accountId);
    if (!list) {
      list = [];
      receiptQueues.set(accountId, list);
    }
    if (list.length >= queueCap) {
      list.shift();
      log.warn({ accountId, cap: queueCap }, 'smpp receipt queue full, oldest receipt dropped');
    }
    list.push(q);
  }

  function scheduleRetry(accountId: string) {
    if (retryTimers.has(accountId)) return;
    const t = setTimeout(() => {
      retryTimers.delete(accountId);
      flushReceipts(accountId);
    }, retryMs);
    t.unref();
    retryTimers.set(accountId, t);
  }

  function receiptPdu(r: CustomerReceipt): PDU {
    const text = buildReceiptText({
      id: r.messageId,
      sub: r.sub ?? 1,
      dlvrd: r.dlvrd ?? (r.stat === 'DELIVRD' ? 1 : 0),
      submitDate: r.submitDate,
      doneDate: r.doneDate,
      stat: r.stat,
      err: r.err ?? '000',
      text: (r.text ?? '').replace(/[^A-Za-z0-9 .,:+-]/g, '.'),
    });
    const sender = checkSender(r.from);
    return createPdu('deliver_sm', {
      source_addr_ton: 1,
      source_addr_npi: 1,
      source_addr: r.to,
      // The original sender may be alphanumeric: say so, as it was on the way in.
      dest_addr_ton: sender.ok ? sender.ton : 0,
      dest_addr_npi: sender.ok ? sender.npi : 0,
      destination_addr: r.from,
      esm_class: 0x04,
      data_coding: 0,
      // The receipt alphabet above is ASCII letters, digits and punctuation whose GSM-7 codes equal ASCII.
      short_message: encodeGsm7(text),
      receipted_message_id: r.messageId,
      message_state: messageStateFor(r.stat),
    });
  }

  function sendReceipt(b: BindState, accountId: string, q: QueuedReceipt) {
    q.attempts++;
    let settled = false;
    const fail = (why: string) => {
      b.inflight.delete(fail);
      clearTimeout(timer);
      if (settled) return;
      settled = true;
      if (q.attempts >= maxAttempts) {
        b.log.warn({ messageId: q.receipt.messageId, attempts: q.attempts, why }, 'smpp receipt dropped');
        return;
      }
      enqueue(accountId, q);
      scheduleRetry(accountId);
    };
    const timer: NodeJS.Timeout = setTimeout(() => fail('timeout'), receiptTimeoutMs);
    timer.unref();
    b.inflight.add(fail);
    const written = b.session.send(receiptPdu(q.receipt), (resp: PDU) => {
      clearTimeout(timer);
      b.inflight.delete(fail);
      if (resp.command_status === STATUS.ESME_ROK) {
        settled = true;
        return;
      }
      fail(`status ${resp.command_status}`);
    });
    if (!written) fail('not writable');
  }

  function flushReceipts(accountId: string) {
    const list = receiptQueues.get(accountId);
    if (!list || list.length === 0) return;
    receiptQueues.delete(accountId);
    for (const q of list) {
      const b = receiverFor(accountId);
      if (!b) enqueue(accountId, q);
      else sendReceipt(b, accountId, q);
    }
  }

  return {
    async start() {
      const listen = (port: number, tls: SmppServerOptions['tls']) =>
        new Promise<number>((resolve, reject) => {
          // A TLS handshake never finished holds a descriptor like an unbound connection does.
          const srv = createSmppListener(
            tls ? { key: tls.key, cert: tls.cert, handshakeTimeout: bindTimeoutMs } : {},
            onSession,
          );
          srv.on('connection', admit);
          // A handshake timeout or a bad client hello only costs that connection; Node leaves the socket open without this.
          if (tls) srv.on('tlsClientError', (_err: Error, sock: Socket) => sock.destroy());
          srv.once('error', reject);
          srv.listen(port, opts.host ?? '0.0.0.0', () => {
            srv.off('error', reject);
            servers.push(srv);
            resolve((srv.address() as AddressInfo).port);
          });
        });
      const port = opts.port === null ? null : await listen(opts.port, null);
      const tlsPort =
        opts.tls && opts.tlsPort !== null && opts.tlsPort !== undefined ? await listen(opts.tlsPort, opts.tls) : null;
      sweepTimer = setInterval(
        () => {
          const dropped = reassembler.sweep();
          if (dropped > 0) log.info({ dropped }, 'smpp incomplete concatenated messages dropped');
        },
        Math.max(1000, Math.floor(holdMs / 2)),
      );
      sweepTimer.unref();
      log.info({ port, tlsPort }, 'smpp server listening');
      return { port, tlsPort };
    },
    async stop() {
      if (sweepTimer) clearInterval(sweepTimer);
      for (const t of retryTimers.values()) clearTimeout(t);
      retryTimers.clear();
      const closed = [...binds.values()].map(
        (b) =>
          new Promise<void>((resolve) => {
            if (b.session.socket.destroyed) return resolve();
            b.session.socket.once('close', () => resolve());
            closeBind(b);
          }),
      );
      await Promise.all(closed);
      await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
      servers.length = 0;
    },
    deliverReceipt(accountId, receipt) {
      const ids = [...(receipt.partMessageIds ?? []), receipt.messageId];
      const items: QueuedReceipt[] = ids.map((messageId) => ({ receipt: { ...receipt, messageId }, attempts: 0 }));
      const b = receiverFor(accountId);
      if (!b) {
        for (const q of items) enqueue(accountId, q);
        return 'queued';
      }
      for (const q of items) sendReceipt(b, accountId, q);
      return 'sent';
    },
    credentialChanged(systemId, changed) {
      let touched = 0;
      for (const b of binds.values()) {
        if (b.systemId !== systemId || !b.account || !b.bindType) continue;
        touched++;
        if (changed === null) {
          b.log.info({}, 'smpp credential disabled: unbinding');
          closeBind(b);
          continue;
        }
        b.account = { ...b.account, throughputPerSecond: changed.throughputPerSecond };
        b.tokens = Math.min(b.tokens, changed.throughputPerSecond);
      }
      return touched;
    },
    binds() {
      return [...binds.values()]
        .filter((b) => b.account && b.bindType)
        .map((b) => ({
          bindId: b.bindId,
          accountId: (b.account as SmppAccount).accountId,
          systemId: b.systemId,
          bindType: b.bindType as BindType,
          remoteIp: b.remoteIp,
        }));
    },
    queuedReceipts(accountId) {
      return receiptQueues.get(accountId)?.length ?? 0;
    },
  };
}
