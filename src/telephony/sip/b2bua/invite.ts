/** A new call from a reseller: loop and scheme checks, who is calling, the plan, then the first leg. */
import type { Logger } from 'pino';
import { isE164Digits } from '../../../platform/e164.js';
import { callIdOf, detached, detachedBytes, fromOf, requestUriOf, type SipRequest } from '../message.js';
import { negotiateSession } from '../session-timer.js';
import type { ServerTransaction } from '../transaction.js';
import type { SipPeer } from '../transport.js';
import { authenticate } from './auth.js';
import { callerNumberOf } from './caller-number.js';
import { onCallerCancel, tryNext } from './legs.js';
import { closeRelay } from './media.js';
import { failToCaller } from './teardown.js';
import {
  mask,
  type B2buaContext,
  type BridgeInput,
  type BridgeOutcome,
  type Call,
  type CallAttribution,
  type CallObserver,
  type CallPlan,
} from './types.js';

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
  const uri = requestUriOf(req);
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
  const from = fromOf(req).uri.user ?? '';
  const callId = callIdOf(req);
  const placed = await place(ctx, req, tx, source, {
    tag,
    attribution,
    to,
    cancelled: () => cancelledEarly,
    holder,
    plan: () =>
      ctx.policy.planCall({ ...attribution, to, from, origin: callerNumberOf(req), callId, sourceIp: source.host }),
  });
  if ('reject' in placed) {
    const { status, reason } = placed.reject;
    tx.reply(status, reason, {
      toTag: tag,
      headers: [
        ...(placed.minSe === undefined ? [] : [{ name: 'Min-SE', value: String(placed.minSe) }]),
        ...(placed.minSe === undefined
          ? [{ name: 'Reason', value: `SIP;cause=${status};text="${reason.replace(/"/g, "'")}"` }]
          : []),
      ],
    });
  }
}

/**
 * An INVITE another handler on the stack's chain already took (the revenue share answering) and now
 * hands to the B2BUA: no loop, scheme or caller checks (the handler did its own), the plan from the
 * handler, then legs, answer, in-dialog requests and teardown as any trunk call, the observer told of
 * the answer and the end. On `reject` the B2BUA has answered nothing: the handler answers the caller.
 */
export async function bridgeInvite(
  ctx: B2buaContext,
  req: SipRequest,
  tx: ServerTransaction,
  source: SipPeer,
  input: BridgeInput,
): Promise<BridgeOutcome> {
  let cancelledEarly = false;
  const holder: { call?: Call } = {};
  tx.onCancel = () => {
    if (holder.call) onCallerCancel(ctx, holder.call);
    else cancelledEarly = true;
  };
  const placed = await place(ctx, req, tx, source, {
    tag: ctx.dialogTagOf(req),
    attribution: input.attribution,
    to: input.to,
    cancelled: () => cancelledEarly,
    holder,
    plan: input.plan,
    ...(input.observer ? { observer: input.observer } : {}),
  });
  if ('reject' in placed && cancelledEarly) return { cancelled: true };
  return placed;
}

/**
 * The session terms, the plan, then the first leg. A caller that cancelled while the plan was made
 * (its 487 already sent by the transaction) still gets its call finished, so a hold the plan took is
 * settled (released) as any cancelled call's.
 */
async function place(
  ctx: B2buaContext,
  req: SipRequest,
  tx: ServerTransaction,
  source: SipPeer,
  o: {
    tag: string;
    attribution: CallAttribution;
    to: string;
    cancelled(): boolean;
    holder: { call?: Call };
    plan(): Promise<CallPlan>;
    observer?: CallObserver;
  },
): Promise<BridgeOutcome> {
  const negotiated = negotiateSession(req, ctx.sessionPolicy);
  if ('reject' in negotiated) {
    // Before planning, so a too-short interval holds no money and no slot.
    return { reject: { status: 422, reason: 'Session Interval Too Small' }, minSe: negotiated.reject.minSe };
  }
  const from = detached(fromOf(req).uri.user ?? '');
  // Kept as long as the call: copied, not a slice of the INVITE's header text (see `detached`).
  const callId = detached(callIdOf(req));
  const plan = await o.plan();
  if ('reject' in plan) return o.cancelled() ? { cancelled: true } : { reject: plan.reject };
  const to = o.to;
  let log: Logger | undefined;
  const call: Call = {
    callId,
    // Made on first use: a child logger serialises its bindings when made, and a call that goes well
    // logs only its end, which `finish` writes with the same fields itself.
    get log() {
      return (log ??= ctx.log.child({ callId, callGroupId: plan.callGroupId, to: mask(plan.to ?? to) }));
    },
    inReq: req,
    inTx: tx,
    source,
    localTag: o.tag,
    attribution: o.attribution,
    to: plan.to ?? to,
    from,
    callGroupId: plan.callGroupId,
    candidates: plan.candidates,
    maxDurationSeconds: plan.maxDurationSeconds,
    nextRoute: 0,
    attempts: [],
    ringing: false,
    cancelled: o.cancelled(),
    ended: false,
    startedAt: ctx.clock.now(),
    answeredAt: null,
    timers: [],
    session: negotiated.terms,
    // Copied: kept for the whole call, a pool slice would keep its whole 8 KiB block alive.
    callerSdp: detachedBytes(req.body),
    unregister: [],
    ...(o.observer ? { observer: o.observer } : {}),
  };
  o.holder.call = call;
  ctx.calls.add(call);
  const tried = plan.candidates.slice(0, ctx.maxRoutes);
  if (!call.cancelled && ctx.media && tried.some((c) => c.mediaMode === 'proxy')) {
    try {
      call.relay = await ctx.media.openRelay();
    } catch (err) {
      call.log.error({ err }, 'no media relay for a proxy-media route');
      failToCaller(ctx, call, 503, 'Service Unavailable');
      return { placed: true };
    }
    if (call.ended) {
      closeRelay(call);
      return { placed: true };
    }
  }
  tryNext(ctx, call);
  return { placed: true };
}
