/** SMPP type-of-number / numbering-plan values for a sender (SMPP 3.4 §5.2.5, §5.2.6). */
export const TON_UNKNOWN = 0;
export const TON_INTERNATIONAL = 1;
export const TON_NATIONAL = 2;
export const TON_ALPHANUMERIC = 5;
export const NPI_UNKNOWN = 0;
export const NPI_ISDN = 1;

/** An alphanumeric sender: letters, digits and spaces with at least one letter. */
const ALPHANUMERIC_RE = /^(?=.*[A-Za-z])[A-Za-z0-9 ]+$/;

export type SenderCheck =
  | { ok: true; kind: 'numeric' | 'alphanumeric'; value: string; ton: number; npi: number }
  | { ok: false; reason: 'empty' | 'numeric_too_long' | 'alphanumeric_too_long' | 'invalid_characters' };

/**
 * Validate a sender (spec "Voice and SMS": numeric, or alphanumeric up to 11 characters).
 * Numeric: optional '+', 1..15 digits, international TON/ISDN NPI (national when 8 digits or fewer,
 * i.e. a short code). Alphanumeric: 1 to 11 of [A-Za-z0-9 ] with at least one letter, TON 5 / NPI 0.
 */
export function checkSender(raw: string): SenderCheck {
  // Only spaces are trimmed: a tab or line break around a sender is refused, not silently dropped.
  const s = raw.replace(/^ +| +$/g, '');
  if (s.length === 0) return { ok: false, reason: 'empty' };
  const numeric = /^\+?\d+$/.test(s);
  if (numeric) {
    const digits = s.replace(/^\+/, '');
    if (digits.length > 15) return { ok: false, reason: 'numeric_too_long' };
    const short = digits.length <= 8 && !s.startsWith('+');
    return {
      ok: true,
      kind: 'numeric',
      value: digits,
      ton: short ? TON_NATIONAL : TON_INTERNATIONAL,
      npi: NPI_ISDN,
    };
  }
  // Letters, digits and spaces only: punctuation such as = + - @ lets a sender read as a spreadsheet
  // formula in CDR exports and in the recipient's own tools, and SMSCs reject it on many networks.
  if (!ALPHANUMERIC_RE.test(s)) return { ok: false, reason: 'invalid_characters' };
  if (s.length > 11) return { ok: false, reason: 'alphanumeric_too_long' };
  return { ok: true, kind: 'alphanumeric', value: s, ton: TON_ALPHANUMERIC, npi: NPI_UNKNOWN };
}
