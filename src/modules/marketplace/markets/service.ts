import { getCountryCallingCode } from 'libphonenumber-js';
import type { CountryCode } from 'libphonenumber-js';
import type { Clock } from '../../../platform/clock.js';
import { Decimal } from 'decimal.js';
import { notFound } from '../../../http/errors.js';
import type { RoutesService } from '../listings/service.js';
import { countryName } from '../../../platform/country-names.js';

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

const slugOf = (name: string): string =>
  name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');

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

function isoBySlug(slug: string, isos: readonly string[]): string | undefined {
  return isos.find((iso) => slugOf(countryName(iso) ?? iso) === slug);
}

/** "United Kingdom Mobile Vodafone" → "Vodafone"; empty when the name holds no operator. */
function operatorOf(destination: string, country: string): string {
  let rest = destination.trim();
  if (rest.toLowerCase().startsWith(country.toLowerCase())) rest = rest.slice(country.length);
  return rest
    .replace(/\b(mobile|cellular|gsm|fixed|landline|proper|other|others)\b/gi, ' ')
    .replace(/[-–,()]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/** Markets reads over the public catalogue (list prices before the platform fee). */
/** Measured answer rate over public routes' real buyer calls since a time (from CDRs). */
export type MarketActivity = (since: Date) => Promise<{ calls: number; answered: number }>;

const DAY_MS = 86_400_000;
/** Below this many calls the market-wide measured ASR is not shown. */
export const MIN_ACTIVITY_CALLS = 50;
const TOP_ROUTES = 5;
const MAX_OPERATORS = 12;
const MAX_RELATED = 5;

export function createMarketsService(deps: { clock: Clock; routes: RoutesService; activity?: MarketActivity }) {
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
        const name = countryName(r.country) ?? r.country;
        const item: DestinationItem = {
          slug: slugOf(name),
          country: name,
          countryCode: code,
          routes: r.routes,
          lowest: r.lowest,
          lowestBand: bandOf(r.lowestDestination, r.lowestPrefix, code),
          unit: r.type === 'voice' ? 'min' : 'msg',
        };
        (r.type === 'voice' ? voice : sms).push(item);
      }
      const byName = (a: DestinationItem, b: DestinationItem): number => a.country.localeCompare(b.country);
      cached = { at: now, voice: voice.sort(byName), sms: sms.sort(byName), updatedAt: new Date(now).toISOString() };
      return cached;
    },

    /**
     * Marketplace summary (spec "Market records"). Public figures: counts of public active routes
     * and destinations, the measured ASR over the last 7 days of real buyer calls on public routes
     * (null below 50 calls), the five countries with most new public listings in 7 days
     * (`topMovers`), `marketStatus` (`open` with routes, else `empty`). Signed-in callers also get
     * `capacity` (sum of stated channels of voice routes), `avgAsr` and `avgAcd` (means of stated
     * figures of voice routes) and `avgPrice` (mean of voice routes' lowest list price); else null.
     */
    async summary(signedIn: boolean) {
      const now = deps.clock.now();
      const since = new Date(now.getTime() - 7 * DAY_MS);
      const s = await deps.routes.marketSummary(since);
      const act = deps.activity === undefined ? { calls: 0, answered: 0 } : await deps.activity(since);
      const enough = act.calls >= MIN_ACTIVITY_CALLS;
      const toNum = (x: string | null): number | null => (x === null ? null : Number(x));
      return {
        routes: s.routes,
        destinations: s.destinations,
        voiceRoutes: s.voiceRoutes,
        smsRoutes: s.smsRoutes,
        hasRoutes: s.routes > 0,
        hasActivityData: enough,
        capacity: signedIn ? (s.capacity === null ? 0 : Number(s.capacity)) : null,
        avgAsr: signedIn ? toNum(s.avgAsr) : null,
        measuredAsr: enough ? Math.round((act.answered / act.calls) * 10_000) / 100 : null,
        measuredAsrSample: act.calls,
        avgAcd: signedIn ? toNum(s.avgAcd) : null,
        avgPrice: signedIn ? s.avgPrice : null,
        topMovers: s.movers.map((m) => {
          const name = countryName(m.country) ?? m.country;
          return { slug: slugOf(name), country: name, countryCode: dialCode(m.country), newRoutes: m.newRoutes };
        }),
        marketStatus: s.routes > 0 ? ('open' as const) : ('empty' as const),
        asOf: now.toISOString(),
      };
    },

    /**
     * One destination by slug (spec "Markets"): 404 when it has no live public route of `type`.
     * Stated ASR and ACD only. Bands by the row's prefix and name (see bandOf); operators are the
     * mobile breakouts' names without the country and band words, kept when two routes price them;
     * `otherBreakouts` counts the remaining distinct destination names; `related` lists up to five
     * destinations of the same type in the same dial-code zone (first digit), cheapest first.
     */
    async destination(slug: string, type: 'voice' | 'sms') {
      const list = await this.destinations();
      const items = type === 'voice' ? list.voice : list.sms;
      const item = items.find((i) => i.slug === slug);
      const iso =
        item === undefined
          ? undefined
          : isoBySlug(
              item.slug,
              (await deps.routes.marketDestinations()).map((r) => r.country),
            );
      const rows = iso === undefined ? [] : await deps.routes.marketRows(iso, type);
      if (item === undefined || iso === undefined || rows.length === 0) throw notFound('Destination');
      const code = dialCode(iso);
      const min = (a: string | null, b: string): string => (a === null || new Decimal(b).lt(a) ? b : a);
      const bands = new Map<string, { from: string; routes: Set<string> }>();
      const operators = new Map<string, { from: string; routes: Set<string> }>();
      const perRoute = new Map<
        string,
        {
          from: string;
          mobileFrom: string | null;
          high: string;
          cliType: string | null;
          billingIncrement: string;
          asr: string | null;
          acd: string | null;
        }
      >();
      const breakouts = new Set<string>();
      let highest: string | null = null;
      for (const r of rows) {
        const band = bandOf(r.destination, r.prefix, code);
        const b = bands.get(band) ?? { from: r.rate, routes: new Set<string>() };
        b.from = min(b.from, r.rate);
        b.routes.add(r.routeId);
        bands.set(band, b);
        if (highest === null || new Decimal(r.rate).gt(highest)) highest = r.rate;
        const op = band === 'mobile' ? operatorOf(r.destination, item.country) : '';
        if (op !== '') {
          const o = operators.get(op) ?? { from: r.rate, routes: new Set<string>() };
          o.from = min(o.from, r.rate);
          o.routes.add(r.routeId);
          operators.set(op, o);
        }
        breakouts.add(r.destination);
        const pr = perRoute.get(r.routeId) ?? {
          from: r.rate,
          mobileFrom: null,
          high: r.rate,
          cliType: r.cliType,
          billingIncrement: r.billingIncrement,
          asr: r.expectedAsr,
          acd: r.expectedAcd,
        };
        pr.from = min(pr.from, r.rate);
        if (band === 'mobile') pr.mobileFrom = min(pr.mobileFrom, r.rate);
        perRoute.set(r.routeId, pr);
      }
      const byFrom = <T extends { from: string }>(a: T, b: T): number => new Decimal(a.from).cmp(b.from);
      const ops = [...operators]
        .filter(([, o]) => o.routes.size >= 2)
        .map(([name, o]) => ({ name, from: o.from, routes: o.routes.size }))
        .sort((a, b) => byFrom(a, b) || a.name.localeCompare(b.name))
        .slice(0, MAX_OPERATORS);
      const opNames = new Set(ops.map((o) => o.name));
      const routesList = [...perRoute.values()];
      const zone = code.slice(0, 1);
      return {
        ...item,
        type,
        highest: highest!,
        bands: [...bands]
          .map(([key, b]) => ({ key, from: b.from, routes: b.routes.size }))
          .sort((a, b) => byFrom(a, b) || a.key.localeCompare(b.key)),
        operators: ops,
        cliTypes: [...new Set(routesList.map((r) => r.cliType).filter((c): c is string => c !== null))].sort(),
        increments: [...new Set(rows.map((r) => r.increment))].sort(),
        routesWithStatedAsr: routesList.filter((r) => r.asr !== null).length,
        otherBreakouts: [...breakouts].filter((d) => !opNames.has(operatorOf(d, item.country))).length,
        topRoutes: routesList
          .sort(byFrom)
          .slice(0, TOP_ROUTES)
          .map((r, i) => ({
            rank: i + 1,
            from: r.from,
            mobileFrom: r.mobileFrom,
            cliType: r.cliType,
            billingIncrement: r.billingIncrement,
            routeType: type,
            statedAsr: r.asr === null ? null : Number(r.asr),
            statedAcd: r.acd === null ? null : Number(r.acd),
          })),
        related: items
          .filter((i) => i.slug !== slug && zone !== '' && i.countryCode.startsWith(zone))
          .sort((a, b) => new Decimal(a.lowest).cmp(b.lowest) || a.slug.localeCompare(b.slug))
          .slice(0, MAX_RELATED)
          .map((i) => ({ slug: i.slug, country: i.country, lowest: i.lowest })),
      };
    },
  };
}

export type MarketsService = ReturnType<typeof createMarketsService>;
