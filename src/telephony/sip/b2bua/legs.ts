/** Outbound legs to suppliers: the INVITE, digest answers, failover across routes, ringing, answer. */
import { answerChallenge } from '../digest.js';
import { createUacDialog, createUasDialog, dialogRequest } from '../dialog.js';
import {
  callIdOf,
  cseqOf,
  detached,
  detachedBytes,
  fromOf,
  getHeader,
  maxForwardsOf,
  tagOf,
  type HeaderField,
  type SipRequest,
  type SipResponse,
} from '../message.js';
import type { ClientTransaction } from '../transaction.js';
import type { SipPeer } from '../transport.js';
import { shouldFailover } from '../../failover.js';
import { later, notify, sendOnly } from './context.js';
import { orderEndpoints } from './endpoints.js';
import { onInDialog } from './in-dialog.js';
import { closeRelay, sdpVia } from './media.js';
import { armSession, sessionHeaders } from './session.js';
import { byeBoth, failToCaller, finish, recordAttempt } from './teardown.js';
import { ALLOW, type B2buaContext, type Call, type Leg, type TrunkCandidate, type TrunkEndpoint } from './types.js';

function buildLegInvite(
  ctx: B2buaContext,
  call: Call,
  ep: TrunkEndpoint,
  fromTag: string,
  outCallId: string,
  cseq: number,
  body: Buffer,
): SipRequest {
  const host = ep.host.includes(':') ? `[${ep.host}]` : ep.host;
  const user = ep.user ?? `${ep.techPrefix ?? ''}${call.to}`;
  const target = `sip:${user}@${host}:${ep.port}${ep.transport === 'udp' ? '' : `;transport=${ep.transport}`}`;
  const inFrom = fromOf(call.inReq);
  const display = inFrom.displayName !== undefined ? `"${inFrom.displayName.replace(/(["\\])/g, '\\$1')}" ` : '';
  const mf = maxForwardsOf(call.inReq);
  const headers: HeaderField[] = [
    { name: 'From', value: `${display}<sip:${call.from}@${ctx.stack.transport.host}>;tag=${fromTag}` },
    { name: 'To', value: `<sip:${user}@${host}:${ep.port}>` },
    { name: 'Call-ID', value: outCallId },
    { name: 'CSeq', value: `${cseq} INVITE` },
    { name: 'Max-Forwards', value: String(Math.min(mf === undefined ? 70 : mf - 1, 70)) },
    { name: 'Contact', value: `<${ctx.stack.contactUri('b2bua', ep.transport)}>` },
    { name: 'Allow', value: ALLOW },
    { ...ctx.loop.header },
  ];
  const ct = getHeader(call.inReq, 'content-type');
  if (ct !== undefined && body.length) headers.push({ name: 'Content-Type', value: ct });
  return { kind: 'request', method: 'INVITE', uri: target, version: 'SIP/2.0', headers, body };
}

export function startLeg(
  ctx: B2buaContext,
  call: Call,
  index: number,
  routeId: string,
  ep: TrunkEndpoint,
  proxied: boolean,
  auth?: { challenge: string; header: string; prev: Leg },
): void {
  const fromTag = auth ? (tagOf(fromOf(auth.prev.req)) ?? ctx.stack.newTag()) : ctx.stack.newTag();
  const outCallId = auth ? callIdOf(auth.prev.req) : ctx.stack.newCallId();
  // Each leg gets the caller's offer afresh: the relay learns the caller's address again (unchanged) and the leg sees the relay's port.
  const body = proxied && call.relay ? call.relay.pass('caller', call.inReq.body) : call.inReq.body;
  const req = buildLegInvite(ctx, call, ep, fromTag, outCallId, auth ? cseqOf(auth.prev.req).seq + 1 : 1, body);
  if (auth) {
    const value = answerChallenge({
      challenge: auth.challenge,
      method: 'INVITE',
      uri: req.uri,
      username: ep.username ?? '',
      password: ep.password ?? '',
    });
    req.headers.push({ name: auth.header, value });
  }
  const dest: SipPeer = {
    transport: ep.transport,
    host: ep.host,
    port: ep.port,
    ...(ep.servername ? { servername: ep.servername } : {}),
  };
  const leg: Leg = {
    index,
    routeId,
    endpoint: ep,
    dest,
    req,
    startedAt: auth ? auth.prev.startedAt : ctx.clock.now(),
    authTried: !!auth,
    provisional: false,
    ringing: false,
    ended: false,
    proxied: proxied && call.relay !== undefined,
    ct: undefined as unknown as ClientTransaction,
  };
  call.leg = leg;
  leg.ct = ctx.stack.sendRequest(req, dest, {
    onResponse: (res) => onLegResponse(ctx, call, leg, res),
    onTimeout: () => onLegNoResponse(ctx, call, leg),
  });
  leg.setupTimer = later(ctx, call, ctx.setupTimeoutMs, () => {
    if (!leg.provisional && !leg.ended) onLegNoResponse(ctx, call, leg);
  });
}

