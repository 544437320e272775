import ranges from './data/risk-ranges.json' with { type: 'json' };

export type RiskKind = 'satellite' | 'special_service' | 'premium_rate' | 'embargoed' | 'short_code';

interface RiskRange {
  prefix: string;
  kind: Exclude<RiskKind, 'short_code'>;
  name: string;
  iso?: string;
}

export interface Risk {
  /** Traffic to the number is refused by the exchange (embargoed destinations). */
  blocked: boolean;
  sanctioned: boolean;
  /** Premium-rate, satellite, special-service or short-code ranges: costly or open to fraud. */
  highRisk: boolean;
  reasons: RiskKind[];
}

const RANGES = (ranges as { ranges: RiskRange[] }).ranges;

/** Every listed range the number falls in, longest prefix first. */
export function rangesOf(digits: string): RiskRange[] {
  return RANGES.filter((r) => digits.startsWith(r.prefix)).sort((a, b) => b.prefix.length - a.prefix.length);
}

/** The risk view of a number from the ranges file plus what the numbering plan says of it. */
export function riskOf(digits: string, plan: { premium: boolean; shortCode: boolean }): Risk {
  const kinds = new Set<RiskKind>(rangesOf(digits).map((r) => r.kind));
  if (plan.premium) kinds.add('premium_rate');
  if (plan.shortCode) kinds.add('short_code');
  const reasons = (['embargoed', 'premium_rate', 'satellite', 'special_service', 'short_code'] as const).filter((k) =>
    kinds.has(k),
  );
  const sanctioned = kinds.has('embargoed');
  return {
    blocked: sanctioned,
    sanctioned,
    highRisk: reasons.some((k) => k !== 'embargoed'),
    reasons,
  };
}
