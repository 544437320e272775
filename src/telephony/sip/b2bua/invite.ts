/** A new call from a reseller: loop and scheme checks, who is calling, the plan, then the first leg. */
import { isE164Digits } from '../../../platform/e164.js';
import { parseUri } from '../headers.js';
import { callIdOf, fromOf, type SipRequest } from '../message.js';
import { negotiateSession } from '../session-timer.js';
import type { ServerTransaction } from '../transaction.js';
import type { SipPeer } from '../transport.js';
import { authenticate } from './auth.js';
import { callerNumberOf } from './caller-number.js';
import { onCallerCancel, tryNext } from './legs.js';
import { closeRelay } from './media.js';
import { failToCaller } from './teardown.js';
import { mask, type B2buaContext, type Call } from './types.js';

export async function onInvite(
  ctx: B2buaContext,
  req: SipRequest,
  tx: ServerTransaction,
  source: SipPeer,
): Promise<void> {
  let cancelledEarly = false;
  const holder: { call?: Call } = {};
  tx.onCancel = () => {
    if (holder.call) onCallerCancel(ctx, holder.call);
    else cancelledEarly = true;
  };
  const tag = ctx.dialogTagOf(req);
  // A route whose supplier is the exchange (directly or through a peer that sends it back)
  // would otherwise loop until Max-Forwards runs out, holding money and a slot on every pass.
  if (ctx.loop.carriedBy(req)) {
    ctx.log.warn({ source: `${source.host}:${source.port}` }, 'looped INVITE refused');
    tx.reply(482, 'Loop Detected', { toTag: tag });
    return;
  }
  const uri = parseUri(req.uri);
  if (uri.scheme !== 'sip' && uri.scheme !== 'sips') {
    tx.reply(416, 'Unsupported URI Scheme', { toTag: tag });
    return;
  }
  const attribution = await authenticate(ctx, req, tx, source, tag);
  if (!attribution || cancelledEarly) return;
  const to = uri.user ?? '';
  if (!isE164Digits(to)) {
    tx.reply(484, 'Address Incomplete', { toTag: tag });
    return;
  }
  const negotiated = negotiateSession(req, ctx.sessionPolicy);
  if ('reject' in negotiated) {
    // Before planning, so a too-short interval holds no money and no slot.
    tx.reply(422, 'Session Interval Too Small', {
      toTag: tag,
      headers: [{ name: 'Min-SE', value: String(negotiated.reject.minSe) }],
    });
    return;
  }
  const from = fromOf(req).uri.user ?? '';
  const callId = callIdOf(req);
  const plan = await ctx.policy.planCall({
    ...attribution,
    to,
    from,
    origin: callerNumberOf(req),
    callId,
    sourceIp: source.host,
  });
  if (cancelledEarly) return;
  if ('reject' in plan) {
    tx.reply(plan.reject.status, plan.reject.reason, {
      toTag: tag,
      headers: [
        { name: 'Reason', value: `SIP;cause=${plan.reject.status};text="${plan.reject.reason.replace(/"/g, "'")}"` },
      ],
    });
    return;
  }
  const call: Call = {
    callId,
    log: ctx.log.child({ callId, callGroupId: plan.callGroupId, to: mask(plan.to ?? to) }),
    inReq: req,
    inTx: tx,
    source,
    localTag: tag,
    attribution,
    to: plan.to ?? to,
    from,
    callGroupId: plan.callGroupId,
    candidates: plan.candidates,
    maxDurationSeconds: plan.maxDurationSeconds,
    nextRoute: 0,
    attempts: [],
    ringing: false,
    cancelled: false,
    ended: false,
    startedAt: ctx.clock.now(),
    answeredAt: null,
    timers: [],
    session: negotiated.terms,
    callerSdp: req.body,
    unregister: [],
  };
  holder.call = call;
  ctx.calls.add(call);
  const tried = plan.candidates.slice(0, ctx.maxRoutes);
  if (ctx.media && tried.some((c) => c.mediaMode === 'proxy')) {
    try {
      call.relay = await ctx.media.openRelay();
    } catch (err) {
      call.log.error({ err }, 'no media relay for a proxy-media route');
      return failToCaller(ctx, call, 503, 'Service Unavailable');
    }
    if (call.ended) return closeRelay(call);
  }
  tryNext(ctx, call);
}
