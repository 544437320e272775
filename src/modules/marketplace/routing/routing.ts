import { isIP } from 'node:net';
import { Decimal } from 'decimal.js';
import type { Config } from '../../../config/schema.js';
import { notFound, ruleError, validationError } from '../../../http/errors.js';
import { buyerRate, callerOrigin, NO_ORIGIN, priceSms, toMoney } from '../../../rating/index.js';
import type { BillingIncrement, CallerOrigin, PlatformFee, RateMatch } from '../../../rating/index.js';
import type { Blend, BlendCache } from '../blends/blend-cache.js';
import { orderMembers } from '../blends/rules.js';
import type { PrivateRateCache } from '../offers/private-rates.js';
import type { Clock } from '../../../platform/clock.js';
import type { DeckMeta } from '../listings/repo.js';
import type { TargetGuard } from '../../../platform/outbound-guard.js';
import type { PurchasesService } from '../purchases/service.js';
import type { UsableRoute } from '../purchases/repo.js';
import type { EndpointRow } from '../listings/repo.js';
import { platformFeeFrom } from '../listings/service.js';
import type { RoutesService } from '../listings/service.js';
import { cheapestVisible } from './cheapest-visible.js';
import { qualityScore, rankRoutes } from './smart-routing.js';
import type { MeasuredQuality, QualitySource, Strategy } from './smart-routing.js';

export interface CandidateQuery {
  accountId: string;
  /** E.164 with or without `+`. */
  number: string;
  type: 'voice' | 'sms';
  /** Only this route (must be purchased or own). */
  routeId?: string;
  strategy?: Strategy;
  /** SMS: the destination's network when known, for per-network prices. */
  mccMnc?: string | null;
  /**
   * The caller's number (voice: P-Asserted-Identity or From, the API's `from`; SMS: a numeric
   * sender), for origin-based rates; absent or not a number: default rows only.
   */
  from?: string | null;
}

export type SipEndpoint = Pick<
  EndpointRow,
  'id' | 'host' | 'port' | 'transport' | 'techPrefix' | 'username' | 'password' | 'priority' | 'weight'
> & {
  /** The checked address to send to, pinned when the candidate was made; `host` stays the name (TLS checks the certificate against it). */
  address?: string;
};

/** One route the call or SMS path may use, priced for this buyer at the longest matching prefix. */
export interface Candidate {
  routeId: string;
  routeName: string;
  type: 'voice' | 'sms';
  own: boolean;
  purchaseId: string | null;
  /** Set when the route is a member of a blend the buyer uses: the price is the member's plus the blend's margin. */
  blendId?: string;
  /** Set when the buyer's private rate from this accepted offer priced the route. */
  offerId?: string;
  /** Set when the terms of this interconnection between buyer and seller priced the route. */
  interconnectionId?: string;
  matchedPrefix: string;
  /** The origin of the row that priced the route (null: the default row). */
  matchedOrigin: string | null;
  destination: string;
  /** Buyer price per minute (voice) or per segment (SMS): seller rate plus platform fee. */
  price: Decimal;
  sellerRate: Decimal;
  increment: BillingIncrement;
  /** SMS: which row priced it. */
  rateBasis: 'network' | 'country' | null;
  quality: number;
  score: number;
  reason: string;
  /** Voice: SIP endpoints by priority (credentials included: internal use only). */
  endpoints: SipEndpoint[];
  /** SMS: SMPP or HTTPS delivery details (credentials included: internal use only). */
  smsDelivery: Record<string, unknown> | null;
}

export type { QualitySource } from './smart-routing.js';

/** Terms in force between a buyer and one seller (an active interconnection): percent off the seller's rates. */
export interface PeeringTerm {
  interconnectionId: string;
  discountPct: Decimal;
  services: ReadonlySet<'voice' | 'sms'>;
  validUntil: Date;
  /** Agreed seller rates by prefix, per service: the longest prefix under the number wins over the discount. */
  rates?: ReadonlyMap<'voice' | 'sms', ReadonlyMap<string, Decimal>>;
  /**
   * Caps the buyer reached in the period ending `until`: its traffic of a capped service goes at
   * the list price (`list_price`) or not over this seller's routes at all (`refuse`).
   */
  overCap?: { voice: boolean; sms: boolean; until: Date; action: 'list_price' | 'refuse' };
}

