import { parsePhoneNumberFromString } from 'libphonenumber-js/min';
import metadata from 'libphonenumber-js/metadata.min.json';

/**
 * Origin-based rates (issue 23, "Rate sheets"): a rate-sheet row may say which callers it prices,
 * as wholesale decks do (an EEA-origin rate beside a dearer non-EEA rate). An origin is one of:
 * - an A-number prefix, 1 to 15 digits (`4420`): callers whose number starts with it;
 * - a country, ISO 3166 alpha-2 (`FR`): callers whose number belongs to it;
 * - a region, `EU` or `EEA`: callers from any of its countries.
 * Rows without an origin are the default. The most specific matching origin wins: an A-number
 * prefix (the longest first), then the country, then EU, then EEA (see PrefixIndex.lookupFrom).
 */
export type OriginKind = 'prefix' | 'country' | 'region';

const EU = [
  'AT', 'BE', 'BG', 'HR', 'CY', 'CZ', 'DK', 'EE', 'FI', 'FR', 'DE', 'GR', 'HU', 'IE',
  'IT', 'LV', 'LT', 'LU', 'MT', 'NL', 'PL', 'PT', 'RO', 'SK', 'SI', 'ES', 'SE',
]; // prettier-ignore
const REGIONS: Readonly<Record<string, ReadonlySet<string>>> = {
  EU: new Set(EU),
  EEA: new Set([...EU, 'IS', 'LI', 'NO']),
};
/** Regions from the narrowest: a caller in both matches EU before EEA. */
const REGION_ORDER = ['EU', 'EEA'] as const;

const callingCodes = (metadata as unknown as { country_calling_codes: Record<string, string[]> }).country_calling_codes;
const COUNTRIES = new Set(Object.values(callingCodes).flat());

const PREFIX_RE = /^\d{1,15}$/;

/** An origin as a sheet states it, normalised (`fr` → `FR`, `eea` → `EEA`), or null when it is none of the three forms. */
export function parseOrigin(text: string): { origin: string; kind: OriginKind } | null {
  const v = text.trim().replace(/^\+/, '');
  if (PREFIX_RE.test(v)) return { origin: v, kind: 'prefix' };
  const up = v.toUpperCase();
  if (REGIONS[up] !== undefined) return { origin: up, kind: 'region' };
  if (COUNTRIES.has(up) && up !== '001') return { origin: up, kind: 'country' };
  return null;
}

/** Which origins a caller matches, worked out once per call (not per deck). */
export interface CallerOrigin {
  /** The caller's E.164 digits, or '' when unknown (an alphanumeric sender, a withheld number). */
  readonly digits: string;
  readonly country: string | null;
  /** Regions the caller's country is in, narrowest first. */
  readonly regions: readonly string[];
}

export const NO_ORIGIN: CallerOrigin = Object.freeze({ digits: '', country: null, regions: [] });

/** A number as callers write it in E.164 (optional +), and the digits alone. */
const E164 = /^\+?[1-9]\d{0,14}$/;
const DIGITS = /^[1-9]\d{0,14}$/;
const NOT_NUMBER_CHAR = /[^\s\d+\-().]/;

/**
 * The origin of a caller's number (E.164, with or without `+` or `00`). The country comes from the
 * number's ranges (so +1 415 is US and +1 416 CA); a number outside every known range takes the
 * main country of its calling code, as a deck's country rows would price it. The country is
 * worked out on first use: a call over decks without origin rows never pays for it.
 */
export function callerOrigin(number: string | null | undefined): CallerOrigin {
  if (number === null || number === undefined) return NO_ORIGIN;
  // Every call and message asks: a number already written as E.164 (the usual case) is taken by one
  // test, and only other spellings go through the separator and prefix clean-up.
  let digits: string;
  if (E164.test(number)) digits = number.charCodeAt(0) === 43 /* + */ ? number.slice(1) : number;
  else {
    // A name (sipp, anonymous) is no number: refused before any copy is made.
    if (NOT_NUMBER_CHAR.test(number)) return NO_ORIGIN;
    digits = number
      .replace(/[\s\-().]/g, '')
      .replace(/^\+/, '')
      .replace(/^00/, '');
    if (!DIGITS.test(digits)) return NO_ORIGIN;
  }
  let where: { country: string | null; regions: readonly string[] } | null = null;
  const resolve = () => (where ??= countryOf(digits));
  return {
    digits,
    get country() {
      return resolve().country;
    },
    get regions() {
      return resolve().regions;
    },
  };
}

/** Shared calling codes' answers by full number: callers repeat (a trunk's CLIs), and a parse costs ~10 µs. */
const sharedCodeMemo = new Map<string, string | null>();
const MEMO_MAX = 20_000;

function countryOf(digits: string): { country: string | null; regions: readonly string[] } {
  const country = countryOfDigits(digits);
  const regions = country === null ? [] : REGION_ORDER.filter((r) => REGIONS[r]!.has(country));
  return { country, regions };
}

function countryOfDigits(digits: string): string | null {
  let countries: string[] | undefined;
  for (let l = 1; l <= Math.min(3, digits.length) && countries === undefined; l++)
    countries = callingCodes[digits.slice(0, l)];
  if (countries === undefined) return null;
  // A calling code of one country names it whatever the rest of the number: no parse needed.
  if (countries.length === 1) return countries[0]!;
  const known = sharedCodeMemo.get(digits);
  if (known !== undefined) return known;
  const country = parsePhoneNumberFromString(`+${digits}`)?.country ?? countries[0] ?? null;
  if (sharedCodeMemo.size >= MEMO_MAX) sharedCodeMemo.clear();
  sharedCodeMemo.set(digits, country);
  return country;
}
