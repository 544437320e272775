/**
 * The SIP side of revenue share numbers: an INVITE to a number this exchange answers (allocated, or
 * a test number) from one of its range's supplier addresses is rung for the holder's ring time,
 * answered with the media plane (an RTP session that listens and keeps the call up), timed on the
 * injected clock and ended by either side, by the number's call limit or by silence. Each ended
 * call goes to `record` (pricing, CDR, ledger, fraud rules).
 *
 * The seam: one handler on the stack's request chain, registered when the module is built, so it
 * runs before the trunk B2BUA's (registered at the trunk module's start). Every INVITE to a number
 * not answered here passes on untouched (one Map look-up).
 *
 * What the caller hears is the number's `answer`: silence, an announcement looped until the end, or a
 * forward: the INVITE is handed to the trunk B2BUA (`forward`), which places the holder's B leg and
 * answers the caller when the B leg answers; this side only times the A leg from that answer to the
 * end. A forward the holder's balance cannot pay (402 from its plan) is answered here with the
 * announcement instead.
 */
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { Clock } from '../../platform/clock.js';
import type { MediaPool, MediaSession } from '../../telephony/media/pool.js';
import { mask } from '../../telephony/sip/b2bua/types.js';
import { createUasDialog, dialogRequest, type Dialog } from '../../telephony/sip/dialog.js';
import { callIdOf, fromOf, requestUriOf, tagOf, toOf, type SipRequest } from '../../telephony/sip/message.js';
import type { SipStack } from '../../telephony/sip/stack.js';
import type { ServerTransaction } from '../../telephony/sip/transaction.js';
import type { SipPeer } from '../../telephony/sip/transport.js';
import type { G711Codec } from '../../telephony/media/g711.js';
import type { BridgeOutcome, CallEndedEvent, CallObserver } from '../../telephony/sip/b2bua/index.js';
import type { ForwardPlanInput } from '../sip-trunks/planning.js';
import { DEFAULT_ANNOUNCEMENT, parseForwardTarget, type Announcement } from './answer-setting.js';
import type { AnsweredCall, LiveKey } from './crash.js';
import type { AnswerableRow } from './repo.js';
import type { EndedCall } from './traffic.js';

const ALLOW = 'INVITE, ACK, CANCEL, BYE, OPTIONS';

export type RevshareHangup =
  | 'caller-bye'
  | 'caller-cancel'
  | 'max-duration'
  | 'media-timeout'
  | 'ack-timeout'
  | 'no-media'
  | 'shutdown'
  // A forward's ends, as the trunk B2BUA names them (`failed`: no forward leg connected).
  | 'callee-bye'
  | 'no-answer'
  | 'session-expired'
  | 'forward-failed';

/** The trunk B2BUA's end of a forwarded call in this module's words. */
const FORWARD_CAUSES: Record<CallEndedEvent['hangupCause'], RevshareHangup> = {
  'caller-bye': 'caller-bye',
  'callee-bye': 'callee-bye',
  'max-duration': 'max-duration',
  'caller-cancel': 'caller-cancel',
  failed: 'forward-failed',
  'no-answer': 'no-answer',
  'ack-timeout': 'ack-timeout',
  shutdown: 'shutdown',
  'session-expired': 'session-expired',
  'media-timeout': 'media-timeout',
};

/** Hands a taken INVITE to the trunk B2BUA for a forward (the sip-trunks module's `forward`). */
export type Forwarder = (
  req: SipRequest,
  tx: ServerTransaction,
  source: SipPeer,
  o: { forward: ForwardPlanInput; observer: CallObserver },
) => Promise<BridgeOutcome>;

interface LiveCall {
  entry: AnswerableRow;
  sipCallId: string;
  from: string;
  source: SipPeer;
  startedAt: Date;
  answeredAt: Date | null;
  ended: boolean;
  toTag: string;
  timers: NodeJS.Timeout[];
  session?: MediaSession;
  sdp?: Buffer;
  dialog?: Dialog;
  unregister?: () => void;
  /** The live row's write (crash.ts): the call is recorded only after it, so recording removes it. */
  marked?: Promise<unknown>;
  /** Played on a loop once answered here; null: silence. */
  announcement: Announcement | null;
  /** Handed to the trunk B2BUA: it owns the INVITE, its answer and its dialogs. */
  bridged: boolean;
  /** Answers the INVITE with a final refusal while it is not answered yet. */
  refuse(status: number, reason: string): void;
}