/** The interconnection terms of a buyer, by seller account (the interconnections module's cache). */
export interface PeeringSource {
  forBuyer(accountId: string): Promise<ReadonlyMap<string, PeeringTerm>>;
}

const noMeasurements: QualitySource = async () => new Map();

/** A route priced for one number. */
export interface Priced {
  routeId: string;
  meta: DeckMeta;
  match: RateMatch;
  /** Seller rate (plus a blend's margin) per unit. */
  sellerRate: Decimal;
  /** Buyer price per unit: the seller rate plus the platform fee. */
  price: Decimal;
  basis: 'network' | 'country' | null;
}

/** A blend member priced for one number. */
export interface PricedMember extends Priced {
  position: number;
  percent: number;
  quality: number;
}

/** The buyer's term with this seller that covers the service now, if any. */
export function peeringTermFor(
  peers: ReadonlyMap<string, PeeringTerm>,
  sellerId: string,
  type: 'voice' | 'sms',
  now: Date,
): PeeringTerm | undefined {
  const term = peers.get(sellerId);
  if (term === undefined || !term.services.has(type) || term.validUntil.getTime() <= now.getTime()) return undefined;
  return term;
}

/**
 * The seller rate a term sets for a number on a route listed at `listRate`: the agreed rate of the
 * longest prefix under the number, else the list rate less the discount. Past a cap: `list` (the
 * route is priced as listed) or `refuse` (the route is not used).
 */
export function agreedSellerRate(
  term: PeeringTerm,
  type: 'voice' | 'sms',
  digits: string,
  listRate: Decimal,
  now: Date,
): Decimal | 'list' | 'refuse' {
  const over = term.overCap;
  if (over !== undefined && over[type] && now.getTime() < over.until.getTime())
    return over.action === 'refuse' ? 'refuse' : 'list';
  const byPrefix = term.rates?.get(type);
  if (byPrefix !== undefined)
    for (let n = digits.length; n > 0; n--) {
      const rate = byPrefix.get(digits.slice(0, n));
      if (rate !== undefined) return rate;
    }
  return discounted(listRate, term.discountPct);
}

/** A seller rate less a percent discount, to 6 places (half up, as every rate). */
export function discounted(rate: Decimal, pct: Decimal): Decimal {
  return rate.times(new Decimal(100).minus(pct)).div(100).toDecimalPlaces(6, Decimal.ROUND_HALF_UP);
}

/** Already plain E.164 digits (an optional `+`, no leading 0): what normaliseNumber would make of it is itself. */
const PLAIN_E164 = /^\+?[1-9]\d{0,14}$/;

export function normaliseNumber(number: string): string {
  // Every call and message passes a number in this form: no three replaces for it.
  if (PLAIN_E164.test(number)) return number.charCodeAt(0) === 43 ? number.slice(1) : number;
  const digits = number
    .replace(/[\s\-().]/g, '')
    .replace(/^\+/, '')
    .replace(/^00/, '');
  if (!/^\d{1,15}$/.test(digits))
    throw validationError([{ path: 'number', message: 'must be an E.164 number: up to 15 digits' }]);
  return digits;
}

/** A route priced for one buyer's number, with what ranking and the candidate need. */
type Item = Priced & {
  offerId?: string;
  interconnectionId?: string;
  u: UsableRoute;
  position: number | null;
  quality: number;
  members: PricedMember[] | null;
  blend: Blend | null;
};

// Each route's item made whole in one literal (quality set once measured): spreading a priced
// route into it, twice, cost more than the rest of the look-up (issue 26). At module level, not
// made again by every look-up.
const itemOf = (
  u: UsableRoute,
  p: Priced,
  sellerRate: Decimal,
  price: Decimal,
  offerId: string | undefined,
  interconnectionId: string | undefined,
): Item => ({
  routeId: p.routeId,
  meta: p.meta,
  match: p.match,
  sellerRate,
  price,
  basis: p.basis,
  offerId,
  interconnectionId,
  u,
  position: u.position,
  quality: 0,
  members: null,
  blend: null,
});

/** An IPv4 or IPv6 address (bracketed or not) rather than a name to resolve. */
const isIpLiteral = (host: string): boolean =>
  isIP(host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host) !== 0;

