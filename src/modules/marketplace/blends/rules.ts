import type { Decimal } from 'decimal.js';
import type { BlendStrategy } from './repo.js';

/** What a blend's rule needs of a member that covers the destination. */
export interface RuleMember {
  readonly routeId: string;
  /** Position in the blend (1 first). */
  readonly position: number;
  /** Share under the percent rule. */
  readonly percent: number;
  /** Buyer price per unit, margin included. */
  readonly price: Decimal;
  /** 0..1 quality score. */
  readonly quality: number;
}

/**
 * The order a blend tries its covering members in; the first carries the call or message.
 * - `priority`: by position.
 * - `least_cost`: price ascending, then position.
 * - `quality`: quality descending, then position.
 * - `percent`: one member drawn by share among those with a share (shares of the covering members
 *   only, so traffic still flows when a member does not cover the destination), then the rest by position.
 */
export function orderMembers<T extends RuleMember>(
  strategy: BlendStrategy,
  members: readonly T[],
  random: () => number,
): T[] {
  const byPosition = [...members].sort((a, b) => a.position - b.position);
  if (strategy === 'priority') return byPosition;
  if (strategy === 'least_cost') return byPosition.sort((a, b) => a.price.cmp(b.price) || a.position - b.position);
  if (strategy === 'quality') return byPosition.sort((a, b) => b.quality - a.quality || a.position - b.position);
  const weighted = byPosition.filter((m) => m.percent > 0);
  const total = weighted.reduce((s, m) => s + m.percent, 0);
  if (total === 0) return byPosition;
  let draw = random() * total;
  let pick = weighted[weighted.length - 1]!;
  for (const m of weighted) {
    if (draw < m.percent) {
      pick = m;
      break;
    }
    draw -= m.percent;
  }
  return [pick, ...byPosition.filter((m) => m !== pick)];
}

/** Each covering member's share of traffic under the rule, in percent (the preview shows it). */
export function sharesOf(strategy: BlendStrategy, ordered: readonly RuleMember[]): Map<string, number> {
  const out = new Map<string, number>();
  if (strategy !== 'percent') {
    ordered.forEach((m, i) => out.set(m.routeId, i === 0 ? 100 : 0));
    return out;
  }
  const total = ordered.reduce((s, m) => s + m.percent, 0);
  for (const m of ordered) out.set(m.routeId, total === 0 ? 0 : Math.round((m.percent / total) * 10_000) / 100);
  if (total === 0 && ordered[0]) out.set(ordered[0].routeId, 100);
  return out;
}
