import type { Db, Sql } from '../../db/connection.js';

export interface GroupKey {
  sellerId: string;
  countryId: string;
  typeId: string;
  city: string | null;
  areaPrefix: string | null;
}

export async function isSeller(db: Db, accountId: string): Promise<boolean> {
  const [row] = await db`select 1 from did_sellers where account_id = ${accountId}`;
  return row !== undefined;
}

export async function addSeller(db: Db, accountId: string, requestId: string | null, at: Date): Promise<void> {
  await db`insert into did_sellers (account_id, approved_at, request_id) values (${accountId}, ${at}, ${requestId})
           on conflict (account_id) do nothing`;
}

/**
 * The catalogue country of an ISO code, made on first use. A country named again with another
 * dialling prefix is a mistake in the input: the stored prefix is returned for the caller to compare.
 */
export async function ensureCountry(
  db: Db,
  c: { countryCode: string; name: string; prefix: string },
): Promise<{ id: string; prefix: string }> {
  const id = `${c.prefix}-${c.countryCode.toLowerCase()}`;
  await db`insert into did_countries (id, name, country_code, prefix) values (${id}, ${c.name}, ${c.countryCode}, ${c.prefix})
           on conflict (country_code) do nothing`;
  const [row] = await db<{ id: string; prefix: string }[]>`
    select id, prefix from did_countries where country_code = ${c.countryCode}`;
  return row!;
}

export async function typeExists(db: Db, typeId: string): Promise<boolean> {
  const [row] = await db`select 1 from did_types where id = ${typeId}`;
  return row !== undefined;
}

/** The seller's group for a place and type, made when missing (the unique index decides under concurrency). */
export async function ensureGroup(
  db: Db,
  id: string,
  k: GroupKey,
  opts: { requiresKyc?: boolean | undefined; graceDays?: number | undefined; inboundRate?: string | null | undefined },
): Promise<string> {
  await db`
    insert into did_groups (id, seller_id, country_id, city, area_prefix, type_id, requires_kyc, grace_days, inbound_rate)
    values (${id}, ${k.sellerId}, ${k.countryId}, ${k.city}, ${k.areaPrefix}, ${k.typeId}, ${opts.requiresKyc ?? false},
            ${opts.graceDays ?? 7}, ${opts.inboundRate ?? null})
    on conflict (seller_id, country_id, type_id, coalesce(city, ''), coalesce(area_prefix, '')) do nothing`;
  const [row] = await db<{ id: string }[]>`
    select id from did_groups where seller_id = ${k.sellerId} and country_id = ${k.countryId} and type_id = ${k.typeId}
      and coalesce(city, '') = ${k.city ?? ''} and coalesce(area_prefix, '') = ${k.areaPrefix ?? ''}`;
  return row!.id;
}

export async function updateGroup(
  db: Db,
  sellerId: string,
  groupId: string,
  p: {
    requiresKyc?: boolean | undefined;
    graceDays?: number | undefined;
    inboundRate?: string | null | undefined;
    inboundSmsRate?: string | null | undefined;
    status?: 'active' | 'hidden' | undefined;
  },
  at: Date,
): Promise<boolean> {
  const res = await db`
    update did_groups set
      requires_kyc = coalesce(${p.requiresKyc ?? null}::boolean, requires_kyc),
      grace_days = coalesce(${p.graceDays ?? null}::integer, grace_days),
      inbound_rate = ${p.inboundRate === undefined ? db`inbound_rate` : db`${p.inboundRate}::numeric`},
      inbound_sms_rate = ${p.inboundSmsRate === undefined ? db`inbound_sms_rate` : db`${p.inboundSmsRate}::numeric`},
      status = coalesce(${p.status ?? null}::text, status),
      updated_at = ${at}
    where id = ${groupId} and seller_id = ${sellerId}`;
  return res.count === 1;
}

/** The active SKU of a group with this many channels, its prices set (a new one when none). */
export async function upsertSku(
  db: Db,
  id: string,
  groupId: string,
  s: { channels: number; setupPrice: string; monthlyPrice: string },
): Promise<string> {
  const [row] = await db<{ id: string }[]>`
    insert into did_skus (id, group_id, channels, setup_price, monthly_price)
    values (${id}, ${groupId}, ${s.channels}, ${s.setupPrice}::numeric, ${s.monthlyPrice}::numeric)
    on conflict (group_id, channels) where status = 'active'
    do update set setup_price = excluded.setup_price, monthly_price = excluded.monthly_price
    returning id`;
  return row!.id;
}