export function tryNext(
  ctx: B2buaContext,
  call: Call,
  last?: { status: number; reason: string; res?: SipResponse },
): void {
  if (call.ended) return;
  if (call.cancelled) return finish(ctx, call, 'caller-cancel', 487);
  while (call.nextRoute < call.candidates.length) {
    const cand = call.candidates[call.nextRoute++] as TrunkCandidate;
    // The route limit counts supplier routes; the fallback (listed last) is dialled whatever it says.
    if (!cand.fallback && call.nextRoute > ctx.maxRoutes) continue;
    const ep = orderEndpoints(cand.endpoints)[0];
    if (!ep) continue;
    // Debug: at info every call would write three lines; its end line names the route that answered.
    if (ctx.log.isLevelEnabled('debug'))
      call.log.debug({ routeId: cand.routeId, attempt: call.nextRoute, host: ep.host }, 'trunk leg started');
    startLeg(ctx, call, call.nextRoute, cand.routeId, ep, cand.mediaMode === 'proxy');
    return;
  }
  if (last) failToCaller(ctx, call, last.status, last.reason, last.res);
  else failToCaller(ctx, call, 503, 'Service Unavailable');
}

function onLegNoResponse(ctx: B2buaContext, call: Call, leg: Leg): void {
  if (leg.ended || call.leg !== leg || call.ended) return;
  // Nothing came back before any provisional: the leg is abandoned (a late 1xx gets a CANCEL).
  leg.ct.cancel();
  recordAttempt(ctx, call, leg, null, 'no response', 'timeout');
  if (!shouldFailover({ sipStatus: null, noResponse: true, ringing: leg.ringing })) {
    if (toFallback(ctx, call)) return;
    return failToCaller(ctx, call, 408, 'Request Timeout');
  }
  tryNext(ctx, call, { status: 408, reason: 'Request Timeout' });
}

