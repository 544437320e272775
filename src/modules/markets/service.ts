import { getCountryCallingCode } from 'libphonenumber-js';
import type { CountryCode } from 'libphonenumber-js';
import type { Clock } from '../../platform/clock.js';
import type { RoutesService } from '../routes/service.js';

export interface DestinationItem {
  slug: string;
  country: string;
  countryCode: string;
  routes: number;
  lowest: string;
  lowestBand: 'mobile' | 'fixed' | 'countryWide';
  unit: 'min' | 'msg';
}

/** Rebuilt at most this often (spec "Markets": max-age 600). */
export const DESTINATIONS_TTL_MS = 600_000;

const regionNames = new Intl.DisplayNames(['en'], { type: 'region' });
const slugOf = (name: string): string => name.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');

function dialCode(iso: string): string {
  try {
    return getCountryCallingCode(iso as CountryCode);
  } catch {
    return '';
  }
}

/**
 * The band of the cheapest row: a row on the bare country code prices the whole country; a row
 * whose destination name says mobile is the mobile band; any other row is taken as fixed.
 */
function bandOf(destination: string, prefix: string, code: string): DestinationItem['lowestBand'] {
  if (prefix === code) return 'countryWide';
  return /mobile|cellular|gsm/i.test(destination) ? 'mobile' : 'fixed';
}

/** Markets reads over the public catalogue (list prices before the platform fee). */
export function createMarketsService(deps: { clock: Clock; routes: RoutesService }) {
  let cached: { at: number; voice: DestinationItem[]; sms: DestinationItem[]; updatedAt: string } | null = null;

  return {
    async destinations() {
      const now = deps.clock.now().getTime();
      if (cached !== null && now - cached.at < DESTINATIONS_TTL_MS) return cached;
      const rows = await deps.routes.marketDestinations();
      const voice: DestinationItem[] = [];
      const sms: DestinationItem[] = [];
      for (const r of rows) {
        const code = dialCode(r.country);
        const name = regionNames.of(r.country) ?? r.country;
        const item: DestinationItem = {
          slug: slugOf(name), country: name, countryCode: code, routes: r.routes, lowest: r.lowest,
          lowestBand: bandOf(r.lowestDestination, r.lowestPrefix, code), unit: r.type === 'voice' ? 'min' : 'msg',
        };
        (r.type === 'voice' ? voice : sms).push(item);
      }
      const byName = (a: DestinationItem, b: DestinationItem): number => a.country.localeCompare(b.country);
      cached = { at: now, voice: voice.sort(byName), sms: sms.sort(byName), updatedAt: new Date(now).toISOString() };
      return cached;
    },
  };
}

export type MarketsService = ReturnType<typeof createMarketsService>;
