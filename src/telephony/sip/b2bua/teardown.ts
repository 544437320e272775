/** How a call and its legs end: attempt records, the caller's final answer, BYEs, the ended event. */
import { dialogRequest } from '../dialog.js';
import { getHeader, type HeaderField, type SipResponse } from '../message.js';
import { notify, sendOnly } from './context.js';
import { closeRelay } from './media.js';
import {
  mask,
  type AttemptRecord,
  type B2buaContext,
  type Call,
  type CallEndedEvent,
  type HangupCause,
  type Leg,
} from './types.js';

function copyHeaders(res: SipResponse, names: string[]): HeaderField[] {
  const out: HeaderField[] = [];
  for (const n of names) {
    const v = getHeader(res, n);
    if (v !== undefined) out.push({ name: n, value: v });
  }
  return out;
}

export function recordAttempt(
  ctx: B2buaContext,
  call: Call,
  leg: Leg,
  sipCode: number | null,
  reason: string,
  outcome: AttemptRecord['outcome'],
): void {
  if (leg.ended) return;
  leg.ended = true;
  if (leg.setupTimer !== undefined) ctx.stack.timers.clear(leg.setupTimer);
  const a: AttemptRecord = {
    callGroupId: call.callGroupId,
    index: leg.index,
    routeId: leg.routeId,
    endpoint: { host: leg.endpoint.host, port: leg.endpoint.port, transport: leg.endpoint.transport },
    startedAt: leg.startedAt,
    endedAt: ctx.clock.now(),
    sipCode,
    reason,
    outcome,
    ringing: leg.ringing,
    pddMs: leg.alertedAt ? leg.alertedAt.getTime() - leg.startedAt.getTime() : null,
  };
  call.attempts.push(a);
  const { policy } = ctx;
  if (policy.onAttemptEnded) notify(ctx, 'onAttemptEnded', () => policy.onAttemptEnded?.(a));
}

export function finish(ctx: B2buaContext, call: Call, hangupCause: HangupCause, sipCode: number): void {
  if (call.ended) return;
  call.ended = true;
  ctx.calls.delete(call);
  for (const h of call.timers) ctx.stack.timers.clear(h);
  for (const off of call.unregister.splice(0)) off();
  const leg = call.leg;
  if (leg && !leg.ended)
    recordAttempt(
      ctx,
      call,
      leg,
      call.answeredAt ? 200 : sipCode,
      hangupCause,
      call.answeredAt ? 'answered' : 'cancelled',
    );
  closeRelay(call);
  const endedAt = ctx.clock.now();
  const event: CallEndedEvent = {
    callGroupId: call.callGroupId,
    callId: call.callId,
    attribution: call.attribution,
    to: call.to,
    from: call.from,
    startedAt: call.startedAt,
    answeredAt: call.answeredAt,
    endedAt,
    durationMs: call.answeredAt ? endedAt.getTime() - call.answeredAt.getTime() : 0,
    sipCode: call.answeredAt ? 200 : sipCode,
    hangupCause,
    routeId: call.answeredAt && leg ? leg.routeId : null,
    attempts: call.attempts,
  };
  // The call's one line at info, its ids written here rather than through a child logger made for it.
  if (ctx.log.isLevelEnabled('info'))
    ctx.log.info(
      {
        callId: call.callId,
        callGroupId: call.callGroupId,
        to: mask(call.to),
        routeId: event.routeId,
        hangupCause,
        sipCode: event.sipCode,
        durationMs: event.durationMs,
        attempts: call.attempts.length,
      },
      'trunk call ended',
    );
  notify(ctx, 'onCallEnded', () => ctx.policy.onCallEnded(event));
  const { observer } = call;
  if (observer?.ended) notify(ctx, 'observer.ended', () => observer.ended?.(event));
}

/** Tells the caller the call failed, passing the supplier's status, Reason and Retry-After through. */
export function failToCaller(
  ctx: B2buaContext,
  call: Call,
  status: number,
  reason: string,
  res?: SipResponse,
  cause: HangupCause = 'failed',
): void {
  const headers = res ? copyHeaders(res, ['Reason', 'Retry-After', 'Warning']) : [];
  call.inTx.reply(status, reason, { toTag: call.localTag, headers });
  finish(ctx, call, cause, status);
}

/** BYE to both sides of an answered call, or to all but the side that sent its own. */
export function byeBoth(ctx: B2buaContext, call: Call, except?: 'in' | 'out'): void {
  if (call.inDialog && except !== 'in') {
    const { req, dest } = dialogRequest(call.inDialog, 'BYE');
    sendOnly(ctx, req, dest);
  }
  const d = call.leg?.dialog;
  if (d && except !== 'out') {
    const { req, dest } = dialogRequest(d, 'BYE');
    sendOnly(ctx, req, dest);
  }
}