function onLegResponse(ctx: B2buaContext, call: Call, leg: Leg, res: SipResponse): void {
  const current = call.leg === leg && !leg.ended && !call.ended;
  // 100 Trying only says the supplier got the INVITE; post-dial delay ends when the far end alerts or answers.
  if (current && !leg.alertedAt && ((res.status >= 180 && res.status < 190) || (res.status >= 200 && res.status < 300)))
    leg.alertedAt = ctx.clock.now();
  if (res.status >= 200 && res.status < 300) {
    // A late answer on an abandoned leg: acknowledged and hung up.
    if (!current) return ctx.stack.hangUpAnswer(res, leg.ct);
    return onLegAnswered(ctx, call, leg, res);
  }
  if (!current) return;
  if (res.status < 200) {
    if (!leg.provisional && leg.setupTimer !== undefined) ctx.stack.timers.clear(leg.setupTimer);
    leg.provisional = true;
    if (res.status === 100) return;
    // 180/183: the call now stays on this route whatever happens (spec failover rule), but for its fallback.
    if (!call.noAnswerArmed) {
      call.noAnswerArmed = true;
      later(ctx, call, ctx.noAnswerMs, () => onNoAnswer(ctx, call));
    }
    const ringTimeoutMs = call.candidates[leg.index - 1]?.ringTimeoutMs;
    if (!leg.ringing && ringTimeoutMs) later(ctx, call, ringTimeoutMs, () => onRingOut(ctx, call, leg));
    leg.ringing = true;
    call.ringing = true;
    const headers: HeaderField[] = [
      { name: 'Contact', value: `<${ctx.stack.contactUri(undefined, call.source.transport)}>` },
    ];
    const ct = getHeader(res, 'content-type');
    if (ct !== undefined && res.body.length) headers.push({ name: 'Content-Type', value: ct });
    call.inTx.reply(res.status, res.reason, {
      toTag: call.localTag,
      headers,
      body: sdpVia(call, leg, 'callee', res.body),
    });
    return;
  }
  const challenge =
    res.status === 401
      ? getHeader(res, 'www-authenticate')
      : res.status === 407
        ? getHeader(res, 'proxy-authenticate')
        : undefined;
  if (challenge !== undefined && !leg.authTried && leg.endpoint.username && leg.endpoint.password !== undefined) {
    leg.ended = true;
    if (leg.setupTimer !== undefined) ctx.stack.timers.clear(leg.setupTimer);
    startLeg(ctx, call, leg.index, leg.routeId, leg.endpoint, leg.proxied, {
      challenge,
      header: res.status === 401 ? 'Authorization' : 'Proxy-Authorization',
      prev: leg,
    });
    return;
  }
  recordAttempt(ctx, call, leg, res.status, res.reason, 'failed');
  if (shouldFailover({ sipStatus: res.status, noResponse: false, ringing: call.ringing }) && !call.cancelled) {
    return tryNext(ctx, call, { status: res.status, reason: res.reason, res });
  }
  if (call.cancelled) return finish(ctx, call, 'caller-cancel', 487);
  if (toFallback(ctx, call)) return;
  failToCaller(ctx, call, res.status, res.reason, res);
}

/**
 * Moves the call to its fallback candidate when one is left (the earlier candidates skipped): a new
 * destination, so its own refusal ends the call as any first answer would. False when none is left.
 */
function toFallback(ctx: B2buaContext, call: Call): boolean {
  const at = call.candidates.findIndex((c, i) => c.fallback === true && i >= call.nextRoute);
  if (at < 0 || call.cancelled) return false;
  call.nextRoute = at;
  call.ringing = false;
  tryNext(ctx, call);
  return true;
}

/** A candidate rang past its ring timeout: cancelled, and the call goes to its fallback (or ends unanswered). */
function onRingOut(ctx: B2buaContext, call: Call, leg: Leg): void {
  if (call.leg !== leg || leg.ended || call.ended || call.answeredAt) return;
  leg.ct.cancel();
  recordAttempt(ctx, call, leg, null, 'ring timeout', 'no-answer');
  if (toFallback(ctx, call)) return;
  if (call.cancelled) return finish(ctx, call, 'caller-cancel', 487);
  failToCaller(ctx, call, 480, 'Temporarily Unavailable', undefined, 'no-answer');
}

