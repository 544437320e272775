import { isIP } from 'node:net';
import type { Config } from '../../config/schema.js';
import { AppError } from '../../http/errors.js';
import { newId } from '../../platform/ids.js';
import type { CallPlan, PlanCallInput, TrunkPolicy } from '../../telephony/sip/b2bua/index.js';
import type { SipTransportName } from '../../telephony/sip/index.js';
import type { Candidate } from '../marketplace/index.js';
import type { Routing } from '../marketplace/routing/routing.js';
import type { Admission } from './admission.js';
import type { Attribution } from './attribution.js';
import type { Finishing } from './finishing.js';
import type { LiveCall } from './live-calls.js';
import type { OrphanPricing } from './repo.js';

/** A route endpoint's stored transport as the SIP stack names it (anything unknown goes out over UDP). */
export const sipTransportOf = (t: string): SipTransportName => (t === 'tcp' || t === 'tls' ? t : 'udp');

const neverDown = () => false;

/**
 * The `TrunkPolicy` the B2BUA calls: attribution, then the plan of a call (its admission, the
 * candidate routes in failover order with their endpoints, the hold), its answer and its end.
 */
export function createPlanning(deps: {
  config: Readonly<Config>;
  routing: Routing;
  /** Endpoints the OPTIONS health checks have marked down (skipped when routing). */
  endpointDown?: ((e: { host: string; port: number; transport: string }) => boolean) | undefined;
  attribution: Attribution;
  admission: Admission;
  finishing: Pick<Finishing, 'onAnswered' | 'onCallEnded'>;
}): TrunkPolicy {
  const { admission } = deps;
  const isDown = deps.endpointDown ?? neverDown;

  async function planCall(input: PlanCallInput): Promise<CallPlan> {
    const payer = input.subAccountId ?? input.accountId;
    const account = await admission.payerFor(payer);
    if ('reject' in account) return account;
    const operatorId = account.parentId;
    const routingAccount = operatorId ?? payer;
    let candidates: Candidate[];
    try {
      candidates = await deps.routing.candidatesFor({ accountId: routingAccount, number: input.to, type: 'voice' });
    } catch (err) {
      // Routing refuses a malformed number with a rule error; anything else is ours (500 to the caller).
      if (err instanceof AppError) return admission.refuse('number', 484, 'Address incomplete: E.164 digits expected');
      throw err;
    }
    if (input.purchaseId) {
      // A purchase's own credentials put its route first; the others stay as failover.
      candidates.sort((a, b) => Number(b.purchaseId === input.purchaseId) - Number(a.purchaseId === input.purchaseId));
    }
    const covering = candidates.filter((c) => c.endpoints.length > 0);
    if (covering.length === 0) return admission.refuse('no-route', 404, 'No purchased route covers this number');
    candidates = covering
      .map((c) => ({ ...c, endpoints: c.endpoints.filter((e) => !isDown(e)) }))
      .filter((c) => c.endpoints.length > 0);
    if (candidates.length === 0)
      return admission.refuse('endpoints-down', 503, 'Every supplier endpoint for this number is down');

    const terms = new Map((await admission.routeTerms(candidates.map((c) => c.routeId))).map((t) => [t.id, t]));
    const limited = await admission.takeLimits(account, payer, routingAccount, candidates, terms);
    if ('reject' in limited) return limited;
    const { usable, slots } = limited;

    const markupPct = account.markupPct;
    const priced = new Map(
      usable.map((c) => {
        const term = terms.get(c.routeId);
        return [
          c.routeId,
          {
            price: c.price,
            sellerRate: c.sellerRate,
            increment: c.increment,
            markupPct: account.routeMarkups.get(c.routeId),
            sellerId: term?.sellerId ?? '',
            mediaMode: term?.mediaMode ?? 'direct',
          },
        ] as const;
      }),
    );
    const callGroupId = newId();
    const pricing: OrphanPricing = {
      markupPct: markupPct.toFixed(3),
      routes: Object.fromEntries(
        [...priced].map(([id, p]) => [
          id,
          {
            price: p.price.toFixed(6),
            sellerRate: p.sellerRate.toFixed(6),
            increment: p.increment.text,
            sellerId: p.sellerId,
            mediaMode: p.mediaMode,
            ...(p.markupPct ? { markupPct: p.markupPct.toFixed(3) } : {}),
          },
        ]),
      ),
    };
    // No hold to extend until it exists.
    const liveCall: LiveCall = {
      id: callGroupId,
      payer,
      operatorId,
      holdId: '',
      maxDurationSeconds: 0,
      slots,
      markupPct,
      priced,
      holdUntil: Number.MAX_SAFE_INTEGER,
    };
    const refused = await admission.hold(liveCall, input, [...priced.values()], pricing);
    if (refused) return refused;
    return {
      callGroupId,
      maxDurationSeconds: liveCall.maxDurationSeconds,
      candidates: usable.map((c) => ({
        routeId: c.routeId,
        mediaMode: terms.get(c.routeId)?.mediaMode ?? 'direct',
        endpoints: c.endpoints.map((e) => ({
          host: e.address ?? e.host,
          port: e.port,
          transport: sipTransportOf(e.transport),
          ...(e.transport === 'tls' && isIP(e.host.replace(/^\[|\]$/g, '')) === 0 ? { servername: e.host } : {}),
          techPrefix: e.techPrefix,
          ...(e.username ? { username: e.username } : {}),
          ...(e.password ? { password: e.password } : {}),
          priority: e.priority,
          weight: e.weight,
        })),
      })),
    };
  }

  return {
    resolveByIp: deps.attribution.resolveByIp,
    lookupSipUser: deps.attribution.lookupSipUser,
    planCall,
    onAnswered: deps.finishing.onAnswered,
    onCallEnded: deps.finishing.onCallEnded,
  };
}
