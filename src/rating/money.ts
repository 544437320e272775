import { Decimal } from 'decimal.js';

/** Result of checking one rate value from a sheet. */
export type RateParse = { readonly ok: true; readonly text: string } | { readonly ok: false; readonly reason: string };

// numeric(20,6): at most 14 integer digits.
const RATE_RE = /^(\d{1,14})(?:\.(\d{1,6}))?$/;

/**
 * Checks a seller rate as written in a sheet and returns its canonical 6-place text.
 * Reasons are stable strings shown to the seller next to the line number.
 */
export function parseRate(raw: unknown): RateParse {
  if (raw instanceof Decimal) return parseRate(raw.toFixed());
  if (typeof raw === 'number') {
    // A JSON number is accepted only when its shortest text form is a valid rate; no float arithmetic.
    if (!Number.isFinite(raw)) return { ok: false, reason: 'rate is not a number' };
    return parseRate(String(raw));
  }
  if (typeof raw !== 'string') return { ok: false, reason: 'rate is missing' };
  const s = raw.trim();
  if (s === '') return { ok: false, reason: 'rate is missing' };
  const m = RATE_RE.exec(s);
  if (m === null) {
    if (/^-\s*\d/.test(s)) return { ok: false, reason: 'rate is negative' };
    if (/^\d+\.\d{7,}$/.test(s)) return { ok: false, reason: 'rate has more than 6 decimal places' };
    return { ok: false, reason: 'rate is not a number' };
  }
  const int = m[1]!.replace(/^0+(?=\d)/, '');
  const frac = (m[2] ?? '').padEnd(6, '0');
  return { ok: true, text: `${int}.${frac}` };
}

/** Rounds to 6 places half-up (away from zero on a tie), the rule for every money figure here. */
export function round6(d: Decimal): Decimal {
  return d.toDecimalPlaces(6, Decimal.ROUND_HALF_UP);
}

/** 6-place wire string. */
export function toMoney(d: Decimal): string {
  return d.toFixed(6, Decimal.ROUND_HALF_UP);
}
