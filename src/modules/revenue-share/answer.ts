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
 */
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { Clock } from '../../platform/clock.js';
import type { MediaPool, MediaSession } from '../../telephony/media/pool.js';
import { mask } from '../../telephony/sip/b2bua/types.js';
import { createUasDialog, dialogRequest, type Dialog } from '../../telephony/sip/dialog.js';
import { parseUri } from '../../telephony/sip/headers.js';
import { callIdOf, fromOf, tagOf, toOf, type SipRequest } from '../../telephony/sip/message.js';
import type { SipStack } from '../../telephony/sip/stack.js';
import type { ServerTransaction } from '../../telephony/sip/transaction.js';
import type { SipPeer } from '../../telephony/sip/transport.js';
import type { AnsweredCall, LiveKey } from './crash.js';
import type { AnswerableRow } from './repo.js';
import type { EndedCall } from './traffic.js';

const ALLOW = 'INVITE, ACK, CANCEL, BYE, OPTIONS';

export type RevshareHangup =
  'caller-bye' | 'caller-cancel' | 'max-duration' | 'media-timeout' | 'ack-timeout' | 'no-media' | 'shutdown';

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

  function end(call: LiveCall, cause: RevshareHangup, sipCode: number) {
    if (call.ended) return;
    call.ended = true;
    live.delete(call);
    for (const t of call.timers) clearTimeout(t);
    call.unregister?.();
    void call.session?.close().catch((err: unknown) => log.warn({ err }, 'media session close failed'));
    const ended: EndedCall = {
      ...facts(call),
      answeredAt: call.answeredAt,
      endedAt: clock.now(),
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
      refuse: (status, reason) => {
        if (tx.state === 'proceeding') tx.reply(status, reason, { toTag });
      },
    };
    live.add(call);
    // The transaction has answered the CANCEL and sent 487 by now.
    tx.onCancel = () => end(call, 'caller-cancel', 487);
    const go = () =>
      answer(call, req, tx).catch((err: unknown) => {
        log.error({ err }, 'revenue share answer failed');
        if (!call.answeredAt) tx.reply(500, 'Server Internal Error', { toTag });
        end(call, 'no-media', 500);
      });
    if (entry.ringSeconds > 0) {
      tx.reply(180, 'Ringing', { toTag });
      const ring = setTimeout(go, entry.ringSeconds * 1000);
      ring.unref();
      call.timers.push(ring);
    } else void go();
  }

  stack.onRequest((req, tx, source, next) => {
    if (req.method !== 'INVITE' || tagOf(toOf(req)) !== undefined) return next();
    let number: string | null;
    try {
      number = dialled(parseUri(req.uri).user);
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
