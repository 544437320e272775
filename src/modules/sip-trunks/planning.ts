import { isIP } from 'node:net';
import type { Config } from '../../config/schema.js';
import { AppError } from '../../http/errors.js';
import { newId } from '../../platform/ids.js';
import { Decimal } from 'decimal.js';
import { requireIncrement, type BillingIncrement } from '../../rating/index.js';
import type { CallPlan, PlanCallInput, TrunkEndpoint, TrunkPolicy } from '../../telephony/sip/b2bua/index.js';
import type { SipTransportName } from '../../telephony/sip/index.js';
import type { Candidate } from '../marketplace/index.js';
import type { Routing } from '../marketplace/routing/routing.js';
import type { RouteTerms, SellPrice } from '../cdrs/index.js';
import type { SellRateLookup } from '../switch/customers/deck-cache.js';
import type { Admission, PayerTerms } from './admission.js';
import type { Attribution } from './attribution.js';
import type { Finishing } from './finishing.js';
import { pricedKey, type LiveCall } from './live-calls.js';
import {
  INBOUND_INCREMENT,
  type LocalAnswerEndpoint,
  type NumberAnswerKind,
  type NumberCallHandling,
  type NumberCallTarget,
  type NumberCalls,
} from './number-calls.js';
import type { ConnectionGate, OrphanPricing } from './repo.js';

/** The Switch DNC's check of a customer's destination (src/modules/switch/dnc/gate.ts). */
export type DncRefuses = (q: {
  operatorId: string;
  customerId: string;
  number: string;
  channel: 'voice' | 'sms';
}) => Promise<boolean>;

/** A call's input with the connection point it came through (limits taken with the payer's). */
type RoutedInput = PlanCallInput & { point?: ConnectionGate };

/** A route endpoint's stored transport as the SIP stack names it (anything unknown goes out over UDP). */
export const sipTransportOf = (t: string): SipTransportName => (t === 'tcp' || t === 'tls' ? t : 'udp');

const neverDown = () => false;

/** A candidate as the hold and the plan take it: its price and the endpoints the B2BUA dials. */
interface PlanCandidate {
  routeId: string;
  price: Decimal;
  sellerRate: Decimal;
  increment: BillingIncrement;
  endpoints: TrunkEndpoint[];
  interconnectionId?: string;
  /** A rented number's target: cancelled after ringing this long, the call moving to its fallback. */
  ringTimeoutMs?: number;
  /** The exchange's own voicemail after the number's targets (or forward routes) fail or ring out. */
  fallback?: boolean;
  /** This exchange answers this candidate itself (voicemail, an AI voice agent). */
  local?: NumberAnswerKind;
  /** The AI agent's fee per minute inside `price`: it stops at the agent's transfer. */
  agentFee?: Decimal;
  /** A forward's backup: the number this candidate dials instead of the call's (priced at its destination). */
  to?: string;
}

/** The rented number a call arrived for; `direct`: delivered to the number's own target (an inbound leg). */
interface InboundOf {
  didId: string;
  number: string;
  direct?: boolean;
  /** How the call is delivered, as `number.call.received` says. */
  handledBy?: NumberCallHandling;
  /** A forwarded call's inbound minutes (the number's rate, to its seller), billed beside the route that answers. */
  leg?: Omit<PlanCandidate, 'endpoints'> & { sellerId: string };
  /** A forwarded call: each route rings at most this long when a backup or voicemail follows. */
  ringTimeoutMs?: number;
  /** A forwarded call's backup number (`pointsToBackup`): dialled over the payer's routes once the forward number's fail. */
  backupTo?: string;
  /** A forwarded call's voicemail after its routes (priced as the number's inbound leg alone). */
  fallback?: PlanCandidate;
  /** The number's own terms (its seller), for a fallback candidate on a forwarded call. */
  terms?: RouteTerms;
  /** The call group the number's answering endpoint was named with: the call must carry the same id. */
  callGroupId?: string;
}

