import metadata from 'libphonenumber-js/metadata.min.json';
import type { Sql } from '../../../db/connection.js';
import { notFound, ruleError, validationError } from '../../../http/errors.js';
import { networkFor, networkName, networksUnder } from '../../../messaging/network.js';
import type { Clock } from '../../../platform/clock.js';
import { callerOrigin, createPrefixIndex, parseOrigin, rowKey, type NewSheetEntry } from '../../../rating/index.js';
import type { LiveRateRow } from '../listings/repo.js';
import { liveEntry } from '../listings/service.js';
import type { RoutesService, SheetUpload } from '../listings/service.js';
import { listJobs, type SheetChangeCounts } from './sheet-jobs.js';
import { countryName } from '../../../platform/country-names.js';

/** Rows one row edit or removal may name. */
export const MAX_ROW_EDITS = 1000;
/** Routes one bulk upload may write (each is a deck write of its own). */
export const MAX_BULK_SHEET_ROUTES = 100;

const callingCodes = (metadata as unknown as { country_calling_codes: Record<string, string[]> }).country_calling_codes;
const nameOf = (iso: string): string => countryName(iso) ?? iso;

/** The country calling code a prefix falls under (longest of 1 to 3 digits), or null. */
export function callingCodeOf(prefix: string): string | null {
  for (let l = Math.min(3, prefix.length); l >= 1; l--) if (callingCodes[prefix.slice(0, l)]) return prefix.slice(0, l);
  return null;
}

export const TEMPLATES = [
  {
    name: 'az-voice',
    type: 'voice',
    description:
      'A-Z voice: one country default row per calling code (the country-wide price); add longer prefixes for bands',
    needsCountry: false,
  },
  {
    name: 'az-sms',
    type: 'sms',
    description: 'A-Z SMS: one country price row per calling code',
    needsCountry: false,
  },
  {
    name: 'sms-networks',
    type: 'sms',
    description:
      'Per-network SMS for one country (`country`): the country price row and one row per known mobile network (mcc_mnc), never above the country price',
    needsCountry: true,
  },
] as const;
export type TemplateName = (typeof TEMPLATES)[number]['name'];

interface SnapshotRow {
  prefix: string;
  mccMnc: string;
  origin: string;
  destination: string;
  rate: string;
  increment: string;
}

const keyOf = (prefix: string, mccMnc: string | null, origin: string | null) =>
  rowKey({ prefix, mccMnc: mccMnc === '' ? null : mccMnc, origin: origin === '' ? null : origin });

/** An origin as a request names it, in the sheet's normal form (`fr` → `FR`); unknown text is kept, to match nothing. */
const originOf = (o: string | null | undefined): string | null =>
  o === null || o === undefined || o === '' ? null : (parseOrigin(o)?.origin ?? o);

/**
 * The rate-sheet tools beyond upload and download: versions (each change of a sheet, readable as
 * the rows in force when it was made), the diff of two versions, restoring one, row edits and
 * removals without a whole sheet, bulk upload of one sheet to many routes, the A-Z view by
 * country with its defaults, the per-network SMS view, the price of one number on the sheet,
 * the route's upload jobs, and sheet templates. Every change goes through the upload's rules
 * (notice for increases and removals, `increaseEffectiveAt`, buyer notices).
 */