export async function retireSku(db: Db, sellerId: string, skuId: string): Promise<boolean> {
  const res = await db`
    update did_skus s set status = 'retired' from did_groups g
    where s.id = ${skuId} and g.id = s.group_id and g.seller_id = ${sellerId} and s.status = 'active'`;
  return res.count === 1;
}

export interface NewNumber {
  id: string;
  group_id: string;
  seller_id: string;
  number: string;
  local_part: string;
  vanity: boolean;
}

/** Inserts many numbers in one statement; returns the numbers that were already listed (nothing inserted then). */
export async function insertNumbers(db: Db, rows: NewNumber[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 5000) {
    const chunk = rows.slice(i, i + 5000);
    await db`insert into did_numbers ${db(chunk, 'id', 'group_id', 'seller_id', 'number', 'local_part', 'vanity')}`;
  }
}

/** Which of these numbers are already in the inventory (any seller, any state). */
export async function existingNumbers(db: Db, numbers: readonly string[]): Promise<Set<string>> {
  const found = new Set<string>();
  for (let i = 0; i < numbers.length; i += 10000) {
    const rows = await db<{ number: string }[]>`
      select number from did_numbers where number = any (${numbers.slice(i, i + 10000) as string[]}::text[])`;
    for (const r of rows) found.add(r.number);
  }
  return found;
}

export async function sellerGroups(sql: Sql, sellerId: string) {
  return sql<
    {
      groupId: string;
      countryId: string;
      country: string;
      countryCode: string;
      city: string | null;
      areaPrefix: string | null;
      typeId: string;
      typeName: string;
      requiresKyc: boolean;
      graceDays: number;
      inboundRate: string | null;
      inboundSmsRate: string | null;
      status: string;
      available: number;
      assigned: number;
      createdAt: Date;
    }[]
  >`
    select g.id as group_id, g.country_id, c.name as country, c.country_code, g.city, g.area_prefix, g.type_id,
           t.name as type_name, g.requires_kyc, g.grace_days, g.inbound_rate::text, g.inbound_sms_rate::text, g.status,
           (select count(*) from did_numbers n where n.group_id = g.id and n.state = 'available')::int as available,
           (select count(*) from did_numbers n where n.group_id = g.id and n.state = 'assigned')::int as assigned,
           g.created_at
    from did_groups g join did_countries c on c.id = g.country_id join did_types t on t.id = g.type_id
    where g.seller_id = ${sellerId}
    order by c.name, g.city nulls first, g.area_prefix nulls first, g.type_id`;
}

export async function sellerNumbers(
  sql: Sql,
  sellerId: string,
  q: { groupId?: string | undefined; state?: string | undefined; cursor?: string | undefined; limit: number },
) {
  return sql<{ id: string; number: string; groupId: string; state: string; vanity: boolean; createdAt: Date }[]>`
    select id, number, group_id, state, vanity, created_at from did_numbers
    where seller_id = ${sellerId}
      ${q.groupId ? sql`and group_id = ${q.groupId}` : sql``}
      ${q.state ? sql`and state = ${q.state}` : sql``}
      ${q.cursor ? sql`and id < ${q.cursor}` : sql``}
    order by id desc limit ${q.limit + 1}`;
}

/** Withdraws an available number from sale (an assigned one stays with its renter). */
export async function withdrawNumber(db: Db, sellerId: string, id: string): Promise<'withdrawn' | 'assigned' | null> {
  const [row] = await db<
    { state: string }[]
  >`select state from did_numbers where id = ${id} and seller_id = ${sellerId} for update`;
  if (!row) return null;
  if (row.state === 'assigned') return 'assigned';
  await db`update did_numbers set state = 'withdrawn' where id = ${id}`;
  return 'withdrawn';
}

/** Takes one available number of the group for a new DID (locked, so two buyers never share one). */
export async function takeNumber(db: Db, groupId: string): Promise<{ id: string; number: string } | undefined> {
  const [row] = await db<{ id: string; number: string }[]>`
    update did_numbers set state = 'assigned' where id = (
      select id from did_numbers where group_id = ${groupId} and state = 'available'
      order by id limit 1 for update skip locked)
    returning id, number`;
  return row;
}

/** A released DID's number goes back on sale. */
export async function returnNumber(db: Db, numberId: string): Promise<void> {
  await db`update did_numbers set state = 'available' where id = ${numberId} and state = 'assigned'`;
}