/**
 * Route selection for calls and SMS (spec "Voice and SMS", Smart Routing). Candidates are the
 * buyer's active purchases and own active routes of the type whose deck covers the number; public
 * routes that were not bought are never used (a buyer buys first: the purchase is what grants the
 * SIP credentials, the failover order and the rate-change notices).
 */
export function createRouting(deps: {
  config: Readonly<Config>;
  routes: RoutesService;
  purchases: PurchasesService;
  quality?: QualitySource;
  /** SIP endpoints are checked at every call (DNS can change since they were saved) and pinned to the checked address. */
  guard?: TargetGuard;
  /** Which usable routes are blends, resolved here to a member per call or message. */
  blends: BlendCache;
  /** Draws the percent rule's member (tests pin it). */
  random?: () => number;
  /** Buyers' private rates from accepted offers, used in place of the deck's rate. */
  privateRates?: PrivateRateCache;
  /** Interconnection terms: a discount off the seller rate when buyer and seller have agreed one. */
  peering?: PeeringSource;
  clock?: Clock;
}) {
  const { routes, purchases, blends } = deps;
  const random = deps.random ?? Math.random;
  const quality = deps.quality ?? noMeasurements;
  const decks = routes.decks;

  /**
   * The guard's verdict on IP-literal endpoints, by endpoint row: a literal's verdict depends on
   * the address and port only (no lookup), so it is asked once per row instead of once per call.
   * The rows are the routing cache's own objects, replaced when a route or its endpoints change,
   * so a changed endpoint is checked again; host names are still resolved at every call.
   * null: refused.
   */
  const literalVerdicts = new WeakMap<EndpointRow, string | null>();
  /**
   * Endpoints whose address the guard refuses (or that no longer resolve) are left out; the rest
   * go to the checked address, so the INVITE cannot be sent to a second, different answer. Over
   * TLS the name still goes with it, for SNI and the certificate check.
   */
  const checkedEndpoints = async (rows: EndpointRow[]): Promise<Array<EndpointRow & { address?: string }>> => {
    const guard = deps.guard;
    if (!guard) return rows;
    const out: Array<EndpointRow & { address?: string }> = [];
    for (const e of rows) {
      let address = literalVerdicts.get(e);
      if (address === undefined) {
        try {
          address = (await guard.resolve(e.host, e.port)).address;
        } catch {
          address = null;
        }
        if (isIpLiteral(e.host)) literalVerdicts.set(e, address);
      }
      if (address !== null) out.push({ ...e, address });
    }
    return out;
  };

  /** Prices one route's deck for a number; `margin` (a blend's) is added to the seller rate before the fee. */
  const priceRoute = (
    routeId: string,
    digits: string,
    type: 'voice' | 'sms',
    mccMnc: string | null,
    fee: PlatformFee,
    margin: Decimal | null,
    caller: CallerOrigin = NO_ORIGIN,
  ): Priced | undefined => {
    const index = decks.registry.get(routeId);
    const meta = decks.meta(routeId);
    if (index === undefined || meta === undefined) return undefined;
    let match: RateMatch;
    let sellerRate: Decimal;
    let basis: 'network' | 'country' | null = null;
    if (type === 'sms') {
      const p = priceSms(index, digits, mccMnc, fee, caller);
      if (p === undefined) return undefined;
      match = p.network ?? p.country;
      sellerRate = p.sellerRate;
      basis = p.basis;
    } else {
      const m = index.lookupFrom(digits, caller);
      if (m === undefined) return undefined;
      match = m;
      sellerRate = m.rateDecimal;
    }
    if (margin !== null && !margin.isZero()) sellerRate = sellerRate.plus(margin);
    return {
      routeId,
      meta,
      match,
      sellerRate,
      price: buyerRate(sellerRate, fee, type === 'voice' ? 'min' : 'msg'),
      basis,
    };
  };

  const statedOf = (meta: DeckMeta) => ({
    expectedAsr: meta.expectedAsr === null ? null : Number(meta.expectedAsr),
    expectedAcd: meta.expectedAcd === null ? null : Number(meta.expectedAcd),
    expectedPdd: meta.expectedPdd,
  });

  /**
   * The members of a blend that may carry traffic for its owner: active routes of the blend's type
   * with a deck, each the owner's own or bought by the owner (a blend never lends its buyers
   * access to routes its owner could not use).
   */
  const eligibleMembers = async (blend: Blend): Promise<Blend['members']> => {
    const out: Blend['members'][number][] = [];
    let bought: Set<string> | null = null;
    for (const m of blend.members) {
      const meta = decks.meta(m.routeId);
      if (meta === undefined || meta.status !== 'active' || meta.type !== blend.type) continue;
      if (meta.sellerId !== blend.ownerId) {
        bought ??= new Set((await purchases.usableRoutes(blend.ownerId, blend.type)).map((u) => u.routeId));
        if (!bought.has(m.routeId)) continue;
      }
      out.push(m);
    }
    return out;
  };

  /** Members of a blend that cover a number, priced with the margin, in the order the blend's rule tries them. */
  const blendMembersFor = async (
    blend: Blend,
    digits: string,
    mccMnc: string | null,
    fee: PlatformFee,
    quality: (routeId: string, meta: DeckMeta) => number,
    random: () => number,
    caller: CallerOrigin = NO_ORIGIN,
  ): Promise<PricedMember[]> => {
    const priced: PricedMember[] = [];
    for (const m of await eligibleMembers(blend)) {
      const p = priceRoute(m.routeId, digits, blend.type, mccMnc, fee, blend.margin, caller);
      if (p !== undefined)
        priced.push({ ...p, position: m.position, percent: m.percent, quality: quality(m.routeId, p.meta) });
    }
    return orderMembers(blend.strategy, priced, random);
  };

  const candidatesFor = async (q: CandidateQuery): Promise<Candidate[]> => {
    const digits = normaliseNumber(q.number);
    await decks.ensureLoaded();
    let usable = await purchases.usableRoutes(q.accountId, q.type);
    if (q.routeId !== undefined) {
      usable = usable.filter((u) => u.routeId === q.routeId);
      if (usable.length === 0) throw ruleError('Route is not purchased (or own) and active for this account');
    }
    const fee = platformFeeFrom(deps.config);
    const mccMnc = q.mccMnc ?? null;
    // Worked out once per call: decks without origin rows never look at it.
    const caller = callerOrigin(q.from);
    const inBlends = await blends.blendsAmong(usable.map((u) => u.routeId));
    const privates = deps.privateRates ? await deps.privateRates.forAccount(q.accountId) : undefined;
    const now = deps.clock?.now() ?? new Date();
    const peers = deps.peering ? await deps.peering.forBuyer(q.accountId) : undefined;
    const plain: Item[] = [];
    const blended: { u: UsableRoute; blend: Blend }[] = [];
    for (const u of usable) {
      const blend = inBlends.get(u.routeId);
      if (blend !== undefined) {
        blended.push({ u, blend });
        continue;
      }
      const p = priceRoute(u.routeId, digits, q.type, mccMnc, fee, null, caller);
      if (p === undefined) continue;
      // A private rate replaces the deck's rate for numbers under its prefix; the deck still decides coverage and increment.
      const own = privates?.size ? deps.privateRates!.lookup(privates.get(u.routeId), digits, now) : undefined;
      const term = own === undefined && peers?.size ? peeringTermFor(peers, p.meta.sellerId, q.type, now) : undefined;
      // An interconnection's terms apply where no offer set a private rate (the narrower agreement wins).
      const agreed = term === undefined ? 'list' : agreedSellerRate(term, q.type, digits, p.sellerRate, now);
      if (agreed === 'refuse') continue;
      if (agreed !== 'list') {
        const price = buyerRate(agreed, fee, q.type === 'voice' ? 'min' : 'msg');
        plain.push(itemOf(u, p, agreed, price, undefined, term!.interconnectionId));
      } else if (own === undefined) plain.push(itemOf(u, p, p.sellerRate, p.price, undefined, undefined));
      else
        plain.push(
          itemOf(u, p, own.rate, buyerRate(own.rate, fee, q.type === 'voice' ? 'min' : 'msg'), own.offerId, undefined),
        );
    }
    if (plain.length === 0 && blended.length === 0) return [];
    const memberIds = blended.flatMap((b) => b.blend.members.map((m) => m.routeId));
    const measured = await quality([...plain.map((p) => p.routeId), ...memberIds]);
    const items: Item[] = plain;
    for (const p of plain) p.quality = qualityScore(measured.get(p.routeId) ?? null, statedOf(p.meta));
    for (const { u, blend } of blended) {
      const scoreOf = (routeId: string, meta: DeckMeta) => qualityScore(measured.get(routeId) ?? null, statedOf(meta));
      const members = await blendMembersFor(blend, digits, mccMnc, fee, scoreOf, random, caller);
      const first = members[0];
      // Ranked as its first member (what the next call would pay), under the blend's own id and position.
      if (first !== undefined) items.push({ ...first, routeId: u.routeId, u, position: u.position, members, blend });
    }
    if (items.length === 0) return [];
    const ranked = rankRoutes(items, q.strategy ?? 'cheapest');
    // A blend's members follow one another in its rule's order; a route met twice (bought alone and in a blend) is tried once.
    const seen = new Set<string>();
    const expanded: {
      item: Priced & { offerId?: string; interconnectionId?: string };
      quality: number;
      u: UsableRoute;
      blend: Blend | null;
      score: number;
      reason: string;
    }[] = [];
    for (const { item, score, reason } of ranked) {
      const parts = item.members ?? [item];
      for (const [i, part] of parts.entries()) {
        if (seen.has(part.routeId)) continue;
        seen.add(part.routeId);
        expanded.push({
          item: part,
          quality: 'quality' in part ? part.quality : item.quality,
          u: item.u,
          blend: item.blend,
          score,
          reason: item.blend === null ? reason : `${reason}; blend ${item.blend.strategy} member ${i + 1}`,
        });
      }
    }
    const ids = expanded.map((x) => x.item.routeId);
    const endpoints = q.type === 'voice' ? await checkedEndpoints(await routes.endpointsFor(ids)) : [];
    const sms = q.type === 'sms' ? await routes.smsDeliveryFor(ids) : new Map<string, Record<string, unknown>>();
    // The optional keys are set after the literal: spreads in its middle made V8 build every
    // candidate property by property (about 1 us each, against 0.05 us for the literal).
    return expanded.map(({ item, quality: qScore, u, blend, score, reason }) => {
      const c: Candidate = {
        routeId: item.routeId,
        routeName: blend === null ? item.meta.name : blend.name,
        type: item.meta.type,
        own: u.own,
        purchaseId: u.purchaseId,
        matchedPrefix: item.match.prefix,
        matchedOrigin: item.match.origin,
        destination: item.match.destination,
        price: item.price,
        sellerRate: item.sellerRate,
        increment: item.match.increment,
        rateBasis: item.basis,
        quality: Math.round(qScore * 10_000) / 10_000,
        score,
        reason,
        endpoints: endpoints.filter((e) => e.routeId === item.routeId).map(({ routeId: _r, label: _l, ...e }) => e),
        smsDelivery: sms.get(item.routeId) ?? null,
      };
      if (blend !== null) c.blendId = blend.id;
      if (item.offerId !== undefined) c.offerId = item.offerId;
      if (item.interconnectionId !== undefined) c.interconnectionId = item.interconnectionId;
      return c;
    });
  };

  /** What a response may show of a candidate: no credentials, no seller identity. */
  const view = (
    c: Pick<
      Candidate,
      | 'routeId'
      | 'routeName'
      | 'own'
      | 'purchaseId'
      | 'blendId'
      | 'offerId'
      | 'matchedPrefix'
      | 'matchedOrigin'
      | 'destination'
      | 'price'
      | 'increment'
      | 'rateBasis'
      | 'quality'
      | 'score'
      | 'reason'
    >,
    rank: number,
  ) => ({
    rank,
    routeId: c.routeId,
    routeName: c.routeName,
    own: c.own,
    purchaseId: c.purchaseId,
    blendId: c.blendId ?? null,
    offerId: c.offerId ?? null,
    matchedPrefix: c.matchedPrefix,
    matchedOrigin: c.matchedOrigin,
    destination: c.destination,
    price: toMoney(c.price),
    billingIncrement: c.increment.text,
    rateBasis: c.rateBasis,
    quality: c.quality,
    score: c.score,
    reason: c.reason,
  });

  return {
    candidatesFor,

    /** GET /lookup/{number}: the cheapest public, own or purchased route covering a number. */
    cheapestVisible: (q: Parameters<typeof cheapestVisible>[1]) =>
      cheapestVisible({ decks, purchases, fee: platformFeeFrom(deps.config) }, q),

    /** GET /routes/resolve: the order Smart Routing would use, explained. */
    async resolve(q: CandidateQuery) {
      const strategy = q.strategy ?? 'cheapest';
      const list = await candidatesFor({ ...q, strategy });
      return {
        number: normaliseNumber(q.number),
        type: q.type,
        strategy,
        routes: list.map((c, i) => view(c, i + 1)),
        explanation:
          'Routes in your routing order come first, by position; the rest follow by strategy. ' +
          'cheapest: price ascending; best_quality: quality descending; balanced: 0.5·(cheapest price/price) + 0.5·quality descending. ' +
          'quality = 0.45·ASR + 0.25·min(ACD/300 s, 1) + 0.20·NER + 0.10·max(0, 1 − PDD/10 s), from measured calls when a route has 50 calls from 2 buyers, else from stated figures × 0.8.',
      };
    },

    /** GET /purchases/route-for: the first choice for a number. */
    async routeFor(q: CandidateQuery) {
      const [first, ...rest] = await candidatesFor(q);
      if (first === undefined) throw notFound('Route for this number');
      return {
        number: normaliseNumber(q.number),
        route: view(first, 1),
        backups: rest.slice(0, 2).map((c, i) => view(c, i + 2)),
      };
    },

    /**
     * GET /purchases/failover: per destination prefix of the buyer's purchased and own routes, the
     * first choice and up to two backups (the call path tries at most three routes), in the order a
     * call to a number starting with that prefix would try them. Each route is priced at its own
     * longest prefix covering the destination prefix (a private offer rate in place of the deck's);
     * country prices only. A blend is ranked as its first member and expands into its members in
     * its rule's order (percent: the members by share, largest first, as the draw is left out),
     * priced with its margin, as `candidatesFor` does for a call.
     */
    async failover(q: {
      accountId: string;
      type: 'voice' | 'sms';
      strategy: Strategy;
      prefix?: string;
      limit: number;
      offset: number;
    }) {
      await decks.ensureLoaded();
      const fee = platformFeeFrom(deps.config);
      const unit = q.type === 'voice' ? 'min' : 'msg';
      const now = deps.clock?.now() ?? new Date();
      const usableAll = await purchases.usableRoutes(q.accountId, q.type);
      const inBlends = await blends.blendsAmong(usableAll.map((u) => u.routeId));
      const privates = deps.privateRates ? await deps.privateRates.forAccount(q.accountId) : undefined;
      const usable = usableAll.flatMap((u) => {
        const index = decks.registry.get(u.routeId);
        const meta = decks.meta(u.routeId);
        return inBlends.has(u.routeId) || index === undefined || meta === undefined ? [] : [{ u, index, meta }];
      });
      const blended = await Promise.all(
        usableAll
          .filter((u) => inBlends.has(u.routeId))
          .map(async (u) => ({
            u,
            blend: inBlends.get(u.routeId)!,
            members: await eligibleMembers(inBlends.get(u.routeId)!),
          })),
      );
      const prefixes = new Set<string>();
      const indexes = [
        ...usable.map((x) => x.index),
        ...blended.flatMap((b) => b.members.flatMap((m) => decks.registry.get(m.routeId) ?? [])),
      ];
      for (const index of indexes) {
        for (let i = 0; i < index.rowCount; i++) {
          const r = index.row(i);
          if (r.mccMnc === null && (q.prefix === undefined || r.prefix.startsWith(q.prefix))) prefixes.add(r.prefix);
        }
      }
      const all = [...prefixes].sort();
      const page = all.slice(q.offset, q.offset + q.limit);
      const ids = [...usable.map((x) => x.u.routeId), ...blended.flatMap((b) => b.members.map((m) => m.routeId))];
      const measured = page.length === 0 ? new Map<string, MeasuredQuality | null>() : await quality(ids);
      const scoreOf = (routeId: string, meta: DeckMeta) => qualityScore(measured.get(routeId) ?? null, statedOf(meta));
      type Part = {
        routeId: string;
        meta: DeckMeta;
        match: RateMatch;
        price: Decimal;
        quality: number;
        offerId?: string;
      };
      type Item = Part & {
        id: string;
        position: number | null;
        u: (typeof usableAll)[number];
        blend: Blend | null;
        parts: Part[];
      };
      const rows = page.map((prefix) => {
        const items: Item[] = [];
        for (const x of usable) {
          const m = x.index.lookup(prefix);
          if (m === undefined) continue;
          const own = privates?.size ? deps.privateRates!.lookup(privates.get(x.u.routeId), prefix, now) : undefined;
          const part: Part = {
            routeId: x.u.routeId,
            meta: x.meta,
            match: m,
            price: buyerRate(own?.rate ?? m.rateDecimal, fee, unit),
            quality: scoreOf(x.u.routeId, x.meta),
            ...(own === undefined ? {} : { offerId: own.offerId }),
          };
          items.push({ ...part, id: x.u.routeId, position: x.u.position, u: x.u, blend: null, parts: [part] });
        }
        for (const b of blended) {
          const priced: PricedMember[] = [];
          for (const m of b.members) {
            const p = priceRoute(m.routeId, prefix, q.type, null, fee, b.blend.margin);
            if (p !== undefined)
              priced.push({ ...p, position: m.position, percent: m.percent, quality: scoreOf(m.routeId, p.meta) });
          }
          const ordered =
            b.blend.strategy === 'percent'
              ? [...priced].sort((a, c) => c.percent - a.percent || a.position - c.position)
              : orderMembers(b.blend.strategy, priced, random);
          const first = ordered[0];
          if (first === undefined) continue;
          items.push({ ...first, id: b.u.routeId, position: b.u.position, u: b.u, blend: b.blend, parts: ordered });
        }
        // rankRoutes breaks ties on `routeId`: a blend ranks under its own id.
        const ranked = rankRoutes(
          items.map((i) => ({ ...i, routeId: i.id })),
          q.strategy,
        );
        const seen = new Set<string>();
        const picks: ReturnType<typeof view>[] = [];
        for (const { item, score, reason } of ranked) {
          for (const [i, part] of item.parts.entries()) {
            if (seen.has(part.routeId) || picks.length === 3) continue;
            seen.add(part.routeId);
            picks.push(
              view(
                {
                  routeId: part.routeId,
                  routeName: item.blend === null ? part.meta.name : item.blend.name,
                  own: item.u.own,
                  purchaseId: item.u.purchaseId,
                  ...(item.blend === null ? {} : { blendId: item.blend.id }),
                  ...(part.offerId === undefined ? {} : { offerId: part.offerId }),
                  matchedPrefix: part.match.prefix,
                  matchedOrigin: part.match.origin,
                  destination: part.match.destination,
                  price: part.price,
                  increment: part.match.increment,
                  rateBasis: q.type === 'sms' ? 'country' : null,
                  quality: Math.round(part.quality * 10_000) / 10_000,
                  score,
                  reason: item.blend === null ? reason : `${reason}; blend ${item.blend.strategy} member ${i + 1}`,
                },
                picks.length + 1,
              ),
            );
          }
        }
        return { prefix, destination: picks[0]!.destination, first: picks[0]!, backups: picks.slice(1) };
      });
      return { type: q.type, strategy: q.strategy, rows, total: all.length, limit: q.limit, offset: q.offset };
    },

    /**
     * A blend's members for one number, in the order its rule tries them now (the percent rule
     * draws as a call would), with each covering member's share of traffic.
     */
    async previewBlend(blend: Blend, number: string, mccMnc: string | null) {
      const digits = normaliseNumber(number);
      await decks.ensureLoaded();
      const fee = platformFeeFrom(deps.config);
      const eligible = await eligibleMembers(blend);
      const ids = eligible.map((m) => m.routeId);
      const measured = ids.length === 0 ? new Map<string, MeasuredQuality | null>() : await quality(ids);
      const ordered = await blendMembersFor(
        blend,
        digits,
        mccMnc,
        fee,
        (id, meta) => qualityScore(measured.get(id) ?? null, statedOf(meta)),
        random,
      );
      return { digits, ordered, eligible: eligible.length };
    },

    /**
     * A blend's buyer price per destination prefix of its members' decks (country rows): the
     * price of the member its rule puts first (percent: the dearest member with a share, the most
     * a unit can cost), and the lowest and highest member price.
     */
    async blendRates(blend: Blend, q: { prefix?: string; limit: number; offset: number }) {
      await decks.ensureLoaded();
      const fee = platformFeeFrom(deps.config);
      const eligible = await eligibleMembers(blend);
      const ids = eligible.map((m) => m.routeId);
      const measured = ids.length === 0 ? new Map<string, MeasuredQuality | null>() : await quality(ids);
      const prefixes = new Set<string>();
      for (const m of eligible) {
        const index = decks.registry.get(m.routeId);
        if (index === undefined) continue;
        for (let i = 0; i < index.rowCount; i++) {
          const r = index.row(i);
          if (r.mccMnc === null && (q.prefix === undefined || r.prefix.startsWith(q.prefix))) prefixes.add(r.prefix);
        }
      }
      const all = [...prefixes].sort();
      const rows = all.slice(q.offset, q.offset + q.limit).map((prefix) => {
        const priced: PricedMember[] = [];
        for (const m of eligible) {
          const p = priceRoute(m.routeId, prefix, blend.type, null, fee, blend.margin);
          if (p !== undefined)
            priced.push({
              ...p,
              position: m.position,
              percent: m.percent,
              quality: qualityScore(measured.get(m.routeId) ?? null, statedOf(p.meta)),
            });
        }
        // The percent rule's draw is left out here: the row states the most a unit can cost.
        const ordered = orderMembers(blend.strategy === 'percent' ? 'priority' : blend.strategy, priced, random);
        const shared = blend.strategy === 'percent' ? ordered.filter((m) => m.percent > 0) : ordered.slice(0, 1);
        const byPrice = [...ordered].sort((a, b) => a.price.cmp(b.price));
        const head = (shared.length > 0 ? shared : ordered).reduce((a, b) => (b.price.gt(a.price) ? b : a));
        return {
          prefix,
          destination: ordered[0]!.match.destination,
          price: toMoney(head.price),
          billingIncrement: head.match.increment.text,
          lowest: toMoney(byPrice[0]!.price),
          highest: toMoney(byPrice[byPrice.length - 1]!.price),
          members: ordered.length,
        };
      });
      return { rows, total: all.length, limit: q.limit, offset: q.offset };
    },

    /**
     * GET /routes/price-number: every public active route covering the number, cheapest first,
     * priced for a buyer (seller rate plus platform fee); seller identities are never included.
     */
    async priceNumber(number: string, type: 'voice' | 'sms', from: string | null = null) {
      const digits = normaliseNumber(number);
      const caller = callerOrigin(from);
      await decks.ensureLoaded();
      const fee = platformFeeFrom(deps.config);
      const out: {
        destination: string;
        matchedPrefix: string;
        matchedOrigin: string | null;
        rate: Decimal;
        billingIncrement: string;
        cliType: string | null;
        exchangeScore: number;
      }[] = [];
      for (const meta of decks.publicRoutes(type)) {
        const m = decks.registry.get(meta.routeId)?.lookupFrom(digits, caller);
        if (m === undefined) continue;
        const stated = {
          expectedAsr: meta.expectedAsr === null ? null : Number(meta.expectedAsr),
          expectedAcd: meta.expectedAcd === null ? null : Number(meta.expectedAcd),
          expectedPdd: meta.expectedPdd,
        };
        out.push({
          destination: m.destination,
          matchedPrefix: m.prefix,
          matchedOrigin: m.origin,
          rate: buyerRate(m.rateDecimal, fee, type === 'voice' ? 'min' : 'msg'),
          billingIncrement: m.increment.text,
          cliType: meta.cliType,
          exchangeScore: Math.round(qualityScore(null, stated) * 100),
        });
      }
      out.sort((a, b) => a.rate.cmp(b.rate) || b.exchangeScore - a.exchangeScore);
      return {
        number: digits,
        type,
        unit: type === 'voice' ? 'min' : 'msg',
        total: out.length,
        routes: out.map((r) => ({ ...r, rate: toMoney(r.rate) })),
      };
    },
  };
}

export type Routing = ReturnType<typeof createRouting>;