export function createSheetTools(deps: { sql: Sql; clock: Clock; routes: RoutesService }) {
  const { sql, clock, routes } = deps;

  const own = async (routeId: string, sellerId: string) => {
    const r = await routes.visibleRoute(routeId, sellerId);
    if (r === undefined || r.sellerId !== sellerId || r.blend) throw notFound('Route');
    return r;
  };
  const visible = async (routeId: string, viewerId: string) => {
    const r = await routes.visibleRoute(routeId, viewerId);
    if (r === undefined || r.blend) throw notFound('Route');
    return r;
  };

  interface VersionRow extends SheetChangeCounts {
    number: number;
    kind: string;
    createdAt: Date;
    firstScheduledAt: Date | null;
    restoredFrom: number | null;
  }
  const versionView = (v: VersionRow) => ({
    ...v,
    createdAt: v.createdAt.toISOString(),
    firstScheduledAt: v.firstScheduledAt?.toISOString() ?? null,
  });
  const findVersion = async (routeId: string, number: number) => {
    const [v] = await sql<VersionRow[]>`
      select number, kind, created_at, rows, increases, decreases, new_destinations, removals, updates, unchanged,
        scheduled_changes, first_scheduled_at, restored_from
      from rate_sheet_versions where route_id = ${routeId} and number = ${number}`;
    if (v === undefined) throw notFound('Rate sheet version');
    return v;
  };
  const latestNumber = async (routeId: string): Promise<number | null> => {
    const [row] = await sql<
      { n: number | null }[]
    >`select max(number) as n from rate_sheet_versions where route_id = ${routeId}`;
    return row?.n ?? null;
  };
  const snapshot = (routeId: string, at: Date) => sql<SnapshotRow[]>`
    select prefix, mcc_mnc, origin, destination, rate::numeric(20,6)::text as rate, increment
    from rate_rows
    where route_id = ${routeId} and effective_from <= ${at} and (effective_to is null or effective_to > ${at})
    order by prefix, mcc_mnc, origin`;

  /** Applies `change` to the rows in force (row edits and removals). */
  const editRows = (
    sellerId: string,
    routeId: string,
    change: (byKey: Map<string, NewSheetEntry>) => void,
    increaseEffectiveAt: string | undefined,
  ) =>
    routes.applySheet(
      sellerId,
      routeId,
      (live: LiveRateRow[]) => {
        const byKey = new Map(live.map((r) => [keyOf(r.prefix, r.mccMnc, r.origin), liveEntry(r)]));
        change(byKey);
        return [...byKey.values()];
      },
      { kind: 'rows', ...(increaseEffectiveAt === undefined ? {} : { increaseEffectiveAt }) },
    );

  return {
    async versions(sellerId: string, routeId: string, q: { limit: number; offset: number }) {
      await own(routeId, sellerId);
      const rows = await sql<(VersionRow & { total: string })[]>`
        select number, kind, created_at, rows, increases, decreases, new_destinations, removals, updates, unchanged,
          scheduled_changes, first_scheduled_at, restored_from, count(*) over () as total
        from rate_sheet_versions where route_id = ${routeId}
        order by number desc limit ${q.limit} offset ${q.offset}`;
      return {
        rows: rows.map(({ total: _t, ...v }) => versionView(v)),
        total: rows.length === 0 ? 0 : Number(rows[0]!.total),
        limit: q.limit,
        offset: q.offset,
      };
    },

    /** One version with a page of its rows: the rates in force the moment it was made. */
    async version(sellerId: string, routeId: string, number: number, q: { limit: number; offset: number }) {
      await own(routeId, sellerId);
      const v = await findVersion(routeId, number);
      const rows = await sql<(SnapshotRow & { total: string })[]>`
        select prefix, mcc_mnc, origin, destination, rate::numeric(20,6)::text as rate, increment, count(*) over () as total
        from rate_rows
        where route_id = ${routeId} and effective_from <= ${v.createdAt}
          and (effective_to is null or effective_to > ${v.createdAt})
        order by prefix, mcc_mnc, origin limit ${q.limit} offset ${q.offset}`;
      return {
        version: versionView(v),
        rows: rows.map(({ total: _t, mccMnc, origin, ...r }) => ({
          ...r,
          mccMnc: mccMnc === '' ? null : mccMnc,
          origin: origin === '' ? null : origin,
        })),
        total: rows.length === 0 ? 0 : Number(rows[0]!.total),
        limit: q.limit,
        offset: q.offset,
      };
    },

    /** What changed from version `from` to version `to` (default the latest), row by row. */
    async diff(
      sellerId: string,
      routeId: string,
      q: { from: number; to?: number; change?: string[]; limit: number; offset: number },
    ) {
      await own(routeId, sellerId);
      const toNumber = q.to ?? (await latestNumber(routeId));
      if (toNumber === null) throw notFound('Rate sheet version');
      const [a, b] = [await findVersion(routeId, q.from), await findVersion(routeId, toNumber)];
      const kinds = q.change ?? ['added', 'removed', 'increase', 'decrease', 'updated'];
      const diffRows = sql`
        with a as (
          select prefix, mcc_mnc, origin, destination, rate, increment from rate_rows
          where route_id = ${routeId} and effective_from <= ${a.createdAt} and (effective_to is null or effective_to > ${a.createdAt})
        ), b as (
          select prefix, mcc_mnc, origin, destination, rate, increment from rate_rows
          where route_id = ${routeId} and effective_from <= ${b.createdAt} and (effective_to is null or effective_to > ${b.createdAt})
        )
        select coalesce(a.prefix, b.prefix) as prefix, coalesce(a.mcc_mnc, b.mcc_mnc) as mcc_mnc,
          coalesce(a.origin, b.origin) as origin,
          a.destination as before_destination, a.rate::numeric(20,6)::text as before_rate, a.increment as before_increment,
          b.destination as after_destination, b.rate::numeric(20,6)::text as after_rate, b.increment as after_increment,
          case when a.prefix is null then 'added' when b.prefix is null then 'removed'
            when b.rate > a.rate then 'increase' when b.rate < a.rate then 'decrease'
            when a.destination <> b.destination or a.increment <> b.increment then 'updated' else 'unchanged' end as change
        from a full join b on a.prefix = b.prefix and a.mcc_mnc = b.mcc_mnc and a.origin = b.origin`;
      const counts = await sql<{ change: string; n: string }[]>`
        select change, count(*) as n from (${diffRows}) d group by change`;
      const rows = await sql<
        {
          prefix: string;
          mccMnc: string;
          origin: string;
          change: string;
          beforeDestination: string | null;
          beforeRate: string | null;
          beforeIncrement: string | null;
          afterDestination: string | null;
          afterRate: string | null;
          afterIncrement: string | null;
          total: string;
        }[]
      >`
        select *, count(*) over () as total from (${diffRows}) d where change = any (${sql.array(kinds)}::text[])
        order by prefix, mcc_mnc, origin limit ${q.limit} offset ${q.offset}`;
      const count = (k: string) => Number(counts.find((c) => c.change === k)?.n ?? 0);
      const side = (destination: string | null, rate: string | null, increment: string | null) =>
        destination === null ? null : { destination, rate: rate!, increment: increment! };
      return {
        from: versionView(a),
        to: versionView(b),
        counts: {
          added: count('added'),
          removed: count('removed'),
          increases: count('increase'),
          decreases: count('decrease'),
          updated: count('updated'),
          unchanged: count('unchanged'),
        },
        rows: rows.map((r) => ({
          prefix: r.prefix,
          mccMnc: r.mccMnc === '' ? null : r.mccMnc,
          origin: r.origin === '' ? null : r.origin,
          change: r.change,
          before: side(r.beforeDestination, r.beforeRate, r.beforeIncrement),
          after: side(r.afterDestination, r.afterRate, r.afterIncrement),
        })),
        total: rows.length === 0 ? 0 : Number(rows[0]!.total),
        limit: q.limit,
        offset: q.offset,
      };
    },

    /** Makes an old version's rows the sheet again, under the upload's notice rules. */
    async restore(sellerId: string, routeId: string, number: number, increaseEffectiveAt?: string) {
      await own(routeId, sellerId);
      const v = await findVersion(routeId, number);
      // A restored sheet can be as large as any upload: it takes an upload slot (429 when none is free).
      const release = routes.acquireUploadSlot(sellerId);
      try {
        const rows = (await snapshot(routeId, v.createdAt)).map(liveEntry);
        return await routes.applySheet(sellerId, routeId, () => rows, {
          kind: 'restore',
          restoredFrom: number,
          ...(increaseEffectiveAt === undefined ? {} : { increaseEffectiveAt }),
        });
      } finally {
        release();
      }
    },

    /** Adds or changes rows (by prefix and network), leaving every other row as it is. */
    async upsertRows(sellerId: string, routeId: string, body: { rows: unknown[]; increaseEffectiveAt?: string }) {
      const parsed = await routes.parseRows(sellerId, routeId, { format: 'json', rows: body.rows });
      if (parsed.errors.length > 0)
        throw validationError(parsed.errors.map((e) => ({ path: `/rows/${e.line - 1}`, message: e.reason })));
      return editRows(
        sellerId,
        routeId,
        (byKey) => {
          for (const r of parsed.rows) byKey.set(keyOf(r.prefix, r.mccMnc, r.origin), r);
        },
        body.increaseEffectiveAt,
      );
    },

    /** Takes destinations off the sheet: a removal waits for the notice period as an increase does. */
    async removeRows(
      sellerId: string,
      routeId: string,
      body: {
        rows: { prefix: string; mccMnc?: string | null; origin?: string | null }[];
        increaseEffectiveAt?: string;
      },
    ) {
      await own(routeId, sellerId);
      return editRows(
        sellerId,
        routeId,
        (byKey) => {
          const missing = body.rows.flatMap((r, i) =>
            byKey.has(keyOf(r.prefix, r.mccMnc ?? null, originOf(r.origin)))
              ? []
              : [{ path: `/rows/${i}/prefix`, message: 'not a row in force on this sheet' }],
          );
          if (missing.length > 0) throw validationError(missing);
          for (const r of body.rows) byKey.delete(keyOf(r.prefix, r.mccMnc ?? null, originOf(r.origin)));
        },
        body.increaseEffectiveAt,
      );
    },

    /**
     * One sheet onto many own routes. Each route's sheet is checked first; any bad row or route
     * refuses the whole request before anything is written (400 with the route and line). Each
     * route is then replaced in a transaction of its own, under the upload's rules.
     */
    async bulkUpload(
      sellerId: string,
      body: SheetUpload & { routeIds: string[]; dryRun?: boolean },
      maxSyncRows: number,
    ) {
      const ids = [...new Set(body.routeIds)];
      const upload: SheetUpload = {
        format: body.format,
        ...(body.csv === undefined ? {} : { csv: body.csv }),
        ...(body.rows === undefined ? {} : { rows: body.rows }),
      };
      const problems: { path: string; message: string }[] = [];
      const parsed: { routeId: string; rows: readonly NewSheetEntry[] }[] = [];
      for (const [i, id] of ids.entries()) {
        const r = await routes.visibleRoute(id, sellerId);
        if (r === undefined || r.sellerId !== sellerId || r.blend) {
          problems.push({ path: `/routeIds/${i}`, message: 'not an own route' });
          continue;
        }
        const p = await routes.parseRows(sellerId, id, upload);
        for (const e of p.errors.slice(0, 20))
          problems.push({ path: `/routeIds/${i}`, message: `line ${e.line}: ${e.reason}` });
        if (p.rows.length > maxSyncRows)
          problems.push({
            path: '/rows',
            message: `at most ${maxSyncRows} rows in a bulk upload; upload larger sheets per route`,
          });
        parsed.push({ routeId: id, rows: p.rows });
      }
      if (problems.length > 0) throw validationError(problems);
      if (body.dryRun)
        return { dryRun: true, routes: parsed.map((p) => ({ routeId: p.routeId, rows: p.rows.length, result: null })) };
      const out = [];
      for (const p of parsed) {
        const result = await routes.applySheet(sellerId, p.routeId, () => p.rows, {
          kind: 'bulk',
          ...(body.increaseEffectiveAt === undefined ? {} : { increaseEffectiveAt: body.increaseEffectiveAt }),
        });
        out.push({ routeId: p.routeId, rows: p.rows.length, result });
      }
      return { dryRun: false, routes: out };
    },

    /** The A-Z view: per country calling code, the rows, the price range and the country default. */
    async countries(viewerId: string, routeId: string, q: { limit: number; offset: number }) {
      await visible(routeId, viewerId);
      const rows = await snapshot(routeId, clock.now());
      const groups = new Map<
        string,
        { rows: number; networkRows: number; lowest: string | null; highest: string | null; def: SnapshotRow | null }
      >();
      const other = { rows: 0 };
      for (const r of rows) {
        const code = callingCodeOf(r.prefix);
        if (code === null) {
          other.rows++;
          continue;
        }
        const g = groups.get(code) ?? { rows: 0, networkRows: 0, lowest: null, highest: null, def: null };
        groups.set(code, g);
        if (r.mccMnc !== '') {
          g.networkRows++;
          continue;
        }
        g.rows++;
        const rate = Number(r.rate);
        if (g.lowest === null || rate < Number(g.lowest)) g.lowest = r.rate;
        if (g.highest === null || rate > Number(g.highest)) g.highest = r.rate;
        if (r.prefix === code && r.origin === '') g.def = r;
      }
      const all = [...groups].sort(([a], [b]) => a.localeCompare(b));
      return {
        countries: all.length,
        withoutDefault: all.filter(([, g]) => g.def === null).length,
        unplacedRows: other.rows,
        rows: all.slice(q.offset, q.offset + q.limit).map(([code, g]) => {
          const iso = callingCodes[code]![0]!;
          return {
            countryCode: code,
            country: iso,
            name: nameOf(iso),
            rows: g.rows,
            networkRows: g.networkRows,
            lowest: g.lowest,
            highest: g.highest,
            countryDefault:
              g.def === null ? null : { rate: g.def.rate, increment: g.def.increment, destination: g.def.destination },
          };
        }),
        total: all.length,
        limit: q.limit,
        offset: q.offset,
      };
    },

    /** The per-network view of an SMS sheet: each network's price beside its country price. */
    async networks(viewerId: string, routeId: string, q: { country?: string; limit: number; offset: number }) {
      await visible(routeId, viewerId);
      const now = clock.now();
      let prefix: string | null = null;
      if (q.country !== undefined) {
        prefix = Object.entries(callingCodes).find(([, isos]) => isos.includes(q.country!))?.[0] ?? null;
        if (prefix === null) throw validationError([{ path: '/country', message: 'unknown country' }]);
      }
      const rows = await sql<
        {
          prefix: string;
          mccMnc: string;
          destination: string;
          rate: string;
          increment: string;
          countryRate: string | null;
          total: string;
        }[]
      >`
        select n.prefix, n.mcc_mnc, n.destination, n.rate::numeric(20,6)::text as rate, n.increment,
          c.rate::numeric(20,6)::text as country_rate, count(*) over () as total
        from rate_rows n
        left join rate_rows c on c.route_id = n.route_id and c.prefix = n.prefix and c.mcc_mnc = '' and c.origin = ''
          and c.effective_from <= ${now} and (c.effective_to is null or c.effective_to > ${now})
        where n.route_id = ${routeId} and n.mcc_mnc <> ''
          and n.effective_from <= ${now} and (n.effective_to is null or n.effective_to > ${now})
          ${prefix === null ? sql`` : sql`and n.prefix like ${prefix + '%'}`}
        order by n.prefix, n.mcc_mnc limit ${q.limit} offset ${q.offset}`;
      return {
        rows: rows.map(({ total: _t, ...r }) => ({ ...r, network: networkName(r.mccMnc) })),
        total: rows.length === 0 ? 0 : Number(rows[0]!.total),
        limit: q.limit,
        offset: q.offset,
      };
    },

    /** The row of this sheet that prices a number now (and for SMS its network's row), and what is scheduled for it. */
    async lookup(viewerId: string, routeId: string, number: string, mccMnc: string | null, from: string | null = null) {
      const route = await visible(routeId, viewerId);
      const digits = number.replace(/^\+/, '');
      const now = clock.now();
      const network = route.type === 'sms' ? (mccMnc ?? networkFor(digits)?.mccMnc ?? null) : null;
      const rows = await sql<(SnapshotRow & { effectiveFrom: Date; effectiveTo: Date | null })[]>`
        select prefix, mcc_mnc, origin, destination, rate::numeric(20,6)::text as rate, increment, effective_from, effective_to
        from rate_rows
        where route_id = ${routeId} and ${digits} like prefix || '%' and (effective_to is null or effective_to > ${now})
          and (mcc_mnc = '' or mcc_mnc = ${network ?? ''})
        order by length(prefix) desc, mcc_mnc desc, effective_from`;
      const live = (r: (typeof rows)[number]) => r.effectiveFrom <= now;
      // The country row is chosen by the rating rule itself (origins included) over the few rows under the number.
      const liveCountry = rows.filter((r) => r.mccMnc === '' && live(r));
      const chosen = createPrefixIndex(liveCountry).lookupFrom(digits, callerOrigin(from));
      const country =
        chosen === undefined
          ? undefined
          : liveCountry.find((r) => r.prefix === chosen.prefix && r.origin === (chosen.origin ?? ''));
      const net = network === null ? undefined : rows.find((r) => r.mccMnc === network && live(r));
      const pricing = net ?? country;
      const view = (r: (typeof rows)[number]) => ({
        prefix: r.prefix,
        mccMnc: r.mccMnc === '' ? null : r.mccMnc,
        origin: r.origin === '' ? null : r.origin,
        destination: r.destination,
        rate: r.rate,
        increment: r.increment,
        effectiveFrom: r.effectiveFrom.toISOString(),
        effectiveTo: r.effectiveTo?.toISOString() ?? null,
      });
      const next =
        pricing === undefined
          ? undefined
          : rows.find(
              (r) =>
                r.prefix === pricing.prefix && r.mccMnc === pricing.mccMnc && r.origin === pricing.origin && !live(r),
            );
      return {
        number: digits,
        type: route.type,
        mccMnc: network,
        covered: pricing !== undefined,
        row: pricing === undefined ? null : view(pricing),
        countryRow: country === undefined || country === pricing ? null : view(country),
        scheduled: next === undefined ? null : view(next),
      };
    },

    async jobs(sellerId: string, routeId: string, q: { limit: number; offset: number }) {
      await own(routeId, sellerId);
      return listJobs(sql, routeId, sellerId, q);
    },

    templates: () => TEMPLATES.map((t) => ({ ...t })),

    /** A template's rows: the upload's columns with the rate left empty for the seller to fill. */
    template(name: string, country: string | undefined) {
      const t = TEMPLATES.find((x) => x.name === name);
      if (t === undefined) throw notFound('Rate sheet template');
      const rows: { prefix: string; destination: string; rate: string; increment: string; mccMnc: string | null }[] =
        [];
      if (t.name === 'sms-networks') {
        if (country === undefined) throw ruleError('This template needs `country`');
        const code = Object.entries(callingCodes).find(([, isos]) => isos.includes(country))?.[0];
        if (code === undefined) throw validationError([{ path: '/country', message: 'unknown country' }]);
        const name0 = nameOf(country);
        rows.push({ prefix: code, destination: name0, rate: '', increment: '', mccMnc: null });
        for (const n of networksUnder(code))
          rows.push({ prefix: code, destination: `${name0} ${n.name}`, rate: '', increment: '', mccMnc: n.mccMnc });
      } else {
        for (const code of Object.keys(callingCodes).sort()) {
          const iso = callingCodes[code]![0]!;
          // '001': non-geographic codes (international freephone, satellite, ...)
          if (iso === '001') continue;
          rows.push({ prefix: code, destination: nameOf(iso), rate: '', increment: '', mccMnc: null });
        }
      }
      return { name: t.name, type: t.type, country: country ?? null, rows };
    },
  };
}

export type SheetTools = ReturnType<typeof createSheetTools>;
