import type { Db, Sql } from '../../db/connection.js';

export type CatalogSort = 'monthly_asc' | 'monthly_desc' | 'setup_asc' | 'location_asc';

export interface CatalogQuery {
  countryId?: string | undefined;
  typeId?: string | undefined;
  search?: string | undefined;
  maxMonthly?: number | undefined;
  sort?: CatalogSort | undefined;
  page: number;
  pageSize: number;
}

export interface GroupRow {
  groupId: string;
  sellerId: string;
  country: string;
  countryId: string;
  countryCode: string;
  countryPrefix: string;
  city: string | null;
  areaPrefix: string | null;
  typeId: string;
  typeName: string;
  requiresKyc: boolean;
  graceDays: number;
  inboundRate: string | null;
  status: 'active' | 'hidden';
  available: number;
  minMonthly: string | null;
}

export interface SkuRow {
  skuId: string;
  groupId: string;
  channels: number;
  setupPrice: string;
  monthlyPrice: string;
  status: 'active' | 'retired';
}

const GROUP_COLUMNS = (db: Db) => db`
  g.id as group_id, g.seller_id, c.name as country, c.id as country_id, c.country_code, c.prefix as country_prefix,
  g.city, g.area_prefix, g.type_id, t.name as type_name, g.requires_kyc, g.grace_days, g.inbound_rate::text,
  g.status`;

/** Groups a buyer can rent from: active, with an active SKU and at least one available number. */
export async function catalog(sql: Sql, q: CatalogQuery): Promise<{ rows: GroupRow[]; total: number }> {
  const text = q.search?.trim() ?? '';
  const digits = /^\+?\d+$/.test(text) ? text.replace('+', '') : '';
  const like = `%${text.replace(/[\\%_]/g, (m) => `\\${m}`)}%`;
  const where = sql`
    g.status = 'active'
    ${q.countryId ? sql`and g.country_id = ${q.countryId}` : sql``}
    ${q.typeId ? sql`and g.type_id = ${q.typeId}` : sql``}
    ${
      text === ''
        ? sql``
        : digits
          ? sql`and ((c.prefix || coalesce(g.area_prefix, '')) like ${digits + '%'} or g.area_prefix like ${digits + '%'})`
          : sql`and (c.name ilike ${like} or g.city ilike ${like} or t.name ilike ${like} or g.area_prefix ilike ${like})`
    }
    and exists (select 1 from did_skus s where s.group_id = g.id and s.status = 'active'
                ${q.maxMonthly !== undefined ? sql`and s.monthly_price <= ${q.maxMonthly}` : sql``})
    and exists (select 1 from did_numbers n where n.group_id = g.id and n.state = 'available')`;
  const order =
    q.sort === 'monthly_desc'
      ? sql`m.min_monthly desc nulls last, g.id`
      : q.sort === 'setup_asc'
        ? sql`m.min_setup asc nulls last, g.id`
        : q.sort === 'location_asc'
          ? sql`c.name, g.city nulls first, g.area_prefix nulls first, g.id`
          : sql`m.min_monthly asc nulls last, g.id`;
  const rows = await sql<(GroupRow & { total: string })[]>`
    select ${GROUP_COLUMNS(sql)}, m.min_monthly::text,
           (select count(*) from did_numbers n where n.group_id = g.id and n.state = 'available')::int as available,
           count(*) over () as total
    from did_groups g
    join did_countries c on c.id = g.country_id
    join did_types t on t.id = g.type_id
    cross join lateral (select min(s.monthly_price) as min_monthly, min(s.setup_price) as min_setup
                        from did_skus s where s.group_id = g.id and s.status = 'active') m
    where ${where}
    order by ${order}
    limit ${q.pageSize} offset ${(q.page - 1) * q.pageSize}`;
  let total = rows[0] ? Number(rows[0].total) : 0;
  if (rows.length === 0 && q.page > 1) {
    const [r] = await sql<{ n: string }[]>`
      select count(*) as n from did_groups g join did_countries c on c.id = g.country_id
      join did_types t on t.id = g.type_id where ${where}`;
    total = Number(r?.n ?? 0);
  }
  return { rows: rows.map(({ total: _t, ...g }) => g), total };
}

export async function skusOf(db: Db, groupIds: readonly string[], activeOnly = true): Promise<SkuRow[]> {
  if (groupIds.length === 0) return [];
  return db<SkuRow[]>`
    select id as sku_id, group_id, channels, setup_price::text, monthly_price::text, status from did_skus
    where group_id = any (${groupIds as string[]}::uuid[]) ${activeOnly ? db`and status = 'active'` : db``}
    order by channels`;
}

export async function group(db: Db, groupId: string): Promise<GroupRow | undefined> {
  const [row] = await db<GroupRow[]>`
    select ${GROUP_COLUMNS(db)}, null::text as min_monthly,
           (select count(*) from did_numbers n where n.group_id = g.id and n.state = 'available')::int as available
    from did_groups g join did_countries c on c.id = g.country_id join did_types t on t.id = g.type_id
    where g.id = ${groupId}`;
  return row;
}