/** What is known of a call from its INVITE: what the live row and the recorded call both start from. */
const facts = (call: LiveCall) => ({
  numberId: call.entry.numberId,
  sipCallId: call.sipCallId,
  from: call.from,
  sourceIp: call.source.host,
  startedAt: call.startedAt,
});

/** Digits of a dialled user part: `+` or `00` dropped; null when not a number. */
function dialled(user: string | undefined): string | null {
  const d = (user ?? '').replace(/^\+/, '').replace(/^00/, '');
  return /^\d{7,15}$/.test(d) ? d : null;
}

export function createRevshareAnswering(deps: {
  stack: SipStack;
  media: { get(): MediaPool };
  clock: Clock;
  log: Logger;
  /** The number's answering entry when this exchange answers it. */
  lookup(number: string): AnswerableRow | undefined;
  record(call: EndedCall): Promise<unknown>;
  /** Marks an answered call live for the crash reconcile. */
  answered(call: AnsweredCall): Promise<unknown>;
  /** An announcement in the session's codec (TTS, or the https file decoded). */
  announcement(a: Announcement, codec: G711Codec): Promise<Uint8Array>;
  /** Places a forward's B leg; absent (no SIP trunk plane), forwards play the announcement. */
  forward?: Forwarder;
}) {
  const { stack, clock, log } = deps;
  const live = new Set<LiveCall>();
  const pending = new Set<Promise<unknown>>();
  /** `answered` (number, sipCallId) and `recorded` (callId or null) for observers such as tests. */
  const events = new EventEmitter();

  function bye(call: LiveCall) {
    if (!call.dialog) return;
    const { req, dest } = dialogRequest(call.dialog, 'BYE');
    stack.sendRequest(req, dest, { onResponse: () => undefined, onTimeout: () => undefined });
  }

  function end(call: LiveCall, cause: RevshareHangup, sipCode: number, endedAt = clock.now()) {
    if (call.ended) return;
    call.ended = true;
    live.delete(call);
    for (const t of call.timers) clearTimeout(t);
    call.unregister?.();
    void call.session?.close().catch((err: unknown) => log.warn({ err }, 'media session close failed'));
    const ended: EndedCall = {
      ...facts(call),
      answeredAt: call.answeredAt,
      endedAt,
      sipCode,
      hangupCause: cause,
    };
    log.info(
      { number: mask(call.entry.number), cause, answered: call.answeredAt !== null },
      'revenue share call ended',
    );
    const p = Promise.resolve(call.marked)
      .catch((err: unknown) => log.warn({ err }, 'revenue share call not marked live'))
      .then(() => deps.record(ended))
      .then((id) => events.emit('recorded', id))
      .catch((err: unknown) => log.error({ err, numberId: call.entry.numberId }, 'revenue share call not recorded'))
      .finally(() => pending.delete(p));
    pending.add(p);
  }

  function inDialog(call: LiveCall, req: SipRequest, tx: ServerTransaction) {
    if (req.method === 'BYE') {
      tx.reply(200, 'OK');
      end(call, 'caller-bye', 200);
      return;
    }
    // A session refresh or re-INVITE: our media stays as it is, so our answer is the same SDP.
    if (req.method === 'INVITE' || req.method === 'UPDATE') {
      const contact = stack.contactUri(undefined, call.source.transport);
      tx.reply(200, 'OK', {
        headers: [
          { name: 'Contact', value: `<${contact}>` },
          { name: 'Allow', value: ALLOW },
          ...(call.sdp ? [{ name: 'Content-Type', value: 'application/sdp' }] : []),
        ],
        ...(call.sdp ? { body: call.sdp } : {}),
      });
      return;
    }
    tx.reply(200, 'OK');
  }

  async function answer(call: LiveCall, req: SipRequest, tx: ServerTransaction) {
    if (call.ended) return;
    let session: MediaSession;
    try {
      session = await deps.media.get().openSession();
    } catch (err) {
      log.error({ err }, 'no media session for a revenue share call');
      tx.reply(503, 'Service Unavailable', { toTag: call.toTag });
      return end(call, 'no-media', 503);
    }
    if (call.ended) return void session.close();
    let sdp: string;
    try {
      sdp = session.answerSdp(req.body.toString('utf8'));
    } catch {
      // No offer (late offer is not supported) or no codec in common.
      void session.close();
      tx.reply(488, 'Not Acceptable Here', { toTag: call.toTag });
      return end(call, 'no-media', 488);
    }
    call.session = session;
    call.sdp = Buffer.from(sdp, 'utf8');
    const contact = stack.contactUri(undefined, call.source.transport);
    call.dialog = createUasDialog(req, call.toTag, call.source.transport, contact, call.source);
    call.unregister = stack.registerDialog(call.dialog, (r, t) => inDialog(call, r, t));
    tx.onAckTimeout = () => {
      bye(call);
      end(call, 'ack-timeout', 200);
    };
    call.answeredAt = clock.now();
    call.marked = deps.answered({ ...facts(call), answeredAt: call.answeredAt });
    tx.reply(200, 'OK', {
      toTag: call.toTag,
      headers: [
        { name: 'Contact', value: `<${contact}>` },
        { name: 'Allow', value: ALLOW },
        { name: 'Content-Type', value: 'application/sdp' },
      ],
      body: call.sdp,
    });
    session.onTimeout(() => {
      bye(call);
      end(call, 'media-timeout', 200);
    });
    const limit = setTimeout(() => {
      bye(call);
      end(call, 'max-duration', 200);
    }, call.entry.maxCallSeconds * 1000);
    limit.unref();
    call.timers.push(limit);
    events.emit('answered', call.entry.number, call.sipCallId);
    if (call.announcement) void announce(call, session, call.announcement);
  }

  /** Plays the announcement back to back until the call ends; one that cannot be rendered leaves silence. */
  async function announce(call: LiveCall, session: MediaSession, a: Announcement) {
    let audio: Uint8Array;
    try {
      audio = await deps.announcement(a, session.codec);
    } catch (err) {
      log.warn({ err, numberId: call.entry.numberId }, 'announcement not rendered: the call stays up in silence');
      return;
    }
    if (audio.length === 0) return;
    try {
      // The session queues plays gaplessly; closing it (the call's end) cuts the one playing short.
      while (!call.ended) if ((await session.play(audio)).interrupted) return;
    } catch (err) {
      if (!call.ended) log.warn({ err, numberId: call.entry.numberId }, 'announcement stopped');
    }
  }

  /**
   * A forward: the INVITE goes to the trunk B2BUA with the holder as payer. The B2BUA answers the
   * caller when the B leg answers (`observer.answered`, from which the A leg earns) and reports the
   * end; refused for the balance, the call is answered here with the announcement.
   */
  async function forward(call: LiveCall, req: SipRequest, tx: ServerTransaction, fwd: Forwarder) {
    const { entry } = call;
    const answer = entry.answer.mode === 'forward' ? entry.answer : null;
    const target = answer ? parseForwardTarget(answer.target) : null;
    if (!answer || !target || !entry.holderId) return ring(call, req, tx);
    call.bridged = true;
    const outcome = await fwd(req, tx, call.source, {
      forward: {
        payer: entry.holderId,
        target,
        from: call.from,
        origin: call.from,
        callId: call.sipCallId,
        sourceIp: call.source.host,
        dialled: entry.number,
        routeId: entry.numberId,
        maxSeconds: entry.maxCallSeconds,
      },
      observer: {
        answered: (at) => {
          if (call.ended) return;
          call.answeredAt = at;
          call.marked = deps.answered({ ...facts(call), answeredAt: at });
          events.emit('answered', entry.number, call.sipCallId);
        },
        ended: (e) => end(call, FORWARD_CAUSES[e.hangupCause], e.sipCode, e.endedAt),
      },
    });
    if ('placed' in outcome) return;
    call.bridged = false;
    if ('cancelled' in outcome) return end(call, 'caller-cancel', 487);
    if (outcome.reject.status === 402) {
      log.info({ number: mask(entry.number) }, 'forward not affordable: the announcement answers');
      // The B2BUA answered nothing; the INVITE and its CANCEL are this side's again.
      tx.onCancel = () => end(call, 'caller-cancel', 487);
      return ring(call, req, tx);
    }
    log.info({ number: mask(entry.number), status: outcome.reject.status }, 'forward refused');
    call.refuse(outcome.reject.status, outcome.reject.reason);
    end(call, 'forward-failed', outcome.reject.status);
  }

  /** Rings for the holder's ring time, then answers here. */
  function ring(call: LiveCall, req: SipRequest, tx: ServerTransaction) {
    const go = () =>
      answer(call, req, tx).catch((err: unknown) => {
        log.error({ err }, 'revenue share answer failed');
        if (!call.answeredAt) tx.reply(500, 'Server Internal Error', { toTag: call.toTag });
        end(call, 'no-media', 500);
      });
    if (call.entry.ringSeconds > 0) {
      tx.reply(180, 'Ringing', { toTag: call.toTag });
      const t = setTimeout(go, call.entry.ringSeconds * 1000);
      t.unref();
      call.timers.push(t);
    } else void go();
  }

  function onInvite(entry: AnswerableRow, req: SipRequest, tx: ServerTransaction, source: SipPeer) {
    const toTag = stack.newTag();
    if (!entry.sourceIps.includes(source.host)) {
      log.info(
        { number: mask(entry.number), source: source.host },
        'revenue share call from an address not of the range',
      );
      tx.reply(403, 'Forbidden', { toTag });
      return;
    }
    if (!entry.rangeActive) {
      tx.reply(480, 'Temporarily Unavailable', { toTag });
      return;
    }
    let from: string;
    try {
      from = (fromOf(req).uri.user ?? '').replace(/^\+/, '').replace(/\D/g, '');
    } catch {
      from = '';
    }
    const a = entry.answer;
    const call: LiveCall = {
      entry,
      sipCallId: callIdOf(req),
      from,
      source,
      startedAt: clock.now(),
      answeredAt: null,
      ended: false,
      toTag,
      timers: [],
      // A forward answered here plays its own announcement, or the default one.
      announcement:
        a.mode === 'announcement'
          ? a.announcement
          : a.mode === 'forward'
            ? (a.announcement ?? DEFAULT_ANNOUNCEMENT)
            : null,
      bridged: false,
      refuse: (status, reason) => {
        if (!call.bridged && tx.state === 'proceeding') tx.reply(status, reason, { toTag });
      },
    };
    live.add(call);
    // The transaction has answered the CANCEL and sent 487 by now.
    tx.onCancel = () => end(call, 'caller-cancel', 487);
    if (a.mode === 'forward' && deps.forward) {
      const fwd = deps.forward;
      forward(call, req, tx, fwd).catch((err: unknown) => {
        log.error({ err }, 'revenue share forward failed');
        if (!call.bridged) call.refuse(500, 'Server Internal Error');
        end(call, 'forward-failed', 500);
      });
      return;
    }
    ring(call, req, tx);
  }

  stack.onRequest((req, tx, source, next) => {
    if (req.method !== 'INVITE' || tagOf(toOf(req)) !== undefined) return next();
    let number: string | null;
    try {
      number = dialled(requestUriOf(req).user);
    } catch {
      return next();
    }
    const entry = number === null ? undefined : deps.lookup(number);
    if (!entry) return next();
    onInvite(entry, req, tx, source);
  });

  return {
    events,
    liveCalls: () => live.size,
    /** The answered calls up on this daemon (the crash heartbeat refreshes them). */
    answeredKeys: (): LiveKey[] =>
      [...live]
        .filter((c) => c.answeredAt !== null)
        .map((c) => ({ numberId: c.entry.numberId, sipCallId: c.sipCallId })),
    /** Ends every live call (shutdown) and waits for their records. */
    async hangupAll() {
      for (const call of [...live]) {
        // A forward's dialogs are the trunk B2BUA's: it hangs them up at its own stop.
        if (call.bridged) {
          end(call, 'shutdown', call.answeredAt ? 200 : 503);
          continue;
        }
        if (call.answeredAt) bye(call);
        else call.refuse(503, 'Service Unavailable');
        end(call, 'shutdown', call.answeredAt ? 200 : 503);
      }
      await Promise.all([...pending]);
    },
    /** Resolves once every ended call so far is recorded. */
    settled: () => Promise.all([...pending]).then(() => undefined),
  };
}

export type RevshareAnswering = ReturnType<typeof createRevshareAnswering>;
