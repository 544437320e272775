/**
 * Number lookup (spec "Number lookup", resource "Number lookup"): what the exchange knows of a
 * number offline, with no carrier query: the numbering plan (libphonenumber's full metadata), the
 * range's mobile network, the cheapest route the caller can see and a risk view.
 */
import { parsePhoneNumberFromString, type NumberType } from 'libphonenumber-js/max';
import { networkFor } from '../../messaging/index.js';
import type { Clock } from '../../platform/clock.js';
import type { Routing } from '../marketplace/routing/routing.js';
import type { CheapestRoute } from '../marketplace/routing/cheapest-visible.js';
import { rangesOf, riskOf, type Risk } from './risk.js';
import { createGrowingLru } from '../../platform/growing-lru.js';
import { countryName } from '../../platform/country-names.js';

const CACHE_MS = 10 * 60_000;
/** Sellers whose decks must name the same destination before it is given as the operator (spec). */
const OPERATOR_QUORUM = 3;
const GENERIC_DESTINATIONS = /^(mobile|fixed|landline|proper|other|rest|all|premium|special|toll[ -]?free)$/i;

export type NumberKind = 'mobile' | 'fixed' | 'toll_free' | 'premium' | 'unknown';

export interface LookupResult {
  input: string;
  valid: boolean;
  reason: string | null;
  e164: string | null;
  internationalFormat: string | null;
  country: { iso: string | null; name: string; dialCode: string; basis: 'rate_decks' | 'dial_code' } | null;
  numberType: NumberKind;
  numberTypeConfidence: number;
  operator: string | null;
  network: { mccMnc: string | null; operator: string; source: 'range' } | null;
  matchedPrefix: string | null;
  risk: Risk;
  pricing: { voice: VoicePricing | null; sms: SmsPricing | null };
  method: 'prefix';
  cachedAt: string;
}

interface VoicePricing {
  rate: string;
  currency: 'USD';
  unit: 'min' | 'msg';
  billingIncrement: string | null;
  destination: string;
  routeId: string;
  routesServing: number;
}

interface SmsPricing extends VoicePricing {
  network: {
    mccMnc: string | null;
    operator: string | null;
    source: 'range' | 'none';
    rateBasis: 'network' | 'all_operators' | 'country';
  };
  countryRate: string | null;
}

/** libphonenumber's type as the spec's, with how sure the plan is of it. */
function kindOf(type: NumberType, onMobileRange: boolean): { kind: NumberKind; confidence: number } {
  switch (type) {
    case 'MOBILE':
      return { kind: 'mobile', confidence: 1 };
    case 'FIXED_LINE':
      return { kind: 'fixed', confidence: 1 };
    // Plans such as the NANP do not tell the two apart; a range with a mobile network says mobile.
    case 'FIXED_LINE_OR_MOBILE':
      return onMobileRange ? { kind: 'mobile', confidence: 0.7 } : { kind: 'fixed', confidence: 0.5 };
    case 'TOLL_FREE':
      return { kind: 'toll_free', confidence: 1 };
    case 'PREMIUM_RATE':
      return { kind: 'premium', confidence: 1 };
    default:
      return { kind: 'unknown', confidence: 0 };
  }
}

/** `+` or `00`, then digits; spaces, dashes (and dots and brackets, as people write them) ignored. */
function normalise(input: string): { digits: string } | { reason: string } {
  const s = input.trim().replace(/[\s\-.()]/g, '');
  if (s === '') return { reason: 'empty' };
  let rest: string;
  if (s.startsWith('+')) rest = s.slice(1);
  else if (s.startsWith('00')) rest = s.slice(2);
  else return { reason: 'not_international: start with + or 00 and the country code' };
  if (!/^\d+$/.test(rest)) return { reason: 'invalid_characters: only digits after the prefix' };
  if (rest.length > 15) return { reason: 'too_long: E.164 numbers have at most 15 digits' };
  if (rest.length < 3) return { reason: 'too_short' };
  return { digits: rest };
}

/** The destination most sellers' decks agree on, when at least three do and it names an operator. */
function agreedOperator(bySeller: Map<string, string>[]): string | null {
  const votes = new Map<string, Set<string>>();
  for (const m of bySeller)
    for (const [seller, destination] of m) {
      const parts = destination.split(/\s+-\s+/);
      const tail = parts.length > 1 ? parts[parts.length - 1]!.trim() : '';
      if (tail === '' || GENERIC_DESTINATIONS.test(tail)) continue;
      const key = tail.toLowerCase();
      if (!votes.has(key)) votes.set(key, new Set());
      votes.get(key)!.add(`${seller}\u0000${tail}`);
    }
  let best: { name: string; n: number } | null = null;
  for (const v of votes.values()) {
    const sellers = new Set([...v].map((x) => x.split('\u0000')[0]));
    const name = [...v][0]!.split('\u0000')[1]!;
    if (sellers.size >= OPERATOR_QUORUM && (best === null || sellers.size > best.n)) best = { name, n: sellers.size };
  }
  return best?.name ?? null;
}