function onLegAnswered(ctx: B2buaContext, call: Call, leg: Leg, res: SipResponse): void {
  const contact = ctx.stack.contactUri('b2bua', leg.dest.transport);
  leg.dialog = createUacDialog(leg.req, res, leg.dest.transport, contact);
  const ack = dialogRequest(leg.dialog, 'ACK', { cseq: cseqOf(leg.req).seq });
  // Given the transaction, the stack re-ACKs this 2xx's retransmissions and hangs up other forks'
  // answers itself until Timer M, and this call's handlers are let go now.
  void ctx.stack
    .sendAck(ack.req, ack.dest, leg.ct)
    .catch((err: unknown) => call.log.warn({ err }, 'ack to supplier failed'));
  if (call.cancelled || call.ended) {
    const bye = dialogRequest(leg.dialog, 'BYE');
    sendOnly(ctx, bye.req, bye.dest);
    return;
  }
  if (leg.setupTimer !== undefined) ctx.stack.timers.clear(leg.setupTimer);
  call.answeredAt = ctx.clock.now();
  call.unregister.push(ctx.stack.registerDialog(leg.dialog, (req, tx) => onInDialog(ctx, call, 'out', req, tx)));
  const inContact = ctx.stack.contactUri(undefined, call.source.transport);
  call.inDialog = createUasDialog(call.inReq, call.localTag, call.source.transport, inContact, call.source);
  call.unregister.push(ctx.stack.registerDialog(call.inDialog, (req, tx) => onInDialog(ctx, call, 'in', req, tx)));
  const headers: HeaderField[] = [
    { name: 'Contact', value: `<${inContact}>` },
    { name: 'Allow', value: ALLOW },
  ];
  const ct = getHeader(res, 'content-type');
  if (ct !== undefined && res.body.length) headers.push({ name: 'Content-Type', value: ct });
  headers.push(...sessionHeaders(call));
  const body = sdpVia(call, leg, 'callee', res.body);
  if (body.length) call.sdpToCaller = { body: detachedBytes(body), type: ct };
  if (leg.proxied && call.relay) {
    call.relay.answered();
    call.relay.onTimeout(() => {
      if (call.ended) return;
      call.log.info('no media either way: call ended');
      byeBoth(ctx, call);
      finish(ctx, call, 'media-timeout', 200);
    });
  } else {
    // An earlier route relayed media, the one that answered does not.
    closeRelay(call);
  }
  call.inTx.onAckTimeout = () => {
    byeBoth(ctx, call);
    finish(ctx, call, 'ack-timeout', 200);
  };
  call.inTx.reply(200, 'OK', { toTag: call.localTag, headers, body });
  call.inReq = answeredInvite(call.inReq);
  leg.req = answeredInvite(leg.req);
  armSession(ctx, call);
  if (ctx.log.isLevelEnabled('debug'))
    call.log.debug({ routeId: leg.routeId, attempt: leg.index }, 'trunk call answered');
  const answeredAt = call.answeredAt;
  const { observer } = call;
  if (observer?.answered) notify(ctx, 'observer.answered', () => observer.answered?.(answeredAt));
  if (ctx.policy.onAnswered)
    notify(ctx, 'onAnswered', () =>
      ctx.policy.onAnswered?.({
        callGroupId: call.callGroupId,
        callId: call.callId,
        routeId: leg.routeId,
        answeredAt,
        attempt: leg.index,
      }),
    );
  if (call.maxDurationSeconds > 0) {
    later(ctx, call, call.maxDurationSeconds * 1000, () => {
      if (call.ended) return;
      byeBoth(ctx, call);
      finish(ctx, call, 'max-duration', 200);
    });
  }
}

const NO_BODY = Buffer.alloc(0);

/**
 * What an answered call keeps of an INVITE for the rest of its life: only the caller's Allow is read
 * from then on (session refresh: UPDATE or re-INVITE), and the dialogs hold what else is needed. The
 * whole request, its header text and SDP, was otherwise kept as long as the call lasted (the
 * transactions let go of theirs at the ACK). The value is copied (`detached`).
 */
function answeredInvite(req: SipRequest): SipRequest {
  const allow = getHeader(req, 'allow');
  return {
    kind: 'request',
    method: req.method,
    uri: '',
    version: req.version,
    headers: allow === undefined ? [] : [{ name: 'Allow', value: detached(allow), key: 'allow' }],
    body: NO_BODY,
  };
}

function onNoAnswer(ctx: B2buaContext, call: Call): void {
  if (call.ended || call.answeredAt) return;
  const leg = call.leg;
  if (leg) {
    leg.ct.cancel();
    recordAttempt(ctx, call, leg, null, 'no answer', 'no-answer');
  }
  if (toFallback(ctx, call)) return;
  failToCaller(ctx, call, 480, 'Temporarily Unavailable', undefined, 'no-answer');
}

export function onCallerCancel(ctx: B2buaContext, call: Call): void {
  call.cancelled = true;
  if (call.ended) return;
  const leg = call.leg;
  if (!leg) return; // still authenticating or planning: tryNext sees the flag
  if (call.answeredAt) return;
  leg.ct.cancel();
  recordAttempt(ctx, call, leg, 487, 'caller cancelled', 'cancelled');
  finish(ctx, call, 'caller-cancel', 487);
}
