/** Requests within an answered call: BYE, re-INVITE, UPDATE, INFO relayed across, session refreshes answered here. */
import { dialogRequest } from '../dialog.js';
import { cseqOf, detachedBytes, getHeader, type HeaderField, type SipRequest } from '../message.js';
import { isRefresh, negotiateSession } from '../session-timer.js';
import type { ClientTransaction, ServerTransaction } from '../transaction.js';
import { sdpVia } from './media.js';
import { armSession, sessionHeaders } from './session.js';
import { byeBoth, finish } from './teardown.js';
import { ALLOW, type B2buaContext, type Call } from './types.js';

/** An in-dialog request on either side of an answered call: the stack routes it here by dialog. */
export function onInDialog(
  ctx: B2buaContext,
  call: Call,
  side: 'in' | 'out',
  req: SipRequest,
  tx: ServerTransaction,
): void {
  const { stack } = ctx;
  if (req.method === 'BYE') {
    tx.reply(200, 'OK');
    byeBoth(ctx, call, side);
    finish(ctx, call, side === 'in' ? 'caller-bye' : 'callee-bye', 200);
    return;
  }
  const other = side === 'in' ? call.leg?.dialog : call.inDialog;
  if (!other) {
    tx.reply(481, 'Call/Transaction Does Not Exist');
    return;
  }
  const offerAnswer = req.method === 'INVITE' || req.method === 'UPDATE';
  if (side === 'in' && offerAnswer && isRefresh(call.callerSdp, req.body)) return answerRefresh(ctx, call, req, tx);
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
  // Through the re-INVITE's transaction: the stack re-ACKs the 2xx's retransmissions from then on.
  const ackOther = (a: { body: Buffer; type: string | undefined }, invite: ClientTransaction) => {
    const headers: HeaderField[] =
      a.type !== undefined && a.body.length ? [{ name: 'Content-Type', value: a.type }] : [];
    const ack = dialogRequest(other, 'ACK', { cseq: seq, body: a.body, headers });
    void stack.sendAck(ack.req, ack.dest, invite).catch(() => undefined);
  };
  // A re-INVITE without SDP (delayed offer): the 2xx carries the other side's offer and the answer
  // comes in the sender's ACK (RFC 3261 §13.2.1, RFC 3264 §4), so the ACK to the other side waits for it.
  const delayedOffer = req.method === 'INVITE' && req.body.length === 0;
  let offerPassed = false;
  let answerAck: { body: Buffer; type: string | undefined } | null = null;
  stack.sendRequest(out, dest, {
    onResponse: (res, outTx) => {
      if (res.status < 200) return;
      if (req.method === 'INVITE' && res.status < 300) {
        if (!delayedOffer || res.body.length === 0) ackOther({ body: Buffer.alloc(0), type: undefined }, outTx);
        else if (offerPassed) {
          // A retransmitted 2xx before the answer is known (then the stack ACKs them); the sender's 2xx has its own retransmissions.
          return;
        } else {
          offerPassed = true;
          tx.onAck = (ack) => {
            const type = getHeader(ack, 'content-type');
            const body = sdpVia(call, call.leg, sender, ack.body);
            answerAck = { body, type };
            if (side === 'in' && ack.body.length) call.callerSdp = detachedBytes(ack.body);
            if (side === 'out' && body.length) call.sdpToCaller = { body: detachedBytes(body), type };
            ackOther(answerAck, outTx);
          };
          // No ACK from the sender: the other side still gets one (without an answer) and ends the call as it sees fit.
          tx.onAckTimeout = () => {
            if (answerAck) return;
            answerAck = { body: Buffer.alloc(0), type: undefined };
            ackOther(answerAck, outTx);
          };
        }
      }
      // A refused offer leaves the session as it was (RFC 3264 §8), the relay's target included.
      if (offerAnswer && res.status >= 300 && call.leg?.proxied) call.relay?.refused(sender);
      const rct = getHeader(res, 'content-type');
      const resBody = offerAnswer && res.status < 300 ? sdpVia(call, call.leg, receiver, res.body) : res.body;
      const headers: HeaderField[] = rct !== undefined && resBody.length ? [{ name: 'Content-Type', value: rct }] : [];
      if (req.method === 'INVITE')
        headers.push({
          name: 'Contact',
          value: `<${call.inDialog === other ? (call.leg?.dialog?.contact ?? '') : (call.inDialog?.contact ?? '')}>`,
        });
      if (offerAnswer && res.status < 300) {
        // A media change that went through refreshes the caller's session as well (RFC 4028 §10).
        if (side === 'in') {
          const n = negotiateSession(req, ctx.sessionPolicy, call.session ?? undefined);
          if ('terms' in n) call.session = n.terms;
          if (req.body.length) call.callerSdp = detachedBytes(req.body);
          if (resBody.length) call.sdpToCaller = { body: detachedBytes(resBody), type: rct };
          headers.push(...sessionHeaders(call));
        } else {
          if (res.body.length) call.callerSdp = detachedBytes(res.body);
          if (outBody.length) call.sdpToCaller = { body: detachedBytes(outBody), type: ct };
        }
        armSession(ctx, call);
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
function answerRefresh(ctx: B2buaContext, call: Call, req: SipRequest, tx: ServerTransaction): void {
  const n = negotiateSession(req, ctx.sessionPolicy, call.session ?? undefined);
  if ('reject' in n) {
    tx.reply(422, 'Session Interval Too Small', { headers: [{ name: 'Min-SE', value: String(n.reject.minSe) }] });
    return;
  }
  call.session = n.terms;
  const headers: HeaderField[] = [...sessionHeaders(call)];
  if (req.method === 'INVITE')
    headers.push({ name: 'Contact', value: `<${call.inDialog?.contact ?? ''}>` }, { name: 'Allow', value: ALLOW });
  // A re-INVITE always gets SDP (the answer, or our offer when it had none); an UPDATE only when it offered.
  const sdp = req.method === 'INVITE' || req.body.length ? call.sdpToCaller : undefined;
  if (sdp?.type !== undefined) headers.push({ name: 'Content-Type', value: sdp.type });
  tx.reply(200, 'OK', { headers, ...(sdp ? { body: sdp.body } : {}) });
  armSession(ctx, call);
}
