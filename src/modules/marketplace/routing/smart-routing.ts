import type { Decimal } from 'decimal.js';

/** Smart Routing strategies of the spec ("Voice and SMS"). */
export type Strategy = 'cheapest' | 'best_quality' | 'balanced';
export const STRATEGIES: readonly Strategy[] = ['cheapest', 'best_quality', 'balanced'];

/** Quality measured on real buyer calls over one window (spec "Market records", `measured`). */
export interface MeasuredQuality {
  /** 0..1 */
  readonly asr: number;
  /** seconds */
  readonly acd: number;
  /** 0..1 */
  readonly ner: number;
  /** milliseconds */
  readonly medianPddMs: number;
  readonly calls: number;
  readonly buyers: number;
  readonly window: '7d' | '30d' | 'latest';
}

/** Measured quality per route (from CDRs); null when the route has not enough data. */
export type QualitySource = (routeIds: readonly string[]) => Promise<Map<string, MeasuredQuality | null>>;

/** Call statistics of one window, as a CDR query returns them. */
export interface WindowStats {
  readonly window: '7d' | '30d' | 'latest';
  readonly calls: number;
  readonly buyers: number;
  readonly answered: number;
  /** calls that reached the far end's network (answered, busy, no answer, declined) */
  readonly networkEffective: number;
  readonly totalAnsweredSeconds: number;
  readonly medianPddMs: number;
}

export const MIN_CALLS = 50;
export const MIN_BUYERS = 2;

/**
 * Measured figures from the first window with enough data, tried in the order given (7 days, then
 * 30 days, then the latest period); null unless a window has at least 50 calls from at least two buyers.
 */
export function measuredFrom(windows: readonly WindowStats[]): MeasuredQuality | null {
  for (const w of windows) {
    if (w.calls < MIN_CALLS || w.buyers < MIN_BUYERS) continue;
    return {
      asr: w.answered / w.calls,
      acd: w.answered === 0 ? 0 : w.totalAnsweredSeconds / w.answered,
      ner: w.networkEffective / w.calls,
      medianPddMs: w.medianPddMs,
      calls: w.calls,
      buyers: w.buyers,
      window: w.window,
    };
  }
  return null;
}

/** Seller-stated figures (percent, seconds, milliseconds), any of which may be missing. */
export interface StatedQuality {
  readonly expectedAsr: number | null;
  readonly expectedAcd: number | null;
  readonly expectedPdd: number | null;
}

/** Stated figures count for this share of measured ones: sellers tend to state their best day. */
export const STATED_DISCOUNT = 0.8;
// Used for a stated figure the seller left out.
const DEFAULT_STATED = { asr: 0.3, acd: 120, pddMs: 5000 };

/**
 * Quality score in 0..1:
 *   0.45·ASR + 0.25·min(ACD / 300 s, 1) + 0.20·NER + 0.10·max(0, 1 − PDD / 10 s).
 * Measured figures are used when the route qualifies (see measuredFrom); otherwise the seller's
 * stated figures (NER taken as equal to the stated ASR), and the result is multiplied by 0.8.
 */
export function qualityScore(measured: MeasuredQuality | null, stated: StatedQuality): number {
  if (measured !== null) return formula(measured.asr, measured.acd, measured.ner, measured.medianPddMs);
  const asr = stated.expectedAsr === null ? DEFAULT_STATED.asr : stated.expectedAsr / 100;
  const acd = stated.expectedAcd ?? DEFAULT_STATED.acd;
  const pdd = stated.expectedPdd ?? DEFAULT_STATED.pddMs;
  return formula(asr, acd, asr, pdd) * STATED_DISCOUNT;
}

// Module-level helpers rather than closures made again at every call: every message and call ranks its routes.
const clamp = (x: number): number => Math.min(1, Math.max(0, x));
const round4 = (x: number): number => Math.round(x * 10_000) / 10_000;

/** The balanced strategy's score: half the price ratio to the cheapest, half the quality. */
function balancedScore(i: Rankable, cheapest: Decimal | null): number {
  const ratio = cheapest === null || i.price.isZero() ? 1 : cheapest.div(i.price).toNumber();
  return 0.5 * ratio + 0.5 * i.quality;
}

function formula(asr: number, acd: number, ner: number, pddMs: number): number {
  return 0.45 * clamp(asr) + 0.25 * clamp(acd / 300) + 0.2 * clamp(ner) + 0.1 * clamp(1 - pddMs / 10_000);
}

/** What the ranking needs of a candidate route. */
export interface Rankable {
  readonly routeId: string;
  /** Buyer price per unit. */
  readonly price: Decimal;
  /** 0..1 from qualityScore. */
  readonly quality: number;
  /** The buyer's routing-order position, or null when the route is not in the order. */
  readonly position: number | null;
}

export interface Ranked<T extends Rankable> {
  readonly item: T;
  /** The number the strategy sorted by (higher first, except cheapest, which sorts by price). */
  readonly score: number;
  readonly reason: string;
}

/**
 * Orders candidate routes. Routes in the buyer's routing order come first, by position; the rest
 * follow by strategy:
 * - `cheapest`: price ascending, then quality descending;
 * - `best_quality`: quality descending, then price ascending;
 * - `balanced`: score = 0.5 · (cheapest price / price) + 0.5 · quality, descending (a route at the
 *   cheapest price with perfect quality scores 1; a free route counts as the cheapest), then price.
 * Ties end on route id so the order is stable.
 */
export function rankRoutes<T extends Rankable>(items: readonly T[], strategy: Strategy): Ranked<T>[] {
  const ordered = items.filter((i) => i.position !== null).sort((a, b) => a.position! - b.position! || cmpId(a, b));
  const rest = items.filter((i) => i.position === null);
  const cheapest = rest.reduce<Decimal | null>((m, i) => (m === null || i.price.lt(m) ? i.price : m), null);
  let sorted: T[];
  if (strategy === 'cheapest')
    sorted = rest.sort((a, b) => a.price.cmp(b.price) || b.quality - a.quality || cmpId(a, b));
  else if (strategy === 'best_quality')
    sorted = rest.sort((a, b) => b.quality - a.quality || a.price.cmp(b.price) || cmpId(a, b));
  else
    sorted = rest.sort(
      (a, b) => balancedScore(b, cheapest) - balancedScore(a, cheapest) || a.price.cmp(b.price) || cmpId(a, b),
    );
  return [
    ...ordered.map((item) => ({ item, score: item.position!, reason: `routing order position ${item.position}` })),
    ...sorted.map((item) => {
      if (strategy === 'cheapest')
        return { item, score: round4(item.price.toNumber()), reason: 'cheapest: price ascending' };
      if (strategy === 'best_quality')
        return { item, score: round4(item.quality), reason: 'best_quality: quality score descending' };
      return {
        item,
        score: round4(balancedScore(item, cheapest)),
        reason: 'balanced: 0.5·(cheapest price/price) + 0.5·quality, descending',
      };
    }),
  ];
}

const cmpId = (a: Rankable, b: Rankable): number => (a.routeId < b.routeId ? -1 : a.routeId > b.routeId ? 1 : 0);
