import type { Decimal } from 'decimal.js';
import type { Config } from '../../../config/schema.js';
import { notFound, ruleError, validationError } from '../../../http/errors.js';
import { buyerRate, priceSms, toMoney } from '../../../rating/index.js';
import type { BillingIncrement } from '../../../rating/index.js';
import type { TargetGuard } from '../../../platform/outbound-guard.js';
import type { PurchasesService } from '../purchases/service.js';
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
  matchedPrefix: string;
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

const noMeasurements: QualitySource = async () => new Map();

export function normaliseNumber(number: string): string {
  const digits = number
    .replace(/[\s\-().]/g, '')
    .replace(/^\+/, '')
    .replace(/^00/, '');
  if (!/^\d{1,15}$/.test(digits))
    throw validationError([{ path: 'number', message: 'must be an E.164 number: up to 15 digits' }]);
  return digits;
}

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
}) {
  const { routes, purchases } = deps;
  const quality = deps.quality ?? noMeasurements;
  const decks = routes.decks;

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
      try {
        const pinned = await guard.resolve(e.host, e.port);
        out.push({ ...e, address: pinned.address });
      } catch {
        continue;
      }
    }
    return out;
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
    const priced = [];
    for (const u of usable) {
      const index = decks.registry.get(u.routeId);
      const meta = decks.meta(u.routeId);
      if (index === undefined || meta === undefined) continue;
      if (q.type === 'sms') {
        const p = priceSms(index, digits, q.mccMnc ?? null, fee);
        if (p === undefined) continue;
        priced.push({
          u,
          meta,
          match: p.network ?? p.country,
          price: p.buyerRate,
          sellerRate: p.sellerRate,
          basis: p.basis,
        });
      } else {
        const m = index.lookup(digits);
        if (m === undefined) continue;
        priced.push({
          u,
          meta,
          match: m,
          price: buyerRate(m.rateDecimal, fee, 'min'),
          sellerRate: m.rateDecimal,
          basis: null,
        });
      }
    }
    if (priced.length === 0) return [];
    const measured = await quality(priced.map((p) => p.u.routeId));
    const ranked = rankRoutes(
      priced.map((p) => ({
        ...p,
        routeId: p.u.routeId,
        position: p.u.position,
        quality: qualityScore(measured.get(p.u.routeId) ?? null, {
          expectedAsr: p.meta.expectedAsr === null ? null : Number(p.meta.expectedAsr),
          expectedAcd: p.meta.expectedAcd === null ? null : Number(p.meta.expectedAcd),
          expectedPdd: p.meta.expectedPdd,
        }),
      })),
      q.strategy ?? 'cheapest',
    );
    const ids = ranked.map((r) => r.item.routeId);
    const endpoints = q.type === 'voice' ? await checkedEndpoints(await routes.endpointsFor(ids)) : [];
    const sms = q.type === 'sms' ? await routes.smsDeliveryFor(ids) : new Map<string, Record<string, unknown>>();
    return ranked.map(({ item, score, reason }) => ({
      routeId: item.routeId,
      routeName: item.meta.name,
      type: item.meta.type,
      own: item.u.own,
      purchaseId: item.u.purchaseId,
      matchedPrefix: item.match.prefix,
      destination: item.match.destination,
      price: item.price,
      sellerRate: item.sellerRate,
      increment: item.match.increment,
      rateBasis: item.basis,
      quality: Math.round(item.quality * 10_000) / 10_000,
      score,
      reason,
      endpoints: endpoints.filter((e) => e.routeId === item.routeId).map(({ routeId: _r, label: _l, ...e }) => e),
      smsDelivery: sms.get(item.routeId) ?? null,
    }));
  };

  /** What a response may show of a candidate: no credentials, no seller identity. */
  const view = (c: Candidate, rank: number) => ({
    rank,
    routeId: c.routeId,
    routeName: c.routeName,
    own: c.own,
    purchaseId: c.purchaseId,
    matchedPrefix: c.matchedPrefix,
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
     * longest prefix covering the destination prefix; country prices only.
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
      const usable = (await purchases.usableRoutes(q.accountId, q.type)).flatMap((u) => {
        const index = decks.registry.get(u.routeId);
        const meta = decks.meta(u.routeId);
        return index === undefined || meta === undefined ? [] : [{ u, index, meta }];
      });
      const prefixes = new Set<string>();
      for (const x of usable) {
        for (let i = 0; i < x.index.rowCount; i++) {
          const r = x.index.row(i);
          if (r.mccMnc === null && (q.prefix === undefined || r.prefix.startsWith(q.prefix))) prefixes.add(r.prefix);
        }
      }
      const all = [...prefixes].sort();
      const page = all.slice(q.offset, q.offset + q.limit);
      const measured =
        page.length === 0 ? new Map<string, MeasuredQuality | null>() : await quality(usable.map((x) => x.u.routeId));
      const scores = new Map(
        usable.map((x) => [
          x.u.routeId,
          qualityScore(measured.get(x.u.routeId) ?? null, {
            expectedAsr: x.meta.expectedAsr === null ? null : Number(x.meta.expectedAsr),
            expectedAcd: x.meta.expectedAcd === null ? null : Number(x.meta.expectedAcd),
            expectedPdd: x.meta.expectedPdd,
          }),
        ]),
      );
      const rows = page.map((prefix) => {
        const items = usable.flatMap((x) => {
          const m = x.index.lookup(prefix);
          return m === undefined
            ? []
            : [
                {
                  x,
                  m,
                  routeId: x.u.routeId,
                  position: x.u.position,
                  price: buyerRate(m.rateDecimal, fee, unit),
                  quality: scores.get(x.u.routeId)!,
                },
              ];
        });
        const ranked = rankRoutes(items, q.strategy)
          .slice(0, 3)
          .map(({ item, score, reason }, i) => ({
            rank: i + 1,
            routeId: item.routeId,
            routeName: item.x.meta.name,
            own: item.x.u.own,
            purchaseId: item.x.u.purchaseId,
            matchedPrefix: item.m.prefix,
            destination: item.m.destination,
            price: toMoney(item.price),
            billingIncrement: item.m.increment.text,
            rateBasis: q.type === 'sms' ? 'country' : null,
            quality: Math.round(item.quality * 10_000) / 10_000,
            score,
            reason,
          }));
        return { prefix, destination: ranked[0]!.destination, first: ranked[0]!, backups: ranked.slice(1) };
      });
      return { type: q.type, strategy: q.strategy, rows, total: all.length, limit: q.limit, offset: q.offset };
    },

    /**
     * GET /routes/price-number: every public active route covering the number, cheapest first,
     * priced for a buyer (seller rate plus platform fee); seller identities are never included.
     */
    async priceNumber(number: string, type: 'voice' | 'sms') {
      const digits = normaliseNumber(number);
      await decks.ensureLoaded();
      const fee = platformFeeFrom(deps.config);
      const out: {
        destination: string;
        matchedPrefix: string;
        rate: Decimal;
        billingIncrement: string;
        cliType: string | null;
        exchangeScore: number;
      }[] = [];
      for (const meta of decks.publicRoutes(type)) {
        const m = decks.registry.get(meta.routeId)?.lookup(digits);
        if (m === undefined) continue;
        const stated = {
          expectedAsr: meta.expectedAsr === null ? null : Number(meta.expectedAsr),
          expectedAcd: meta.expectedAcd === null ? null : Number(meta.expectedAcd),
          expectedPdd: meta.expectedPdd,
        };
        out.push({
          destination: m.destination,
          matchedPrefix: m.prefix,
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