/** Where a forward placed for another module goes (a revenue share number's `forward`). */
export type ForwardTarget =
  | { kind: 'number'; digits: string }
  | { kind: 'sip'; user: string | null; host: string; port: number; transport: SipTransportName };

/** A forward's caller and payer: the call it bridges, who pays its B leg, the call's longest length. */
export interface ForwardPlanInput {
  payer: string;
  target: ForwardTarget;
  /** The caller's number (From) and the one that rates the call by origin. */
  from: string;
  origin: string;
  callId: string;
  sourceIp: string;
  /** The number that was dialled: the request-URI user of a SIP target that names none. */
  dialled: string;
  /** The id a SIP target's leg is recorded under (the forwarding number's). */
  routeId: string;
  maxSeconds: number;
}

const FREE = new Decimal(0);

/** The number as the "route" of its own legs: its seller, no capacity or rate limits of a route. */
const numberTerms = (n: NumberCallTarget): RouteTerms => ({
  id: n.didId,
  sellerId: n.sellerId,
  capacity: null,
  maxCps: null,
  mediaMode: 'direct',
});

/** A number's candidate leg before its endpoints: the inbound price, billed per started minute. */
const numberLeg = (n: NumberCallTarget) => ({
  routeId: n.didId,
  price: n.price,
  sellerRate: n.sellerRate,
  increment: requireIncrement(INBOUND_INCREMENT),
});

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
  /** Calls a number's seller brings in for its rented numbers; absent, every call is routed outbound. */
  numberCalls?: NumberCalls | undefined;
  /** The outbound guard's check of a target a customer aims (a number's `sip` target): the address to send to. */
  resolveTarget: (host: string, port: number) => Promise<string>;
  /** This daemon's answering endpoint for numbers it answers itself; absent, such numbers route as `pointMode` says. */
  localAnswer?: LocalAnswerEndpoint | undefined;
  /** Switch customers' sell-rate decks; absent, sub-accounts pay base plus markup. */
  sellRates?: SellRateLookup | undefined;
  /** The Switch DNC: true when a customer's call to `number` is refused because its operator lists it. */
  dncRefuses?: DncRefuses | undefined;
}): TrunkPolicy & { planForward(input: ForwardPlanInput): Promise<CallPlan> } {
  const { admission } = deps;
  const isDown = deps.endpointDown ?? neverDown;

  async function planCall(call: PlanCallInput): Promise<CallPlan> {
    // The address or credentials the call came through: refused while disabled, else its limits apply.
    const point = await deps.attribution.pointOf(call);
    if (point?.disabled) return admission.refuse('connection-disabled', 403, 'Connection disabled');
    const input: RoutedInput = point ? { ...call, point } : call;
    // A number's seller bringing a call in for a number it rented out: delivered where the renter points it.
    if (deps.numberCalls && !input.subAccountId && !input.purchaseId) {
      const target = await deps.numberCalls(input.accountId, input.to);
      if (target) return planNumberCall(input, target);
    }
    return planOutbound(input);
  }

  /** The payer's routes to `to` with their endpoints up, priced, in failover order; or why there are none. */
  async function routedTo(
    input: RoutedInput,
    routingAccount: string,
    to: string,
  ): Promise<{ candidates: PlanCandidate[] } | { refusal: [string, number, string] }> {
    let candidates: Candidate[];
    try {
      candidates = await deps.routing.candidatesFor({
        accountId: routingAccount,
        number: to,
        type: 'voice',
        from: input.origin ?? input.from,
      });
    } catch (err) {
      // Routing refuses a malformed number with a rule error; anything else is ours (500 to the caller).
      if (err instanceof AppError) return { refusal: ['number', 484, 'Address incomplete: E.164 digits expected'] };
      throw err;
    }
    if (input.purchaseId) {
      // A purchase's own credentials put its route first; the others stay as failover.
      candidates.sort((a, b) => Number(b.purchaseId === input.purchaseId) - Number(a.purchaseId === input.purchaseId));
    }
    const covering = candidates.filter((c) => c.endpoints.length > 0);
    if (covering.length === 0) return { refusal: ['no-route', 404, 'No purchased route covers this number'] };
    candidates = covering
      .map((c) => ({ ...c, endpoints: c.endpoints.filter((e) => !isDown(e)) }))
      .filter((c) => c.endpoints.length > 0);
    if (candidates.length === 0)
      return { refusal: ['endpoints-down', 503, 'Every supplier endpoint for this number is down'] };
    return {
      candidates: candidates.map((c) => ({
        routeId: c.routeId,
        price: c.price,
        sellerRate: c.sellerRate,
        increment: c.increment,
        ...(c.interconnectionId === undefined ? {} : { interconnectionId: c.interconnectionId }),
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

  /** Candidate routes over the payer's purchases (or its operator's), in failover order. */
  async function planOutbound(input: RoutedInput, inbound?: InboundOf): Promise<CallPlan> {
    const payer = input.subAccountId ?? input.accountId;
    const account = await admission.payerFor(payer);
    if ('reject' in account) return account;
    const operatorId = account.parentId;
    const routingAccount = operatorId ?? payer;
    // A Switch customer's call to a number its Switch lists: declined before routing (docs/switch.md "DNC").
    if (input.subAccountId && operatorId && deps.dncRefuses) {
      const q = { operatorId, customerId: input.subAccountId, number: input.to, channel: 'voice' as const };
      if (await deps.dncRefuses(q))
        return admission.refuse('dnc', 603, 'Decline: the number is on the do-not-call list');
    }
    let primary = await routedTo(input, routingAccount, input.to);
    // A Switch customer's sell rate replaces the markup; no route is taken at a loss on it.
    const sell =
      deps.sellRates && account.parentId && !inbound && !('refusal' in primary)
        ? await deps.sellRates.match(payer, 'voice', input.to)
        : null;
    if (sell && !('refusal' in primary)) {
      const affordable = primary.candidates.filter((c) => c.price.lte(sell.rate));
      if (affordable.length === 0)
        return admission.refuse('sell-rate', 503, "No route costs less than the customer's sell rate");
      primary = { candidates: affordable };
    }
    // The backup's own routes (its own prices), after every route to the forward number.
    const backupTo = inbound?.backupTo;
    const second = backupTo ? await routedTo(input, routingAccount, backupTo) : null;
    const backups =
      second && backupTo && !('refusal' in second)
        ? second.candidates.map((c) => ({
            ...c,
            to: backupTo,
            endpoints: c.endpoints.map((e) => ({ ...e, user: `${e.techPrefix ?? ''}${backupTo}` })),
          }))
        : [];
    if ('refusal' in primary && backups.length === 0) return admission.refuse(...primary.refusal);
    const firsts = 'refusal' in primary ? [] : primary.candidates;
    const all = [...firsts, ...backups];
    const terms = new Map((await admission.routeTerms([...new Set(all.map((c) => c.routeId))])).map((t) => [t.id, t]));
    if (inbound?.terms) terms.set(inbound.terms.id, inbound.terms);
    // A route rings at most the number's ring timeout when something follows it: the backup, or voicemail.
    const ring = (c: PlanCandidate, followed: boolean): PlanCandidate =>
      inbound?.ringTimeoutMs && followed ? { ...c, ringTimeoutMs: inbound.ringTimeoutMs } : c;
    const routed: PlanCandidate[] = [
      ...firsts.map((c) => ring(c, backups.length > 0 || inbound?.fallback !== undefined)),
      ...backups.map((c) => ring(c, inbound?.fallback !== undefined)),
    ];
    if (inbound?.fallback) routed.push(inbound.fallback);
    return holdAndPlan(
      input,
      { account, payer, routingAccount, ...(sell ? { sell } : {}) },
      routed,
      terms,
      inbound,
      inbound?.callGroupId,
    );
  }

  /**
   * A call to a rented number: `sip` delivers to the number's target, then its backup, billed to the
   * renter at the inbound rate (the seller earns it less the platform fee); `forward` is an outbound
   * call of the renter to the forward number, over its routes with failover, billed as one. A number
   * the exchange answers itself (an AI voice agent, voicemail) gets this daemon's answering endpoint
   * as its only candidate, or (voicemail `fallback`) as the last one after the number's targets.
   */
  async function planNumberCall(input: RoutedInput, n: NumberCallTarget): Promise<CallPlan> {
    const inbound: InboundOf = { didId: n.didId, number: input.to };
    if (n.status !== 'active') return admission.refuse('number-suspended', 480, 'Number suspended');
    const callGroupId = newId();
    const answering = n.answer ? deps.localAnswer?.(n.answer.kind, callGroupId, n.didId) : null;
    const answers = n.answer && answering ? n.answer : null;
    const ringTimeoutMs = n.ringTimeoutSeconds * 1000;
    if (answers?.when !== 'always' && n.pointMode === 'forward' && n.forwardTo) {
      // The renter pays the number's inbound minutes too (the seller earns them as on `sip`), in the forward's hold.
      const leg = n.price.gt(0) ? { ...numberLeg(n), sellerId: n.sellerId } : undefined;
      // Voicemail after the forward: the number's own leg at its inbound rate, nothing billed alongside.
      const fallback =
        answers && answering
          ? {
              fallback: { ...numberLeg(n), endpoints: [answering], fallback: true, local: answers.kind },
              ringTimeoutMs,
              terms: numberTerms(n),
              // The voicemail's call id (its row, its event) is the forwarded call's own.
              callGroupId,
            }
          : {};
      // The backup number when every route to the forward number fails, refuses or rings out.
      const backup = n.forwardBackup ? { backupTo: n.forwardBackup, ringTimeoutMs } : {};
      const plan = await planOutbound(
        { ...input, accountId: n.ownerId, to: n.forwardTo },
        { ...inbound, ...(leg ? { leg } : {}), ...backup, ...fallback },
      );
      return 'reject' in plan ? plan : { ...plan, to: n.forwardTo };
    }
    const targets: TrunkEndpoint[] = [];
    if (answers?.when !== 'always' && n.pointMode === 'sip') {
      for (const t of n.sipTargets) {
        // Targets the renter aims: resolved through the outbound guard at each call (DNS may have moved).
        const address = await deps.resolveTarget(t.host, t.port).catch(() => null);
        if (address === null) continue;
        // Over TLS the certificate is checked against the name the renter gave.
        const servername = t.transport === 'tls' && isIP(t.host) === 0 ? { servername: t.host } : {};
        targets.push({ host: address, port: t.port, transport: t.transport, ...servername, priority: 1, weight: 1 });
      }
    }
    const fee = answers?.feePerMinute;
    // A target that rings out is cancelled so voicemail (when on) takes the call.
    const candidates: PlanCandidate[] = targets.map((e) => ({ ...numberLeg(n), endpoints: [e], ringTimeoutMs }));
    if (answers && answering) {
      // The agent fee is the platform's: it rides on the inbound price, the seller's rate unchanged.
      candidates.push({
        ...numberLeg(n),
        price: fee ? n.price.plus(fee) : n.price,
        ...(fee?.gt(0) ? { agentFee: fee } : {}),
        endpoints: [answering],
        local: answers.kind,
        ...(answers.when === 'fallback' ? { fallback: true } : {}),
      });
    }
    if (candidates.length === 0) {
      if (n.pointMode !== 'sip' || n.sipTargets.length === 0)
        return admission.refuse('number-unrouted', 480, 'Number not routed');
      return admission.refuse('number-target', 503, 'Number target refused or not found');
    }
    const account = await admission.payerFor(n.ownerId);
    if ('reject' in account) return account;
    // A Switch customer's inbound sell rate for the called number replaces base plus markup; the
    // operator earns sell − cost through the markup posting. The call is never refused for it: the
    // number is the customer's, and `chargeLeg` bills at least the cost, so a rate below the
    // number's price leaves a margin of 0, not a loss (docs/switch.md "Inbound sell rates").
    const sell = deps.sellRates && account.parentId ? await deps.sellRates.match(n.ownerId, 'inbound', input.to) : null;
    // The number is the "route" of both legs: one candidate per target, the backup as failover.
    const terms = new Map<string, RouteTerms>([[n.didId, numberTerms(n)]]);
    return holdAndPlan(
      input,
      { account, payer: n.ownerId, routingAccount: n.ownerId, ...(sell ? { sell } : {}) },
      candidates,
      terms,
      { ...inbound, direct: true, handledBy: 'sip' },
      callGroupId,
    );
  }

  /**
   * A forward placed for another module: the payer's own outbound call. A number goes over the
   * payer's routes with failover, priced, held and billed as any of its outbound calls; a SIP address
   * (resolved through the outbound guard at each call) is one candidate that costs nothing, its call
   * row and CDR the payer's. The call is no longer than `maxSeconds`.
   */
  async function planForward(f: ForwardPlanInput): Promise<CallPlan> {
    const base = { accountId: f.payer, from: f.from, origin: f.origin, callId: f.callId, sourceIp: f.sourceIp };
    const cap = (plan: CallPlan, to: string): CallPlan =>
      'reject' in plan ? plan : { ...plan, to, maxDurationSeconds: Math.min(plan.maxDurationSeconds, f.maxSeconds) };
    const t = f.target;
    if (t.kind === 'number') return cap(await planOutbound({ ...base, to: t.digits }), t.digits);
    const address = await deps.resolveTarget(t.host, t.port).catch(() => null);
    if (address === null) return admission.refuse('forward-target', 503, 'Forward target refused or not found');
    const account = await admission.payerFor(f.payer);
    if ('reject' in account) return account;
    const servername = t.transport === 'tls' && isIP(t.host) === 0 ? { servername: t.host } : {};
    const user = t.user ?? f.dialled;
    const terms = new Map<string, RouteTerms>([
      [f.routeId, { id: f.routeId, sellerId: '', capacity: null, maxCps: null, mediaMode: 'direct' }],
    ]);
    const candidate: PlanCandidate = {
      routeId: f.routeId,
      price: FREE,
      sellerRate: FREE,
      increment: requireIncrement('1/1'),
      endpoints: [{ host: address, port: t.port, transport: t.transport, ...servername, user, priority: 1, weight: 1 }],
    };
    const plan = await holdAndPlan(
      { ...base, to: user },
      { account, payer: f.payer, routingAccount: f.payer },
      [candidate],
      terms,
      undefined,
    );
    return cap(plan, user);
  }

  /** The limits, the priced candidates and the hold, then the plan the B2BUA runs. */
  async function holdAndPlan(
    input: RoutedInput,
    who: { account: PayerTerms; payer: string; routingAccount: string; sell?: SellPrice },
    candidates: PlanCandidate[],
    terms: ReadonlyMap<string, RouteTerms>,
    inbound: InboundOf | undefined,
    callGroupId = newId(),
  ): Promise<CallPlan> {
    const { account, payer, routingAccount } = who;
    const operatorId = account.parentId;
    // A route carrying both a forward number and its backup takes its limits once.
    const perRoute = candidates.filter((c, i) => candidates.findIndex((o) => o.routeId === c.routeId) === i);
    const limited = await admission.takeLimits(account, payer, routingAccount, perRoute, terms, input.point);
    if ('reject' in limited) return limited;
    const { slots } = limited;
    const open = new Set(limited.usable.map((c) => c.routeId));
    const usable = candidates.filter((c) => open.has(c.routeId));
    // The first usable backup candidate is the B2BUA's fallback: dialled once the forward number's
    // routes failed, refused (busy included) or rang out; those after it are its own failover.
    const firstBackup = usable.findIndex((c) => c.to !== undefined);
    if (firstBackup >= 0) usable[firstBackup] = { ...usable[firstBackup]!, fallback: true };
    const keyOf = (c: PlanCandidate) => pricedKey(c.routeId, c.to);
    // The answering candidate: the attempt (1-based, as the B2BUA numbers legs) that reached it names how the call was handled.
    const localAt = usable.findIndex((c) => c.local !== undefined);
    const localKind = usable[localAt]?.local;
    const local = localKind ? { kind: localKind, attempt: localAt + 1 } : undefined;

    const markupPct = account.markupPct;
    const inboundLeg = inbound?.leg && {
      ...inbound.leg,
      markupPct: account.routeMarkups.get(inbound.leg.routeId),
      mediaMode: 'direct' as const,
      number: inbound.number,
    };
    const priced = new Map(
      usable.map((c) => {
        const term = terms.get(c.routeId);
        return [
          keyOf(c),
          {
            price: c.price,
            sellerRate: c.sellerRate,
            increment: c.increment,
            markupPct: account.routeMarkups.get(c.routeId),
            sellerId: term?.sellerId ?? '',
            mediaMode: term?.mediaMode ?? 'direct',
            ...(c.interconnectionId === undefined ? {} : { interconnectionId: c.interconnectionId }),
            ...(c.agentFee ? { agentFee: c.agentFee } : {}),
            ...(who.sell ? { sell: who.sell } : {}),
            ...(c.to === undefined ? {} : { to: c.to }),
            // The number's own leg (voicemail after a forward) is the inbound minutes: nothing rides on it.
            ...(inboundLeg && c.routeId !== inboundLeg.routeId ? { alongside: inboundLeg } : {}),
          },
        ] as const;
      }),
    );
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
            ...(p.interconnectionId === undefined ? {} : { interconnectionId: p.interconnectionId }),
            ...(p.agentFee ? { agentFee: p.agentFee.toFixed(6) } : {}),
            ...(p.to === undefined ? {} : { to: p.to }),
          },
        ]),
      ),
      ...(inbound?.direct ? { direction: 'inbound' as const } : {}),
      ...(inbound ? { didId: inbound.didId } : {}),
      ...(who.sell ? { sell: { rate: who.sell.rate.toFixed(6), increment: who.sell.increment.text } } : {}),
      ...(inboundLeg
        ? {
            inbound: {
              didId: inboundLeg.routeId,
              number: inboundLeg.number,
              price: inboundLeg.price.toFixed(6),
              sellerRate: inboundLeg.sellerRate.toFixed(6),
              increment: inboundLeg.increment.text,
              sellerId: inboundLeg.sellerId,
              ...(inboundLeg.markupPct ? { markupPct: inboundLeg.markupPct.toFixed(3) } : {}),
            },
          }
        : {}),
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
      priced: new Map(priced),
      ...(firstBackup >= 0 ? { keys: usable.map(keyOf) } : {}),
      holdUntil: Number.MAX_SAFE_INTEGER,
      ...(inbound?.direct ? { direction: 'inbound' as const } : {}),
      ...(inboundLeg ? { inboundLeg } : {}),
      ...(inbound
        ? {
            number: {
              didId: inbound.didId,
              number: inbound.number,
              handledBy: inbound.handledBy ?? 'forward',
              ...(local ? { local } : {}),
            },
          }
        : {}),
    };
    const refused = await admission.hold(liveCall, input, [...priced.values()], pricing);
    if (refused) return refused;
    return {
      callGroupId,
      maxDurationSeconds: liveCall.maxDurationSeconds,
      candidates: usable.map((c) => ({
        routeId: c.routeId,
        mediaMode: terms.get(c.routeId)?.mediaMode ?? 'direct',
        endpoints: c.endpoints,
        ...(c.ringTimeoutMs ? { ringTimeoutMs: c.ringTimeoutMs } : {}),
        ...(c.fallback ? { fallback: true } : {}),
      })),
    };
  }

  return {
    resolveByIp: deps.attribution.resolveByIp,
    lookupSipUser: deps.attribution.lookupSipUser,
    planCall,
    planForward,
    onAnswered: deps.finishing.onAnswered,
    onCallEnded: deps.finishing.onCallEnded,
  };
}