const pricingOf = (c: CheapestRoute): VoicePricing => ({
  rate: c.rate,
  currency: 'USD',
  unit: c.unit,
  billingIncrement: c.billingIncrement,
  destination: c.destination,
  routeId: c.routeId,
  routesServing: c.routesServing,
});

export function createLookupService(deps: { routing: Pick<Routing, 'cheapestVisible'>; clock: Clock }) {
  const { clock } = deps;
  // Keyed by caller as well: the prices depend on the routes the caller bought or owns.
  const cache = createGrowingLru<string, LookupResult>(20_000, { ttl: CACHE_MS });

  async function compute(input: string, accountId: string | null): Promise<Omit<LookupResult, 'input'>> {
    const now = clock.now().toISOString();
    const n = normalise(input);
    const empty = {
      e164: null,
      internationalFormat: null,
      country: null,
      numberType: 'unknown' as const,
      numberTypeConfidence: 0,
      operator: null,
      network: null,
      matchedPrefix: null,
      pricing: { voice: null, sms: null },
      method: 'prefix' as const,
      cachedAt: now,
    };
    if ('reason' in n)
      return { ...empty, valid: false, reason: n.reason, risk: riskOf('', { premium: false, shortCode: false }) };
    const { digits } = n;
    const parsed = parsePhoneNumberFromString(`+${digits}`);
    if (!parsed)
      return {
        ...empty,
        valid: false,
        reason: 'unknown_country_code',
        risk: riskOf(digits, { premium: false, shortCode: false }),
      };
    const valid = parsed.isValid();
    const type = valid ? parsed.getType() : undefined;
    const range = networkFor(`+${digits}`);
    const { kind, confidence } = type
      ? kindOf(type, range?.mccMnc != null)
      : { kind: 'unknown' as const, confidence: 0 };
    const shortCode = !valid && parsed.nationalNumber.length <= 6;
    const risk = riskOf(digits, { premium: type === 'PREMIUM_RATE', shortCode });
    const [voice, sms] = await Promise.all([
      deps.routing.cheapestVisible({ digits, type: 'voice', accountId, mccMnc: null }),
      deps.routing.cheapestVisible({ digits, type: 'sms', accountId, mccMnc: range?.mccMnc ?? null }),
    ]);
    const possible = parsed.getPossibleCountries();
    const iso = parsed.country ?? (possible.length === 1 ? possible[0]! : null);
    const deckName = voice?.destination ?? sms?.destination ?? null;
    const shared = rangesOf(digits).find((r) => r.kind !== 'embargoed');
    const country = {
      iso,
      name: iso ? (countryName(iso) ?? iso) : (shared?.name ?? deckName ?? `+${parsed.countryCallingCode}`),
      dialCode: `+${parsed.countryCallingCode}`,
      basis: iso === null && !shared && deckName ? ('rate_decks' as const) : ('dial_code' as const),
    };
    return {
      valid,
      reason: valid ? null : shortCode ? 'short_code: too short for a subscriber number' : 'invalid_number',
      e164: `+${digits}`,
      internationalFormat: parsed.formatInternational(),
      country,
      numberType: kind,
      numberTypeConfidence: confidence,
      operator: agreedOperator([voice?.destinationsBySeller ?? new Map(), sms?.destinationsBySeller ?? new Map()]),
      network: range ? { mccMnc: range.mccMnc, operator: range.name, source: 'range' as const } : null,
      matchedPrefix: [voice?.matchedPrefix, sms?.matchedPrefix].reduce<string | null>(
        (a, p) => (p !== undefined && (a === null || p.length > a.length) ? p : a),
        null,
      ),
      risk,
      pricing: {
        voice: voice ? pricingOf(voice) : null,
        sms: sms
          ? {
              ...pricingOf(sms),
              network: {
                mccMnc: range?.mccMnc ?? null,
                operator: range?.name ?? null,
                source: range ? ('range' as const) : ('none' as const),
                rateBasis:
                  sms.sms?.rateBasis === 'network' ? 'network' : range?.mccMnc ? 'country' : ('all_operators' as const),
              },
              countryRate: sms.sms?.countryRate ?? null,
            }
          : null,
      },
      method: 'prefix',
      cachedAt: now,
    };
  }

  return {
    /** GET /lookup/{number}: answers are kept for ten minutes per caller and normalised number. */
    async lookup(input: string, caller: { accountId: string } | null): Promise<LookupResult> {
      const n = normalise(input);
      const key = `${caller?.accountId ?? '-'}:${'digits' in n ? n.digits : `!${input}`}`;
      const hit = cache.get(key);
      if (hit) return { ...hit, input };
      const result = { input, ...(await compute(input, caller?.accountId ?? null)) };
      cache.set(key, result);
      return result;
    },
  };
}

export type LookupService = ReturnType<typeof createLookupService>;
