import type { Logger } from 'pino';
import type { Clock } from '../platform/clock.js';
import { splitForWire } from './segments.js';
import type { SmsEncoding } from './segments.js';
import { checkSender } from './sender.js';
import { normaliseSupplierMessageId, parseReceiptText, statForMessageState, supplierIdKeys } from './receipt-text.js';
import type { ReceiptStat } from './receipt-text.js';
import { buf, connectSmpp, createPdu, num, STATUS, str } from './smpp-lib.js';
import type { PDU, Session } from './smpp-lib.js';
import { createReassembler, decodeByDataCoding, readPduPart } from './inbound.js';
import { bindFieldProblems } from './bind-fields.js';
import { TargetRefusedError, type TargetGuard } from '../platform/outbound-guard.js';

export type SupplierBindType = 'transceiver' | 'transmitter' | 'receiver';

export interface SupplierBindOptions {
  host: string;
  port: number;
  /** true, or TLS connect options (e.g. { ca, servername, rejectUnauthorized }). */
  tls: boolean | Record<string, unknown>;
  systemId: string;
  password: string;
  bindType: SupplierBindType;
  systemType?: string;
  /** Submits per second this bind may send. */
  tps: number;
  /** Outstanding (unanswered) PDUs allowed at once. */
  windowSize: number;
  /** Every PDU we send is failed when its response takes longer than this. */
  responseTimeoutMs: number;
  log: Logger;
  clock: Clock;
  /** Called for every receipt (deliver_sm with esm_class 4); reference is the submit's, when matched here. */
  onReceipt(receipt: SupplierReceipt): void;
  /**
   * A mobile-originated message (a deliver_sm that is not a receipt), whole once its parts are in:
   * resolves to the command_status to answer it with (ESME_ROK once kept; an error makes the SMSC
   * retry or drop it). Without it such messages are answered and dropped.
   */
  onMobileOriginated?(mo: MobileOriginated): Promise<number>;
  /** Default 30 s. */
  enquireLinkMs?: number;
  /** Reconnect backoff: first delay, cap. Defaults 1 s, 60 s; each delay gets ±50% jitter below it. */
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  /** First pause after ESME_RTHROTTLED / ESME_RMSGQFUL, doubled while it repeats. Default 1 s. */
  throttleBackoffMs?: number;
  /** Throttle answers one part may get before its submit is given up as refused. Default 5. */
  maxThrottleRetries?: number;
  /** How long a submit may wait for the bind to come up (or for window/rate room). Default 30 s. */
  queueTimeoutMs?: number;
  /** How long accepted ids are remembered to match receipts to their reference. Default 1 h, at most 100,000. */
  receiptMatchTtlMs?: number;
  /** Jitter source; tests fix it. */
  random?: () => number;
  /** Checks the SMSC's address at every connect and pins the socket to the checked answer. */
  guard?: TargetGuard;
}

export interface OutboundSms {
  to: string;
  from: string;
  text: string;
  /** The caller's id for this message, echoed in onReceipt when the receipt is matched here. */
  reference?: string;
  /** Ask for a receipt (registered_delivery 1). Default true. */
  registeredDelivery?: boolean;
  /** Force an encoding; default: GSM-7 when the text fits, else UCS-2. */
  encoding?: SmsEncoding;
}

export type SubmitOutcome =
  | { status: 'accepted'; supplierMessageId: string; supplierMessageIds: string[]; parts: number }
  | { status: 'refused'; commandStatus: number }
  | { status: 'error'; reason: string };

export interface SupplierReceipt {
  /** The id the receipt names (receipted_message_id TLV, else the text's id), normalised. */
  supplierMessageId: string;
  /** The caller's reference of the matching submit, or null when not matched in this process. */
  reference: string | null;
  stat: ReceiptStat;
  err: string;
  submitDate: Date | null;
  doneDate: Date | null;
  /** The receipt text as received (decoded). */
  rawText: string;
  /** Phone numbers are as the SMSC sent them: the handset (source) and our sender (destination). */
  source: string;
  destination: string;
}

/** A message a handset sent to one of our numbers, as the supplier's SMSC delivered it. */
export interface MobileOriginated {
  /** The handset's number and ours, as the SMSC sent them. */
  source: string;
  destination: string;
  text: string;
  parts: number;
  /** `<reference>/<total>` of a concatenated message (UDH or sar_*), else null: part of a re-send's identity. */
  reference: string | null;
}

