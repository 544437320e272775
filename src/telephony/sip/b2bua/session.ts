/** RFC 4028 session timers toward the caller: the headers of a 2xx, the timer, our own refreshes. */
import { dialogRequest } from '../dialog.js';
import { cseqOf, getHeader, type HeaderField } from '../message.js';
import { expiryMs, refreshMs, sessionExpiresValue } from '../session-timer.js';
import { later } from './context.js';
import { byeBoth, finish } from './teardown.js';
import type { B2buaContext, Call } from './types.js';

/** Session-Expires and Require for a 2xx to the caller, when the caller uses session timers. */
export function sessionHeaders(call: Call): HeaderField[] {
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
export function armSession(ctx: B2buaContext, call: Call): void {
  if (!call.session || call.ended) return;
  if (call.sessionTimer !== undefined) ctx.stack.timers.clear(call.sessionTimer);
  const terms = call.session;
  if (terms.refresher === 'uac') {
    call.sessionTimer = later(ctx, call, expiryMs(terms.interval), () => {
      if (call.ended) return;
      call.log.info({ interval: terms.interval }, 'session expired: the caller stopped refreshing');
      byeBoth(ctx, call);
      finish(ctx, call, 'session-expired', 200);
    });
  } else {
    call.sessionTimer = later(ctx, call, refreshMs(terms.interval), () => refreshCaller(ctx, call));
  }
}

/** Our refresh when the caller asked us to be the refresher: UPDATE if it allows it, else a re-INVITE re-offering the same SDP. */
function refreshCaller(ctx: B2buaContext, call: Call): void {
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
    byeBoth(ctx, call);
    finish(ctx, call, 'session-expired', 200);
  };
  ctx.stack.sendRequest(req, dest, {
    onResponse: (res, tx) => {
      if (res.status < 200) return;
      if (method === 'INVITE' && res.status < 300) {
        const ack = dialogRequest(d, 'ACK', { cseq: seq });
        // Retransmissions of this 2xx are then ACKed by the stack.
        void ctx.stack.sendAck(ack.req, ack.dest, tx).catch(() => undefined);
      }
      if (res.status < 300) armSession(ctx, call);
      else expire();
    },
    onTimeout: expire,
  });
}
