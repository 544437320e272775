import { Decimal } from 'decimal.js';
import type { Logger } from 'pino';
import type { Sql } from '../../db/connection.js';
import { ruleError } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import * as repo from './catalog-repo.js';
import type { CatalogQuery } from './catalog-repo.js';
import { patternDigits } from './number-pattern.js';

export const CATALOG_PAGE_SIZE = 25;

const num = (v: string) => new Decimal(v).toNumber();

export interface SummaryView {
  ready: boolean;
  refreshedAt: string | null;
  countries: number;
  groups: number;
  numbers: number;
  cheapestMonthlyByType: { typeId: string; typeName: string; monthlyPrice: number }[];
  cheapestMonthlyByCountry: { countryId: string; country: string; monthlyPrice: number }[];
}

/** The catalogue reads: groups with their SKUs, countries, types, pattern search, the cached summary. */
export function createCatalog(deps: { sql: Sql; clock: Clock; log: Logger }) {
  const { sql, clock, log } = deps;
  let summary: SummaryView = {
    ready: false,
    refreshedAt: null,
    countries: 0,
    groups: 0,
    numbers: 0,
    cheapestMonthlyByType: [],
    cheapestMonthlyByCountry: [],
  };

  return {
    async catalog(q: Omit<CatalogQuery, 'pageSize'>, opts: { withKyc: boolean }) {
      const { rows, total } = await repo.catalog(sql, { ...q, pageSize: CATALOG_PAGE_SIZE });
      const skus = await repo.skusOf(
        sql,
        rows.map((r) => r.groupId),
      );
      const groups = rows.map((g) => ({
        groupId: g.groupId,
        country: g.country,
        countryId: g.countryId,
        countryCode: g.countryCode,
        countryPrefix: g.countryPrefix,
        city: g.city,
        areaPrefix: g.areaPrefix,
        typeId: g.typeId,
        typeName: g.typeName,
        available: g.available,
        ...(opts.withKyc ? { requiresKyc: g.requiresKyc, graceDays: g.graceDays } : {}),
        skus: skus
          .filter((s) => s.groupId === g.groupId)
          .map((s) => ({
            skuId: s.skuId,
            channels: s.channels,
            setupPrice: num(s.setupPrice),
            monthlyPrice: num(s.monthlyPrice),
          })),
      }));
      return { groups, total, page: q.page };
    },

    countries: () => repo.countries(sql),
    types: () => repo.types(sql),

    async search(q: {
      pattern?: string | undefined;
      match?: repo.SearchQuery['match'] | undefined;
      vanity?: boolean | undefined;
      countryId?: string | undefined;
      typeId?: string | undefined;
      text?: string | undefined;
      limit: number;
    }) {
      const digits = patternDigits(q.pattern ?? '');
      if (digits === null) throw ruleError('pattern may hold digits and keypad letters only');
      const rows = await repo.search(sql, {
        pattern: digits,
        match: q.match ?? 'contains',
        vanity: q.vanity ?? false,
        countryId: q.countryId,
        typeId: q.typeId,
        text: q.text,
        limit: q.limit,
      });
      const truncated = rows.length > q.limit;
      const hits = rows.slice(0, q.limit).map((r) => ({
        id: r.id,
        number: r.number,
        groupId: r.groupId,
        country: r.country,
        countryId: r.countryId,
        countryCode: r.countryCode,
        countryPrefix: r.countryPrefix,
        city: r.city,
        areaPrefix: r.areaPrefix,
        typeId: r.typeId,
        typeName: r.typeName,
        dialingPrefix: r.countryPrefix + (r.areaPrefix ?? ''),
        vanity: r.vanity,
      }));
      // One indexed read answers a search: a page of at most `limit` hits.
      return { hits, scannedPages: 1, truncated };
    },

    summary: () => summary,

    /** Recomputes the public summary (every `summary_refresh_seconds`; `ready` is false until the first). */
    async refreshSummary() {
      const s = await repo.summary(sql);
      summary = {
        ready: true,
        refreshedAt: clock.now().toISOString(),
        countries: s.counts.countries,
        groups: s.counts.groups,
        numbers: Number(s.counts.numbers),
        cheapestMonthlyByType: s.byType.map((t) => ({
          typeId: t.typeId,
          typeName: t.typeName,
          monthlyPrice: num(t.cheapestMonthly),
        })),
        cheapestMonthlyByCountry: s.byCountry.map((c) => ({
          countryId: c.countryId,
          country: c.country,
          monthlyPrice: num(c.cheapestMonthly),
        })),
      };
      log.debug({ groups: summary.groups }, 'number catalogue summary refreshed');
    },
  };
}

export type Catalog = ReturnType<typeof createCatalog>;
