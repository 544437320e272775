import type { Logger } from 'pino';
import type { CallEnd, CallEndCause, CallLanguage, EngineCall } from '../engine.js';
import { createUasDialog, dialogRequest, type Dialog } from '../sip/dialog.js';
import type { SipRequest } from '../sip/message.js';
import type { SipStack } from '../sip/stack.js';
import type { ServerTransaction } from '../sip/transaction.js';
import type { SipPeer } from '../sip/transport.js';
import { realClock, type PromptRenderer } from './actions.js';
import { createCallEvents, engineCall, notAnswered } from './engine-call.js';
import type { MediaPool, MediaSession } from './pool.js';

const ALLOW = 'INVITE, ACK, CANCEL, BYE, OPTIONS';

export interface AnsweredCall {
  /** The call as the call logic drives it (speak, play, listen, hangup): AI agents and scripts take it as it is. */
  call: EngineCall;
  /** The answered media stream (the call's audio both ways). */
  session: MediaSession;
  answeredAt: Date;
}

/**
 * Answers an incoming INVITE with a media session of our own (the exchange is the far end): an
 * RTP session answering the caller's offer, the 200 with our SDP, a UAS dialog registered on the
 * stack for the caller's BYE and refreshes, and an `EngineCall` over it, so whatever plays to a
 * call placed by the engine plays to this one too. The call ends by the caller's BYE, a missing
 * ACK, no RTP for the pool's timeout, or `call.hangup()` (our BYE). Resolves null when it could
 * not be answered (the INVITE got its final refusal).
 */
export async function answerWithMedia(o: {
  stack: SipStack;
  pool: MediaPool;
  renderer: PromptRenderer;
  log: Logger;
  req: SipRequest;
  tx: ServerTransaction;
  source: SipPeer;
  toTag: string;
  callId: string;
  language?: CallLanguage;
  now: () => Date;
}): Promise<AnsweredCall | null> {
  const { stack, tx, req, source, toTag, log } = o;
  let session: MediaSession;
  try {
    session = await o.pool.openSession();
  } catch (err) {
    log.error({ err }, 'no media session to answer a call');
    tx.reply(503, 'Service Unavailable', { toTag });
    return null;
  }
  let sdp: Buffer;
  try {
    sdp = Buffer.from(session.answerSdp(req.body.toString('utf8')), 'utf8');
  } catch {
    // No offer (late offer is not supported) or no codec in common.
    void session.close();
    tx.reply(488, 'Not Acceptable Here', { toTag });
    return null;
  }
  const contact = stack.contactUri(undefined, source.transport);
  const dialog: Dialog = createUasDialog(req, toTag, source.transport, contact, source);
  const events = createCallEvents(log);
  const abort = new AbortController();
  let endResult: CallEnd | null = null;
  let resolveEnded: (e: CallEnd) => void = () => undefined;
  const ended = new Promise<CallEnd>((r) => (resolveEnded = r));
  const answeredAt = o.now();

  function finish(cause: CallEndCause, by: 'local' | 'remote', reason: string): CallEnd {
    if (endResult) return endResult;
    endResult = { cause, by, sipStatus: null, reason, answeredAt, endedAt: o.now() };
    abort.abort();
    unregister();
    void session.close();
    events.emit('ended', endResult);
    resolveEnded(endResult);
    return endResult;
  }
  function bye(): void {
    const { req: byeReq, dest } = dialogRequest(dialog, 'BYE');
    stack.sendRequest(byeReq, dest, { onResponse: () => undefined, onTimeout: () => undefined });
  }
  const endLocally = (cause: CallEndCause, reason: string): Promise<CallEnd> => {
    if (endResult) return Promise.resolve(endResult);
    bye();
    return Promise.resolve(finish(cause, 'local', reason));
  };
  const reply200 = (t: ServerTransaction, withTag: boolean) =>
    t.reply(200, 'OK', {
      ...(withTag ? { toTag } : {}),
      headers: [
        { name: 'Contact', value: `<${contact}>` },
        { name: 'Allow', value: ALLOW },
        { name: 'Content-Type', value: 'application/sdp' },
      ],
      body: sdp,
    });

  const unregister = stack.registerDialog(dialog, (r, t) => {
    if (r.method === 'BYE') {
      t.reply(200, 'OK');
      finish('completed', 'remote', 'the caller hung up');
    } else if (r.method === 'INVITE' || r.method === 'UPDATE') {
      // A session refresh or re-INVITE: our media stays as it is, so our answer is the same SDP.
      reply200(t, false);
    } else t.reply(200, 'OK');
  });
  tx.onAckTimeout = () => void endLocally('failed', 'the caller never confirmed the answer');
  session.onTimeout(() => void endLocally('media_timeout', 'no audio from the caller'));
  reply200(tx, true);

  const call = engineCall({
    callId: o.callId,
    state: () => (endResult ? 'ended' : 'answered'),
    ended,
    events,
    media: () => {
      if (endResult) throw notAnswered();
      return session;
    },
    renderer: o.renderer,
    language: o.language ?? 'en',
    clock: realClock,
    signal: abort.signal,
    endLocally,
  });
  return { call, session, answeredAt };
}
