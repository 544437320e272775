import { parse } from 'csv-parse/sync';
import type { Logger } from 'pino';
import type { Sql } from '../../db/connection.js';
import { Money } from '../../ledger/money.js';
import { forbidden, notFound, ruleError, validationError, type ErrorDetail } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import * as inv from './inventory-repo.js';
import { isVanity } from './number-pattern.js';

/** One number to list, as the API, the CSV upload and svcctl give it. */
export interface InventoryItem {
  number: string;
  countryCode: string;
  country: string;
  countryPrefix: string;
  typeId: string;
  city?: string | null | undefined;
  areaPrefix?: string | null | undefined;
  channels: number;
  setupPrice: string;
  monthlyPrice: string;
}

export const CSV_COLUMNS = [
  'number',
  'country_code',
  'country',
  'country_prefix',
  'type',
  'city',
  'area_prefix',
  'channels',
  'setup_price',
  'monthly_price',
] as const;

/** Most rows a single import takes; a larger inventory is loaded in several. */
export const MAX_IMPORT_ROWS = 100_000;
// A file with thousands of bad rows names the first ones; the count says how many there were.
const MAX_NAMED_ERRORS = 1000;

const money = (v: string) => Money.isValid(v) && !v.trim().startsWith('-');

/** Problems of one item, each with the field it concerns; `prefix` names the row (`items[3]`, `row 4`). */
function itemProblems(it: InventoryItem, prefix: string, types: ReadonlySet<string>): ErrorDetail[] {
  const bad: ErrorDetail[] = [];
  const at = (field: string, message: string) => bad.push({ path: `${prefix}.${field}`, message });
  const number = it.number.replace(/^\+/, '');
  if (!/^\d{6,15}$/.test(number)) at('number', 'must be an E.164 number of 6 to 15 digits');
  if (!/^[A-Z]{2}$/.test(it.countryCode)) at('countryCode', 'must be an ISO 3166-1 alpha-2 code');
  if (it.country.trim() === '' || it.country.length > 120) at('country', 'must be 1 to 120 characters');
  if (!/^\d{1,4}$/.test(it.countryPrefix)) at('countryPrefix', 'must be 1 to 4 digits');
  if (!types.has(it.typeId)) at('type', `must be one of ${[...types].join(', ')}`);
  if (it.city != null && (it.city.trim() === '' || it.city.length > 120)) at('city', 'must be 1 to 120 characters');
  if (it.areaPrefix != null && !/^\d{1,16}$/.test(it.areaPrefix)) at('areaPrefix', 'must be 1 to 16 digits');
  if (!Number.isInteger(it.channels) || it.channels < 1 || it.channels > 1000)
    at('channels', 'must be an integer from 1 to 1000');
  if (!money(it.setupPrice)) at('setupPrice', 'must be a non-negative amount with at most 6 decimals');
  if (!money(it.monthlyPrice)) at('monthlyPrice', 'must be a non-negative amount with at most 6 decimals');
  const dialling = it.countryPrefix + (it.areaPrefix ?? '');
  if (
    /^\d+$/.test(number) &&
    /^\d+$/.test(dialling) &&
    !(number.startsWith(dialling) && number.length > dialling.length)
  )
    at('number', `must start with the dialling prefix ${dialling} and have digits after it`);
  return bad;
}

