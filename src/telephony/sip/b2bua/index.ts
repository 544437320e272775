/**
 * Trunk B2BUA: reseller calls in (digest or whitelisted IP), supplier legs out with failover
 * (spec "Voice and SMS" failover rule, "Authentication" SIP trunk paragraph). Business decisions are
 * injected (`TrunkPolicy`). One file per concern, each taking the call state explicitly: `invite`
 * (a new call), `auth`, `legs` (suppliers and failover), `in-dialog`, `session` (RFC 4028),
 * `teardown`, `media`.
 */
import crypto, { createHmac, randomBytes } from 'node:crypto';
import { createDigestServer } from '../digest.js';
import { createLoopMarker } from '../loop-marker.js';
import { callIdOf, fromOf, tagOf, toOf, type SipRequest } from '../message.js';
import { probeEndpoint } from '../probe.js';
import { FAILOVER_MAX_ROUTES } from '../../failover.js';
import { bridgeInvite, onInvite } from './invite.js';
import { byeBoth, finish } from './teardown.js';
import { ALLOW, type B2buaContext, type Call, type TrunkB2bua, type TrunkB2buaOptions } from './types.js';

export { orderEndpoints } from './endpoints.js';
export type {
  AttemptRecord,
  BridgeInput,
  BridgeOutcome,
  CallObserver,
  CallAttribution,
  CallEndedEvent,
  CallPlan,
  HangupCause,
  PlanCallInput,
  TrunkB2bua,
  TrunkB2buaOptions,
  TrunkCandidate,
  TrunkEndpoint,
  TrunkPolicy,
} from './types.js';

export function createTrunkB2bua(opts: TrunkB2buaOptions): TrunkB2bua {
  const { stack, log, clock } = opts;
  /**
   * Our To tag for every response to a caller's INVITEs of one Call-ID and From tag: the 401
   * challenge, the refusals and the dialog's own. A 401 retransmitted (its ACK read late under
   * load) can reach the caller after our 200, and a UA that takes the tag of the last response it
   * saw (sipp does) would hang up a call we know under another tag: its BYE would get 481 and the
   * call would stay up and billed. Keyed by a per-process secret, so still unguessable (RFC 3261 §19.3).
   */
  const tagSecret = randomBytes(16);
  // Two INVITEs a call (the challenged one and the answered one): a one-shot SHA-256 over the secret
  // and the text where Node has it, a quarter of an HMAC's CPU. Only the first 64 bits are ever
  // shown, so the hash's state (what a length extension needs) never is.
  const secretHex = tagSecret.toString('hex');
  const keyedTag: (text: string) => string =
    typeof crypto.hash === 'function'
      ? (text) => crypto.hash('sha256', `${secretHex}\0${text}`, 'hex').slice(0, 16)
      : (text) => createHmac('sha256', tagSecret).update(text).digest('hex').slice(0, 16);
  const ctx: B2buaContext = {
    stack,
    log,
    clock,
    policy: opts.policy,
    digest: createDigestServer({
      realm: opts.realm,
      secret: opts.nonceSecret,
      ...opts.digest,
      now: () => clock.now().getTime(),
    }),
    loop: opts.loopMarker ?? createLoopMarker(opts.nonceSecret),
    setupTimeoutMs: opts.setupTimeoutMs ?? 4000,
    noAnswerMs: opts.noAnswerMs ?? 90_000,
    maxRoutes: opts.maxRoutes ?? FAILOVER_MAX_ROUTES,
    sessionPolicy: opts.sessionTimer ?? { minSeSeconds: 90, defaultSeconds: 1800 },
    media: opts.media,
    calls: new Set<Call>(),
    dialogTagOf: (req: SipRequest): string => keyedTag(`${callIdOf(req)}\0${tagOf(fromOf(req)) ?? ''}`),
  };

  // Requests of answered calls reach their call through the stack's dialog registry; what comes
  // here is outside any dialog of ours.
  stack.onRequest((req, tx, source, next) => {
    if (tagOf(toOf(req)) !== undefined) return next();
    switch (req.method) {
      case 'INVITE':
        onInvite(ctx, req, tx, source).catch((err: unknown) => {
          log.error({ err }, 'trunk invite failed');
          tx.reply(500, 'Server Internal Error', { toTag: stack.newTag() });
        });
        return;
      case 'OPTIONS':
        tx.reply(200, 'OK', {
          toTag: stack.newTag(),
          headers: [
            { name: 'Allow', value: ALLOW },
            { name: 'Accept', value: 'application/sdp' },
          ],
        });
        return;
      case 'BYE':
        tx.reply(481, 'Call/Transaction Does Not Exist');
        return;
      default:
        tx.reply(405, 'Method Not Allowed', { toTag: stack.newTag(), headers: [{ name: 'Allow', value: ALLOW }] });
    }
  });

  return {
    probeEndpoint: (target, o) => probeEndpoint(stack, target, o),
    bridge: (req, tx, source, input) => bridgeInvite(ctx, req, tx, source, input),
    activeCalls: () => ctx.calls.size,
    hangupAll() {
      for (const call of [...ctx.calls]) {
        if (call.answeredAt) byeBoth(ctx, call);
        else {
          call.leg?.ct.cancel();
          call.inTx.reply(503, 'Service Unavailable', { toTag: call.localTag });
        }
        finish(ctx, call, 'shutdown', call.answeredAt ? 200 : 503);
      }
    },
  };
}