export async function countries(sql: Sql) {
  return sql<{ countryId: string; country: string; countryPrefix: string }[]>`
    select c.id as country_id, c.name as country, c.prefix as country_prefix from did_countries c
    where exists (select 1 from did_groups g where g.country_id = c.id and g.status = 'active')
    order by c.name`;
}

export async function types(sql: Sql) {
  return sql<{ id: string; name: string }[]>`select id, name from did_types order by position, name`;
}

export interface SearchQuery {
  /** Digits only (letters already mapped to the keypad). */
  pattern: string;
  match: 'contains' | 'starts_with' | 'ends_with' | 'exact';
  vanity: boolean;
  countryId?: string | undefined;
  typeId?: string | undefined;
  text?: string | undefined;
  limit: number;
}

export interface SearchHitRow {
  id: string;
  number: string;
  localPart: string;
  vanity: boolean;
  groupId: string;
  country: string;
  countryId: string;
  countryCode: string;
  countryPrefix: string;
  city: string | null;
  areaPrefix: string | null;
  typeId: string;
  typeName: string;
}

/**
 * Available numbers matching a pattern on their local part, through the partial indexes of
 * migration 220 (prefix, reversed prefix, trigrams); `limit + 1` rows so the caller can tell truncation.
 */
export async function search(sql: Sql, q: SearchQuery): Promise<SearchHitRow[]> {
  const esc = q.pattern.replace(/[\\%_]/g, (m) => `\\${m}`);
  const reversed = [...esc].reverse().join('');
  const text = q.text?.trim() ?? '';
  const like = `%${text.replace(/[\\%_]/g, (m) => `\\${m}`)}%`;
  const patternCond =
    q.pattern === ''
      ? sql``
      : q.match === 'exact'
        ? sql`and n.local_part = ${q.pattern}`
        : q.match === 'starts_with'
          ? sql`and n.local_part like ${esc + '%'}`
          : q.match === 'ends_with'
            ? sql`and reverse(n.local_part) like ${reversed + '%'}`
            : sql`and n.local_part like ${'%' + esc + '%'}`;
  return sql<SearchHitRow[]>`
    select n.id, n.number, n.local_part, n.vanity, g.id as group_id, c.name as country, c.id as country_id,
           c.country_code, c.prefix as country_prefix, g.city, g.area_prefix, g.type_id, t.name as type_name
    from did_numbers n
    join did_groups g on g.id = n.group_id
    join did_countries c on c.id = g.country_id
    join did_types t on t.id = g.type_id
    where n.state = 'available' and g.status = 'active'
      ${patternCond}
      ${q.vanity ? sql`and n.vanity` : sql``}
      ${q.countryId ? sql`and g.country_id = ${q.countryId}` : sql``}
      ${q.typeId ? sql`and g.type_id = ${q.typeId}` : sql``}
      ${text ? sql`and (c.name ilike ${like} or g.city ilike ${like} or t.name ilike ${like})` : sql``}
      and exists (select 1 from did_skus s where s.group_id = g.id and s.status = 'active')
    order by n.local_part
    limit ${q.limit + 1}`;
}

/** The public summary: counts, cheapest monthly price by type and by country. */
export async function summary(sql: Sql) {
  const [counts] = await sql<{ countries: number; groups: number; numbers: string }[]>`
    select count(distinct g.country_id)::int as countries, count(distinct g.id)::int as groups,
           (select count(*) from did_numbers n join did_groups g2 on g2.id = n.group_id
            where n.state = 'available' and g2.status = 'active')::text as numbers
    from did_groups g where g.status = 'active'
      and exists (select 1 from did_numbers n where n.group_id = g.id and n.state = 'available')`;
  const byType = await sql<{ typeId: string; typeName: string; cheapestMonthly: string }[]>`
    select t.id as type_id, t.name as type_name, min(s.monthly_price)::text as cheapest_monthly
    from did_groups g join did_types t on t.id = g.type_id
    join did_skus s on s.group_id = g.id and s.status = 'active'
    where g.status = 'active' and exists (select 1 from did_numbers n where n.group_id = g.id and n.state = 'available')
    group by t.id, t.name, t.position order by t.position`;
  const byCountry = await sql<{ countryId: string; country: string; cheapestMonthly: string }[]>`
    select c.id as country_id, c.name as country, min(s.monthly_price)::text as cheapest_monthly
    from did_groups g join did_countries c on c.id = g.country_id
    join did_skus s on s.group_id = g.id and s.status = 'active'
    where g.status = 'active' and exists (select 1 from did_numbers n where n.group_id = g.id and n.state = 'available')
    group by c.id, c.name order by c.name`;
  return { counts: counts!, byType, byCountry };
}