export type SupplierBindState = 'idle' | 'connecting' | 'bound' | 'backoff' | 'closing' | 'closed';

export interface SupplierBind {
  start(): void;
  submit(message: OutboundSms): Promise<SubmitOutcome>;
  /** Unbind, then close the socket; no reconnect. */
  stop(): Promise<void>;
  state(): SupplierBindState;
  /** Current send rate after throttling (submits per second). */
  effectiveTps(): number;
  outstanding(): number;
  /** Number of TCP connections opened so far (tests check there is no storm). */
  connects(): number;
}

/** How long the first part of a mobile-originated message waits for the others. */
const MO_REASSEMBLY_MS = 300_000;

type PartResult = { ok: true; id: string } | { ok: false; commandStatus: number } | { ok: false; reason: string };

interface PartJob {
  fields: Record<string, unknown>;
  reference: string | null;
  throttled: number;
  deadline: number;
  resolve(r: PartResult): void;
}

interface Outstanding {
  timer: NodeJS.Timeout;
  fail(reason: string): void;
}

const BIND_COMMAND: Record<SupplierBindType, string> = {
  transceiver: 'bind_transceiver',
  transmitter: 'bind_transmitter',
  receiver: 'bind_receiver',
};

/** SMPP client bind to a supplier SMSC, for delivery to suppliers. */
export function createSupplierBind(opts: SupplierBindOptions): SupplierBind {
  if (opts.tps <= 0 || opts.windowSize < 1 || opts.responseTimeoutMs <= 0) {
    throw new Error('supplier bind needs tps > 0, windowSize >= 1 and responseTimeoutMs > 0');
  }
  const badFields = bindFieldProblems(opts);
  if (badFields.length > 0) throw new Error(`supplier bind ${badFields.join(', ')} must not hold control characters`);
  const log = opts.log.child({ smsc: `${opts.host}:${opts.port}`, systemId: opts.systemId });
  const now = () => opts.clock.now().getTime();
  const random = opts.random ?? Math.random;
  const enquireLinkMs = opts.enquireLinkMs ?? 30_000;
  const minBackoff = opts.reconnectMinMs ?? 1000;
  const maxBackoff = opts.reconnectMaxMs ?? 60_000;
  const throttleBase = opts.throttleBackoffMs ?? 1000;
  const maxThrottle = opts.maxThrottleRetries ?? 5;
  const queueTimeoutMs = opts.queueTimeoutMs ?? 30_000;
  const matchTtl = opts.receiptMatchTtlMs ?? 3_600_000;

  let state: SupplierBindState = 'idle';
  // The last connection attempt failed before binding (refused, timed out, bind refused): the SMSC
  // is unreachable, so sends fail at once (the route is skipped and the next one tried) rather
  // than waiting out the queue timeout for a bind that may be minutes of backoff away.
  let unreachable = false;
  // Why sends fail while unreachable: a refused address is told apart, as nothing was ever sent.
  let unreachableReason = 'not_bound';
  let session: Session | null = null;
  let attempt = 0;
  let connectCount = 0;
  let reconnectTimer: NodeJS.Timeout | null = null;
  let enquireTimer: NodeJS.Timeout | null = null;
  let pumpTimer: NodeJS.Timeout | null = null;
  let effTps = opts.tps;
  let tokens = 1;
  let refillAt = now();
  let throttleUntil = 0;
  let throttleStreak = 0;
  let concatRef = Math.floor(random() * 256);
  const queue: PartJob[] = [];
  const outstanding = new Map<number, Outstanding>();
  // Accepted ids (every key form) -> caller reference, oldest first, for receipt matching.
  const accepted = new Map<string, { reference: string | null; at: number }>();
  // Receipts that came before the submit_sm_resp naming their id.
  const early: Array<{ receipt: SupplierReceipt; keys: string[]; at: number }> = [];
  let stopWaiters: Array<() => void> = [];

  const capacity = () => Math.max(1, Math.ceil(effTps / 10));

  function remember(id: string, reference: string | null) {
    const t = now();
    // The id's keys are worked out once: every accepted submit comes through here.
    const ids = supplierIdKeys(id);
    const hit = { reference, at: t };
    for (const k of ids) {
      accepted.delete(k);
      accepted.set(k, hit);
    }
    while (accepted.size > 300_000) {
      const first = accepted.keys().next().value;
      if (first === undefined) break;
      accepted.delete(first);
    }
    if (early.length === 0) return;
    // An early receipt for this id can go now.
    const keys = new Set(ids);
    for (let i = early.length - 1; i >= 0; i--) {
      const e = early[i] as (typeof early)[number];
      if (e.keys.some((k) => keys.has(k))) {
        early.splice(i, 1);
        emitReceipt({ ...e.receipt, reference });
      }
    }
  }

  function lookup(keys: string[]): { reference: string | null } | null {
    const limit = now() - matchTtl;
    for (const k of keys) {
      const hit = accepted.get(k);
      if (hit && hit.at >= limit) return hit;
    }
    return null;
  }

  function emitReceipt(r: SupplierReceipt) {
    try {
      opts.onReceipt(r);
    } catch (err) {
      log.error({ err }, 'onReceipt threw');
    }
  }

  /** Early receipts wait only while submits are unanswered; then they go out unmatched. */
  function releaseEarly(force: boolean) {
    if (early.length === 0) return;
    const limit = now() - opts.responseTimeoutMs;
    for (let i = 0; i < early.length;) {
      const e = early[i] as (typeof early)[number];
      if (force || outstanding.size === 0 || e.at <= limit) {
        early.splice(i, 1);
        emitReceipt(e.receipt);
      } else i++;
    }
  }

  function setState(s: SupplierBindState) {
    if (state !== s) log.debug({ from: state, to: s }, 'supplier bind state');
    state = s;
  }

  function clearTimers() {
    if (enquireTimer) clearInterval(enquireTimer);
    enquireTimer = null;
    if (pumpTimer) clearTimeout(pumpTimer);
    pumpTimer = null;
  }

  function failOutstanding(reason: string) {
    for (const [, o] of [...outstanding]) o.fail(reason);
    outstanding.clear();
  }

  /** Send a PDU with a response timeout; cb gets the response or null on timeout/loss. */
  function request(s: Session, pdu: PDU, cb: (resp: PDU | null, reason?: string) => void): boolean {
    let done = false;
    const finish = (resp: PDU | null, reason?: string) => {
      if (done) return;
      done = true;
      clearTimeout(entry.timer);
      outstanding.delete(pdu.sequence_number);
      cb(resp, reason);
      if (outstanding.size === 0) releaseEarly(false);
      pump();
    };
    const entry: Outstanding = {
      timer: setTimeout(() => finish(null, 'response_timeout'), opts.responseTimeoutMs),
      fail: (reason) => finish(null, reason),
    };
    const ok = s.send(pdu, (resp: PDU) => finish(resp));
    if (!ok) {
      clearTimeout(entry.timer);
      done = true;
      return false;
    }
    outstanding.set(pdu.sequence_number, entry);
    return true;
  }

  function scheduleReconnect() {
    if (state === 'closing' || state === 'closed') return;
    setState('backoff');
    const base = Math.min(maxBackoff, minBackoff * 2 ** attempt);
    // "Equal jitter": between half and all of the delay, so binds that dropped together spread out.
    const delay = Math.round(base / 2 + (random() * base) / 2);
    attempt++;
    log.info({ delayMs: delay, attempt }, 'supplier bind reconnecting after backoff');
    reconnectTimer = setTimeout(() => {
      reconnectTimer = null;
      connect();
    }, delay);
  }

  function dropConnection(reason: string) {
    const s = session;
    if (!s) return;
    session = null;
    clearTimers();
    log.info({ reason }, 'supplier bind connection dropped');
    s.socket.destroy();
    if (state === 'connecting') {
      unreachable = true;
      failQueued(unreachableReason);
    }
    failOutstanding(reason);
    releaseEarly(true);
  }

  function connect() {
    // One connection at a time: never open a second socket while one exists.
    if (session || state === 'closing' || state === 'closed') return;
    setState('connecting');
    connectCount++;
    const tlsOpts = typeof opts.tls === 'object' ? opts.tls : {};
    try {
      // An IP literal never reaches `lookup`: it is checked here, a name in the guard's lookup.
      opts.guard?.checkHost(opts.host, opts.port);
    } catch (err) {
      if (!(err instanceof TargetRefusedError)) throw err;
      log.warn({}, 'supplier bind address refused');
      unreachable = true;
      unreachableReason = 'refused_target';
      failQueued(unreachableReason);
      scheduleReconnect();
      return;
    }
    const s = connectSmpp({
      host: opts.host,
      port: opts.port,
      tls: opts.tls !== false,
      ...tlsOpts,
      ...(opts.guard ? { lookup: opts.guard.netLookup(opts.port) } : {}),
    });
    session = s;
    s.on('error', (err: NodeJS.ErrnoException) => {
      log.info({ err: err.message }, 'supplier bind socket error');
      if (session === s && state === 'connecting')
        unreachableReason = err.code === 'ETARGETREFUSED' ? 'refused_target' : 'not_bound';
      if (session === s) dropConnection('socket_error');
      else s.socket.destroy();
    });
    s.on('close', () => {
      if (session === s) dropConnection('closed');
      const stopping = state === 'closing' || state === 'closed';
      if (stopping) {
        setState('closed');
        for (const w of stopWaiters) w();
        stopWaiters = [];
      } else if (session === null && !reconnectTimer) scheduleReconnect();
    });
    s.on('pdu', (pdu: PDU) => onPdu(s, pdu));
    // A host that drops SYNs would otherwise hold the bind for the OS connect timeout (minutes).
    const connectTimer = setTimeout(() => {
      if (session === s) dropConnection('connect_timeout');
    }, opts.responseTimeoutMs);
    s.socket.once('close', () => clearTimeout(connectTimer));
    s.once(opts.tls !== false ? 'secureConnect' : 'connect', () => {
      clearTimeout(connectTimer);
      const bind = createPdu(BIND_COMMAND[opts.bindType], {
        system_id: opts.systemId,
        password: opts.password,
        system_type: opts.systemType ?? '',
        interface_version: 0x34,
      });
      request(s, bind, (resp, reason) => {
        if (session !== s) return;
        if (!resp || resp.command_status !== STATUS.ESME_ROK) {
          log.warn({ commandStatus: resp?.command_status, reason }, 'supplier bind refused');
          dropConnection('bind_failed');
          return;
        }
        attempt = 0;
        unreachable = false;
        unreachableReason = 'not_bound';
        setState('bound');
        log.info({}, 'supplier bound');
        enquireTimer = setInterval(() => {
          if (session !== s) return;
          request(s, createPdu('enquire_link'), (r) => {
            if (!r && session === s) dropConnection('enquire_link_timeout');
          });
        }, enquireLinkMs);
        pump();
      });
    });
  }

  function onPdu(s: Session, pdu: PDU) {
    // Responses (generic_nack included) reach their request callbacks through the library.
    if (pdu.isResponse()) return;
    switch (pdu.command) {
      case 'enquire_link':
        s.send(pdu.response());
        return;
      case 'unbind':
        s.send(pdu.response(), () => s.socket.end());
        if (session === s) {
          session = null;
          clearTimers();
          failOutstanding('unbound_by_smsc');
          releaseEarly(true);
        }
        return;
      case 'deliver_sm':
      case 'data_sm':
        onDeliver(s, pdu);
        return;
      default:
        s.send(
          pdu.response({ command_status: pdu.command === 'unknown' ? STATUS.ESME_RINVCMDID : STATUS.ESME_RINVBNDSTS }),
        );
    }
  }

  // Parts of mobile-originated messages wait here for the rest (as the SMPP server's submits do).
  const moParts = createReassembler({ holdMs: MO_REASSEMBLY_MS, now });

  /** A mobile-originated message: answered once the handler kept it (or refused it), so the SMSC retries a failure. */
  function onMobileOriginated(s: Session, pdu: PDU, handler: NonNullable<SupplierBindOptions['onMobileOriginated']>) {
    const answer = (status: number) => s.send(pdu.response({ message_id: '', command_status: status }));
    const part = readPduPart(pdu);
    if (!part) return answer(STATUS.ESME_RINVMSGLEN);
    const source = str(pdu['source_addr']);
    const destination = str(pdu['destination_addr']);
    moParts.sweep();
    const whole = moParts.add(`${source}|${destination}`, part);
    if (whole === 'invalid') return answer(STATUS.ESME_RINVDCS);
    if (whole === 'pending') return answer(STATUS.ESME_ROK);
    const reference = part.concat ? `${part.concat.reference}/${part.concat.total}` : null;
    handler({ source, destination, text: whole.text, parts: whole.parts, reference }).then(answer, (err: unknown) => {
      log.error({ err }, 'mobile-originated message not kept');
      answer(STATUS.ESME_RSYSERR);
    });
  }

  function onDeliver(s: Session, pdu: PDU) {
    const esm = num(pdu['esm_class']) ?? 0;
    // 0x04 SMSC delivery receipt, 0x20 intermediate notification (SMPP 3.4 §5.2.12).
    if ((esm & 0x3c) !== 0x04 && (esm & 0x3c) !== 0x20) {
      if (opts.onMobileOriginated) return onMobileOriginated(s, pdu, opts.onMobileOriginated);
      s.send(pdu.response({ message_id: '' }));
      log.info({ esmClass: esm }, 'supplier sent a deliver_sm that is not a receipt; ignored');
      return;
    }
    s.send(pdu.response({ message_id: '' }));
    const raw = buf(pdu['short_message']).length > 0 ? buf(pdu['short_message']) : buf(pdu['message_payload']);
    const rawText = decodeByDataCoding(raw, num(pdu['data_coding']) ?? 0) ?? raw.toString('latin1');
    const parsed = parseReceiptText(rawText);
    const tlvId =
      pdu['receipted_message_id'] !== undefined ? normaliseSupplierMessageId(str(pdu['receipted_message_id'])) : '';
    const tlvState = num(pdu['message_state']);
    const stat = (tlvState !== undefined ? statForMessageState(tlvState) : null) ?? parsed?.stat ?? null;
    const id = tlvId || parsed?.id || '';
    if (!id || !stat) {
      log.warn({}, 'supplier receipt without id or state; ignored');
      return;
    }
    const receipt: SupplierReceipt = {
      supplierMessageId: id,
      reference: null,
      stat,
      err: parsed?.err ?? '000',
      submitDate: parsed?.submitDate ?? null,
      doneDate: parsed?.doneDate ?? null,
      rawText,
      source: str(pdu['source_addr']),
      destination: str(pdu['destination_addr']),
    };
    const keys = [...new Set([...supplierIdKeys(id), ...(parsed ? supplierIdKeys(parsed.id) : [])])];
    const hit = lookup(keys);
    if (hit) {
      emitReceipt({ ...receipt, reference: hit.reference });
      return;
    }
    if (outstanding.size > 0) {
      early.push({ receipt, keys, at: now() });
      return;
    }
    emitReceipt(receipt);
  }

  function takeToken(): number {
    const t = now();
    tokens = Math.min(capacity(), tokens + ((t - refillAt) / 1000) * effTps);
    refillAt = t;
    if (t < throttleUntil) return throttleUntil - t;
    if (tokens >= 1) {
      tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - tokens) / effTps) * 1000);
  }

  function schedulePump(ms: number) {
    if (pumpTimer) return;
    pumpTimer = setTimeout(
      () => {
        pumpTimer = null;
        pump();
      },
      Math.max(1, ms),
    );
  }

  function failQueued(reason: string) {
    for (const j of queue.splice(0)) j.resolve({ ok: false, reason });
  }

  function expireQueued() {
    const t = now();
    for (let i = 0; i < queue.length;) {
      const j = queue[i] as PartJob;
      if (j.deadline <= t) {
        queue.splice(i, 1);
        j.resolve({ ok: false, reason: state === 'bound' ? 'queue_timeout' : 'not_bound' });
      } else i++;
    }
  }

  function pump() {
    expireQueued();
    const s = session;
    if (!s || state !== 'bound' || opts.bindType === 'receiver') {
      if (queue.length > 0) schedulePump(Math.min(1000, queueTimeoutMs));
      return;
    }
    while (queue.length > 0 && outstanding.size < opts.windowSize) {
      const wait = takeToken();
      if (wait > 0) {
        schedulePump(wait);
        return;
      }
      const job = queue.shift() as PartJob;
      sendPart(s, job);
    }
  }

  /**
   * Submits made in one turn of the event loop (a money batch's sends resolve together) leave in
   * one write: the socket is corked at the first and uncorked once the turn's callbacks have run.
   * A write per PDU was a syscall per message on the daemon's main thread.
   */
  let corked: Session | null = null;
  function cork(s: Session) {
    if (corked === s) return;
    corked = s;
    s.socket.cork();
    process.nextTick(() => {
      corked = null;
      s.socket.uncork();
    });
  }

  function sendPart(s: Session, job: PartJob) {
    cork(s);
    const pdu = createPdu('submit_sm', job.fields);
    const ok = request(s, pdu, (resp, reason) => {
      if (!resp) {
        job.resolve({ ok: false, reason: reason ?? 'no_response' });
        return;
      }
      const st = resp.command_status;
      if (st === STATUS.ESME_ROK) {
        throttleStreak = 0;
        // Win the rate back slowly after a throttle.
        effTps = Math.min(opts.tps, effTps * 1.05 + 0.1);
        const id = normaliseSupplierMessageId(str(resp['message_id']));
        remember(id, job.reference);
        job.resolve({ ok: true, id });
        return;
      }
      if (st === STATUS.ESME_RTHROTTLED || st === STATUS.ESME_RMSGQFUL) {
        job.throttled++;
        throttleStreak++;
        effTps = Math.max(1, effTps / 2);
        throttleUntil = now() + Math.min(60_000, throttleBase * 2 ** (throttleStreak - 1));
        log.info({ commandStatus: st, effectiveTps: effTps }, 'supplier throttled; slowing down');
        if (job.throttled > maxThrottle) {
          job.resolve({ ok: false, commandStatus: st });
          return;
        }
        job.deadline = Math.max(job.deadline, throttleUntil + queueTimeoutMs);
        queue.unshift(job);
        return;
      }
      if (resp.command === 'generic_nack') {
        job.resolve({ ok: false, reason: `generic_nack_${st}` });
        return;
      }
      job.resolve({ ok: false, commandStatus: st });
    });
    if (!ok) job.resolve({ ok: false, reason: 'not_writable' });
  }

  return {
    start() {
      if (state !== 'idle') return;
      connect();
    },
    submit(message) {
      if (opts.bindType === 'receiver') return Promise.resolve({ status: 'error', reason: 'receiver_bind' });
      if (state === 'closing' || state === 'closed')
        return Promise.resolve({ status: 'error', reason: 'bind_stopped' });
      if (unreachable && state !== 'bound') return Promise.resolve({ status: 'error', reason: unreachableReason });
      const sender = checkSender(message.from);
      if (!sender.ok) return Promise.resolve({ status: 'error', reason: `invalid_sender_${sender.reason}` });
      const to = message.to.replace(/^\+/, '');
      if (!/^\d{1,15}$/.test(to)) return Promise.resolve({ status: 'error', reason: 'invalid_destination' });
      concatRef = (concatRef + 1) & 0xff;
      const opt: { reference: number; encoding?: SmsEncoding } = { reference: concatRef };
      if (message.encoding) opt.encoding = message.encoding;
      let parts;
      try {
        parts = splitForWire(message.text, opt);
      } catch {
        return Promise.resolve({ status: 'error', reason: 'unencodable_text' });
      }
      const deadline = now() + queueTimeoutMs;
      const results = parts.map(
        (p) =>
          new Promise<PartResult>((resolve) => {
            queue.push({
              reference: message.reference ?? null,
              throttled: 0,
              deadline,
              resolve,
              fields: {
                source_addr_ton: sender.ton,
                source_addr_npi: sender.npi,
                source_addr: sender.value,
                dest_addr_ton: 1,
                dest_addr_npi: 1,
                destination_addr: to,
                esm_class: p.esmClass,
                registered_delivery: message.registeredDelivery === false ? 0 : 1,
                data_coding: p.dataCoding,
                short_message: p.shortMessage,
              },
            });
          }),
      );
      pump();
      return Promise.all(results).then((rs): SubmitOutcome => {
        const ids: string[] = [];
        for (const r of rs) {
          if (!r.ok)
            return 'commandStatus' in r
              ? { status: 'refused', commandStatus: r.commandStatus }
              : { status: 'error', reason: r.reason };
          ids.push(r.id);
        }
        return { status: 'accepted', supplierMessageId: ids[0] as string, supplierMessageIds: ids, parts: ids.length };
      });
    },
    stop() {
      if (reconnectTimer) clearTimeout(reconnectTimer);
      reconnectTimer = null;
      clearTimers();
      for (const j of queue.splice(0)) j.resolve({ ok: false, reason: 'bind_stopped' });
      const s = session;
      if (!s || s.socket.destroyed) {
        session = null;
        setState('closed');
        return Promise.resolve();
      }
      setState('closing');
      return new Promise<void>((resolve) => {
        stopWaiters.push(resolve);
        // Unbind first; the socket goes when the SMSC answers or the response timeout passes.
        const sent = request(s, createPdu('unbind'), () => s.socket.destroy());
        if (!sent) s.socket.destroy();
      });
    },
    state: () => state,
    effectiveTps: () => effTps,
    outstanding: () => outstanding.size,
    connects: () => connectCount,
  };
}