/** CSV text (header row with CSV_COLUMNS) to items; a missing column or unreadable file is one error. */
export function parseInventoryCsv(text: string): { items: InventoryItem[]; lines: number[] } {
  let records: Record<string, string>[];
  try {
    records = parse(text, {
      columns: (h: string[]) => h.map((c) => c.trim().toLowerCase()),
      skip_empty_lines: true,
      trim: true,
      bom: true,
    });
  } catch (err) {
    throw validationError([{ path: 'csv', message: `unreadable CSV: ${(err as Error).message.slice(0, 200)}` }]);
  }
  if (records.length === 0) throw validationError([{ path: 'csv', message: 'no rows after the header' }]);
  const missing = CSV_COLUMNS.filter((c) => !(c in records[0]!) && c !== 'city' && c !== 'area_prefix');
  if (missing.length > 0) throw validationError([{ path: 'csv', message: `missing column(s): ${missing.join(', ')}` }]);
  if (records.length > MAX_IMPORT_ROWS)
    throw validationError([{ path: 'csv', message: `at most ${MAX_IMPORT_ROWS} rows per upload` }]);
  const items = records.map((r) => ({
    number: r['number'] ?? '',
    countryCode: (r['country_code'] ?? '').toUpperCase(),
    country: r['country'] ?? '',
    countryPrefix: r['country_prefix'] ?? '',
    typeId: (r['type'] ?? '').toLowerCase(),
    city: r['city'] ? r['city'] : null,
    areaPrefix: r['area_prefix'] ? r['area_prefix'] : null,
    channels: /^\d+$/.test(r['channels'] ?? '') ? Number(r['channels']) : NaN,
    setupPrice: r['setup_price'] ?? '',
    monthlyPrice: r['monthly_price'] ?? '',
  }));
  // Line 1 is the header: data row i is on line i + 2 (blank lines skipped are not counted).
  return { items, lines: items.map((_, i) => i + 2) };
}

export interface ImportResult {
  imported: number;
  groups: {
    groupId: string;
    countryId: string;
    typeId: string;
    city: string | null;
    areaPrefix: string | null;
    numbers: number;
  }[];
}

