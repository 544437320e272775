import { parsePhoneNumberFromString } from 'libphonenumber-js/max';

/**
 * ITU-T E.164 global codes of satellite and international networks (Inmarsat 870, GMSS 881,
 * international networks 882/883 which include Thuraya and other satellite ranges): a ring-me or
 * test SMS there costs far more than the check is worth, so the spec refuses them.
 */
const SATELLITE_CODES = new Set(['870', '871', '872', '873', '874', '881', '882', '883']);

/** Spec "Route checks": ranges a check never calls or texts, in plain words; null when allowed. */
export function destinationRefusal(e164: string): string | null {
  const digits = e164.replace(/^\+/, '');
  if (digits.length < 7) return 'Short codes cannot be checked';
  if (SATELLITE_CODES.has(digits.slice(0, 3))) return 'Satellite numbers cannot be checked';
  const parsed = parsePhoneNumberFromString(`+${digits}`);
  switch (parsed?.getType()) {
    case 'PREMIUM_RATE':
      return 'Premium-rate numbers cannot be checked';
    case 'SHARED_COST':
    case 'UAN':
    case 'VOICEMAIL':
    case 'PAGER':
      return 'Special-service numbers cannot be checked';
    default:
      return null;
  }
}

/** The number's line type when the numbering plan tells it apart. */
export function lineTypeOf(e164: string): 'fixed' | 'mobile' | null {
  const t = parsePhoneNumberFromString(`+${e164.replace(/^\+/, '')}`)?.getType();
  if (t === 'MOBILE') return 'mobile';
  if (t === 'FIXED_LINE') return 'fixed';
  return null;
}

/** The country (ISO alpha-2) of a number, when the numbering plan names one. */
export function countryOf(e164: string): string | null {
  return parsePhoneNumberFromString(`+${e164.replace(/^\+/, '')}`)?.country ?? null;
}