/** Sellers' inventory: approval, groups and SKUs, importing numbers all-or-nothing with every bad row named. */
export function createInventory(deps: { sql: Sql; clock: Clock; log: Logger }) {
  const { sql, clock, log } = deps;

  async function requireSeller(accountId: string, isOperator: boolean) {
    if (isOperator) return;
    if (!(await inv.isSeller(sql, accountId)))
      throw forbidden('Listing numbers needs an approved listing request (POST /dids/listing-request)');
  }

  return {
    requireSeller,

    /**
     * Lists numbers for `sellerId`. Every item is checked first (fields, dialling prefix, the
     * country's prefix, duplicates in the input and in the inventory); any problem refuses the
     * whole import with one detail per bad field, the row named by `rowName`.
     */
    async importItems(
      sellerId: string,
      isOperator: boolean,
      items: InventoryItem[],
      rowName: (index: number) => string,
    ): Promise<ImportResult> {
      await requireSeller(sellerId, isOperator);
      if (items.length === 0) throw ruleError('Nothing to import');
      if (items.length > MAX_IMPORT_ROWS) throw ruleError(`At most ${MAX_IMPORT_ROWS} numbers per import`);
      const types = new Set((await sql<{ id: string }[]>`select id from did_types`).map((t) => t.id));
      const problems: ErrorDetail[] = [];
      const seen = new Map<string, number>();
      const known = await inv.existingNumbers(
        sql,
        items.map((i) => i.number.replace(/^\+/, '')),
      );
      const prefixes = new Map(
        (await sql<{ countryCode: string; prefix: string }[]>`select country_code, prefix from did_countries`).map(
          (c) => [c.countryCode, c.prefix],
        ),
      );
      items.forEach((it, i) => {
        const name = rowName(i);
        const own = itemProblems(it, name, types);
        const number = it.number.replace(/^\+/, '');
        const first = seen.get(number);
        if (first !== undefined) own.push({ path: `${name}.number`, message: `repeats ${rowName(first)}` });
        else seen.set(number, i);
        if (known.has(number)) own.push({ path: `${name}.number`, message: 'is already listed' });
        const stored = prefixes.get(it.countryCode);
        if (stored !== undefined && stored !== it.countryPrefix)
          own.push({ path: `${name}.countryPrefix`, message: `${it.countryCode} dials ${stored}` });
        problems.push(...own);
      });
      if (problems.length > 0) {
        const shown = problems.slice(0, MAX_NAMED_ERRORS);
        throw validationError(
          shown,
          `${new Set(problems.map((p) => p.path.split('.')[0])).size} row(s) refused; nothing was imported`,
        );
      }
      const groups = new Map<string, ImportResult['groups'][number]>();
      await sql.begin(async (tx) => {
        const rows: inv.NewNumber[] = [];
        const groupIds = new Map<string, string>();
        const skus = new Set<string>();
        for (const it of items) {
          const city = it.city?.trim() || null;
          const area = it.areaPrefix ?? null;
          const key = [it.countryCode, it.typeId, city ?? '', area ?? ''].join('|');
          let groupId = groupIds.get(key);
          if (groupId === undefined) {
            const country = await inv.ensureCountry(tx, {
              countryCode: it.countryCode,
              name: it.country.trim(),
              prefix: it.countryPrefix,
            });
            groupId = await inv.ensureGroup(
              tx,
              newId(),
              { sellerId, countryId: country.id, typeId: it.typeId, city, areaPrefix: area },
              {},
            );
            groupIds.set(key, groupId);
            groups.set(groupId, {
              groupId,
              countryId: country.id,
              typeId: it.typeId,
              city,
              areaPrefix: area,
              numbers: 0,
            });
          }
          const skuKey = `${groupId}|${it.channels}|${it.setupPrice}|${it.monthlyPrice}`;
          if (!skus.has(skuKey)) {
            await inv.upsertSku(tx, newId(), groupId, {
              channels: it.channels,
              setupPrice: it.setupPrice,
              monthlyPrice: it.monthlyPrice,
            });
            skus.add(skuKey);
          }
          const number = it.number.replace(/^\+/, '');
          const localPart = number.slice(it.countryPrefix.length + (area?.length ?? 0));
          rows.push({
            id: newId(),
            group_id: groupId,
            seller_id: sellerId,
            number,
            local_part: localPart,
            vanity: isVanity(localPart),
          });
          groups.get(groupId)!.numbers++;
        }
        await inv.insertNumbers(tx, rows);
      });
      log.info({ sellerId, numbers: items.length, groups: groups.size }, 'number inventory imported');
      return { imported: items.length, groups: [...groups.values()] };
    },

    groups: (sellerId: string) => inv.sellerGroups(sql, sellerId),

    numbers: (
      sellerId: string,
      q: { groupId?: string | undefined; state?: string | undefined; cursor?: string | undefined; limit: number },
    ) => inv.sellerNumbers(sql, sellerId, q),

    async updateGroup(
      sellerId: string,
      groupId: string,
      p: {
        requiresKyc?: boolean | undefined;
        graceDays?: number | undefined;
        inboundRate?: string | null | undefined;
        inboundSmsRate?: string | null | undefined;
        status?: 'active' | 'hidden' | undefined;
      },
    ) {
      if (!(await inv.updateGroup(sql, sellerId, groupId, p, clock.now()))) throw notFound('Catalogue group');
    },

    async setSku(
      sellerId: string,
      groupId: string,
      s: { channels: number; setupPrice: string; monthlyPrice: string },
    ): Promise<string> {
      const [g] = await sql`select 1 from did_groups where id = ${groupId} and seller_id = ${sellerId}`;
      if (!g) throw notFound('Catalogue group');
      return inv.upsertSku(sql, newId(), groupId, s);
    },

    async retireSku(sellerId: string, skuId: string) {
      if (!(await inv.retireSku(sql, sellerId, skuId))) throw notFound('SKU');
    },

    async withdraw(sellerId: string, numberId: string) {
      const r = await sql.begin((tx) => inv.withdrawNumber(tx, sellerId, numberId));
      if (r === null) throw notFound('Number');
      if (r === 'assigned') throw ruleError('The number is rented; it can be withdrawn once released');
    },
  };
}

export type Inventory = ReturnType<typeof createInventory>;
