import type { Db, Sql } from '../../../db/connection.js';

/** A listing as stored, secrets left out. */
export interface RouteRow {
  id: string;
  sellerId: string;
  type: 'voice' | 'sms';
  name: string;
  country: string | null;
  visibility: 'public' | 'private';
  status: 'active' | 'paused' | 'suspended' | 'deleted';
  expectedAsr: string | null;
  expectedAcd: string | null;
  expectedPdd: number | null;
  cliType: string | null;
  billingIncrement: string;
  capacity: number | null;
  maxCps: number | null;
  noticeDays: number;
  mediaMode: 'direct' | 'proxy';
  smsDeliveryKind: string | null;
  createdAt: Date;
  rateCount: number;
  lowestRate: string | null;
  /** A route blend (marketplace/blends): no deck or delivery of its own. */
  blend: boolean;
}

export interface NewRoute {
  id: string;
  sellerId: string;
  type: 'voice' | 'sms';
  name: string;
  country: string | null;
  visibility: 'public' | 'private';
  expectedAsr: string | null;
  expectedAcd: string | null;
  expectedPdd: number | null;
  cliType: string | null;
  billingIncrement: string;
  capacity: number | null;
  maxCps: number | null;
  noticeDays: number;
  mediaMode: 'direct' | 'proxy';
  smsDelivery: Record<string, string | number | boolean | null> | null;
}

export interface EndpointRow {
  id: string;
  routeId: string;
  host: string;
  port: number;
  transport: 'udp' | 'tcp' | 'tls';
  techPrefix: string;
  username: string | null;
  password: string | null;
  priority: number;
  weight: number;
  label: string | null;
}

export interface LiveRateRow {
  id: string;
  prefix: string;
  mccMnc: string;
  /** '' for a default row. */
  origin: string;
  destination: string;
  rate: string;
  increment: string;
}

const ROUTE_COLUMNS = (sql: Db) => sql`
  r.id, r.seller_id, r.type, r.name, r.country, r.visibility, r.status,
  r.expected_asr::text as expected_asr, r.expected_acd::text as expected_acd, r.expected_pdd,
  r.cli_type, r.billing_increment, r.capacity, r.max_cps, r.notice_days, r.media_mode,
  r.sms_delivery->>'kind' as sms_delivery_kind, r.created_at,
  coalesce(d.row_count, 0) as rate_count,
  exists (select 1 from route_blends b where b.route_id = r.id) as blend,
  (select min(x.rate)::numeric(20,6)::text from rate_rows x where x.route_id = r.id and x.effective_to is null and x.mcc_mnc = '' and x.origin = '') as lowest_rate`;

export async function insertRoute(db: Db, r: NewRoute, endpoints: Omit<EndpointRow, 'routeId'>[]): Promise<void> {
  await db`insert into routes ${db({
    id: r.id,
    seller_id: r.sellerId,
    type: r.type,
    name: r.name,
    country: r.country,
    visibility: r.visibility,
    expected_asr: r.expectedAsr,
    expected_acd: r.expectedAcd,
    expected_pdd: r.expectedPdd,
    cli_type: r.cliType,
    billing_increment: r.billingIncrement,
    capacity: r.capacity,
    max_cps: r.maxCps,
    notice_days: r.noticeDays,
    media_mode: r.mediaMode,
    sms_delivery: r.smsDelivery === null ? null : db.json(r.smsDelivery),
  })}`;
  await db`insert into rate_decks (route_id) values (${r.id})`;
  for (const e of endpoints) {
    await db`insert into route_endpoints ${db({
      id: e.id,
      route_id: r.id,
      host: e.host,
      port: e.port,
      transport: e.transport,
      tech_prefix: e.techPrefix,
      username: e.username,
      password: e.password,
      priority: e.priority,
      weight: e.weight,
      label: e.label,
    })}`;
  }
}

/** A route the viewer may see: public, own, or granted. */
export async function findVisibleRoute(sql: Sql, id: string, viewerId: string): Promise<RouteRow | undefined> {
  const [row] = await sql<RouteRow[]>`
    select ${ROUTE_COLUMNS(sql)} from routes r left join rate_decks d on d.route_id = r.id
    where r.id = ${id} and r.status <> 'deleted'
      and (r.visibility = 'public' or r.seller_id = ${viewerId}
           or exists (select 1 from route_access a where a.route_id = r.id and a.account_id = ${viewerId}))`;
  return row;
}

/** Changes the given columns of a route (snake_case names, as stored). */
export async function updateRoute(db: Db, id: string, fields: Record<string, string | number | null>): Promise<void> {
  await db`update routes set ${db(fields)} where id = ${id}`;
}

export async function findOwnRoute(db: Db, id: string, sellerId: string): Promise<RouteRow | undefined> {
  const [row] = await db<RouteRow[]>`
    select ${ROUTE_COLUMNS(db)} from routes r left join rate_decks d on d.route_id = r.id
    where r.id = ${id} and r.seller_id = ${sellerId} and r.status <> 'deleted'`;
  return row;
}

export interface ListFilter {
  viewerId: string;
  type?: 'voice' | 'sms';
  country?: string;
  ownOnly?: boolean;
  maxPrice?: string;
  minStatedAsr?: number;
  sort: 'newest' | 'price_asc' | 'price_desc' | 'stated_asr_desc';
  cursor?: string;
  offset: number;
  limit: number;
}

/** Marketplace listing with filters; offset-paged because price sorts are not id-ordered. */
export async function listRoutes(sql: Sql, f: ListFilter): Promise<{ rows: RouteRow[]; total: number }> {
  const where = sql`
    r.status = 'active'
    ${
      f.ownOnly
        ? sql`and r.seller_id = ${f.viewerId}`
        : sql`and (r.visibility = 'public' or r.seller_id = ${f.viewerId}
      or exists (select 1 from route_access a where a.route_id = r.id and a.account_id = ${f.viewerId}))`
    }
    ${f.type ? sql`and r.type = ${f.type}` : sql``}
    ${f.country ? sql`and r.country = ${f.country}` : sql``}
    ${f.minStatedAsr !== undefined ? sql`and r.expected_asr >= ${f.minStatedAsr}` : sql``}`;
  const order =
    f.sort === 'price_asc'
      ? sql`lowest_rate::numeric asc nulls last, id`
      : f.sort === 'price_desc'
        ? sql`lowest_rate::numeric desc nulls last, id`
        : f.sort === 'stated_asr_desc'
          ? sql`expected_asr::numeric desc nulls last, id`
          : sql`id desc`;
  const rows = await sql<(RouteRow & { total: string })[]>`
    select * from (
      select ${ROUTE_COLUMNS(sql)}, count(*) over () as total
      from routes r left join rate_decks d on d.route_id = r.id
      where ${where}
    ) q
    ${f.maxPrice !== undefined ? sql`where lowest_rate::numeric <= ${f.maxPrice}::numeric` : sql``}
    order by ${order}
    limit ${f.limit} offset ${f.offset}`;
  return { rows, total: rows.length === 0 ? 0 : Number(rows[0]!.total) };
}

export async function endpointsFor(sql: Sql, routeIds: readonly string[]): Promise<EndpointRow[]> {
  if (routeIds.length === 0) return [];
  return sql<EndpointRow[]>`
    select id, route_id, host, port, transport, tech_prefix, username, password, priority, weight, label
    from route_endpoints where route_id = any(${sql.array(routeIds as string[])}::uuid[]) order by route_id, priority, id`;
}

/** SMS delivery details including secrets: for the delivery path only, never for a response. */
export async function smsDeliveryFor(
  sql: Sql,
  routeIds: readonly string[],
): Promise<Map<string, Record<string, unknown>>> {
  if (routeIds.length === 0) return new Map();
  const rows = await sql<{ id: string; smsDelivery: Record<string, unknown> | null }[]>`
    select id, sms_delivery from routes where id = any(${sql.array(routeIds as string[])}::uuid[])`;
  return new Map(rows.filter((r) => r.smsDelivery !== null).map((r) => [r.id, r.smsDelivery!]));
}

/** Rows in force at `at`. */
export async function liveRows(db: Db, routeId: string, at: Date): Promise<LiveRateRow[]> {
  return db<LiveRateRow[]>`
    select id::text, prefix, mcc_mnc, origin, destination, rate::numeric(20,6)::text as rate, increment
    from rate_rows
    where route_id = ${routeId} and effective_from <= ${at} and (effective_to is null or effective_to > ${at})`;
}

/** The first time after `at` when the rows in force change, or null. */
export async function nextTransition(db: Db, routeId: string, at: Date): Promise<Date | null> {
  const [row] = await db<{ t: Date | null }[]>`
    select least(
      (select min(effective_from) from rate_rows where route_id = ${routeId} and effective_from > ${at}),
      (select min(effective_to) from rate_rows where route_id = ${routeId} and effective_to > ${at})
    ) as t`;
  return row?.t ?? null;
}

/** Route facts the in-memory catalogue keeps beside each deck. */
export interface DeckMeta {
  routeId: string;
  sellerId: string;
  type: 'voice' | 'sms';
  name: string;
  visibility: 'public' | 'private';
  status: 'active' | 'paused' | 'suspended' | 'deleted';
  cliType: string | null;
  billingIncrement: string;
  expectedAsr: string | null;
  expectedAcd: string | null;
  expectedPdd: number | null;
  version: string;
}

/** Listing facts the deck cache keeps beside each deck: all routes, the listed ones, or one seller's. */
export async function deckMeta(
  db: Db,
  routeIds: readonly string[] | null,
  sellerId: string | null = null,
): Promise<DeckMeta[]> {
  return db<DeckMeta[]>`
    select r.id as route_id, r.seller_id, r.type, r.name, r.visibility, r.status, r.cli_type, r.billing_increment,
      r.expected_asr::text as expected_asr, r.expected_acd::text as expected_acd, r.expected_pdd, d.version::text as version
    from routes r join rate_decks d on d.route_id = r.id
    where r.status <> 'deleted' ${routeIds === null ? db`` : db`and r.id = any(${db.array(routeIds as string[])}::uuid[])`}
      ${sellerId === null ? db`` : db`and r.seller_id = ${sellerId}`}`;
}

export async function ratesPage(
  sql: Sql,
  routeId: string,
  at: Date,
  q: { prefix?: string; limit: number; offset: number },
): Promise<{ rows: (LiveRateRow & { effectiveFrom: Date })[]; total: number }> {
  const rows = await sql<(LiveRateRow & { effectiveFrom: Date; total: string })[]>`
    select id::text, prefix, mcc_mnc, origin, destination, rate::numeric(20,6)::text as rate, increment, effective_from,
      count(*) over () as total
    from rate_rows
    where route_id = ${routeId} and effective_from <= ${at} and (effective_to is null or effective_to > ${at})
      ${q.prefix ? sql`and prefix like ${q.prefix + '%'}` : sql``}
    order by prefix, mcc_mnc, origin
    limit ${q.limit} offset ${q.offset}`;
  return { rows, total: rows.length === 0 ? 0 : Number(rows[0]!.total) };
}

export async function scheduledChanges(sql: Sql, routeId: string, after: Date, purchaseId: string | null = null) {
  return sql<
    {
      id: string;
      prefix: string;
      mccMnc: string;
      origin: string;
      kind: 'increase' | 'removal';
      oldRate: string | null;
      newRate: string | null;
      effectiveAt: Date;
      status: string;
      acceptedAt: Date | null;
    }[]
  >`
    select c.id, c.prefix, c.mcc_mnc, c.origin, c.kind, c.old_rate::numeric(20,6)::text as old_rate, c.new_rate::numeric(20,6)::text as new_rate,
      c.effective_at, c.status, a.accepted_at
    from rate_changes c
    left join rate_change_acceptances a on a.change_id = c.id and a.purchase_id = ${purchaseId}
    where c.route_id = ${routeId} and c.status = 'scheduled' and c.effective_at > ${after}
    order by c.effective_at, c.prefix limit 10000`;
}

/**
 * Records a purchase's acceptance of one scheduled change, or of every change still scheduled on
 * the route when `changeId` is null; accepting twice keeps the first time. Returns the changes now
 * accepted (empty when `changeId` is not a scheduled, future change of the route).
 */
export async function acceptChanges(db: Db, routeId: string, purchaseId: string, changeId: string | null, now: Date) {
  await db`
    insert into rate_change_acceptances (change_id, purchase_id, accepted_at)
    select c.id, ${purchaseId}, ${now} from rate_changes c
    where c.route_id = ${routeId} and c.status = 'scheduled' and c.effective_at > ${now}
      ${changeId === null ? db`` : db`and c.id = ${changeId}`}
    on conflict do nothing`;
  return db<{ changeId: string; acceptedAt: Date }[]>`
    select a.change_id, a.accepted_at from rate_change_acceptances a join rate_changes c on c.id = a.change_id
    where a.purchase_id = ${purchaseId} and c.route_id = ${routeId} and c.status = 'scheduled' and c.effective_at > ${now}
      ${changeId === null ? db`` : db`and c.id = ${changeId}`}
    order by c.effective_at, c.prefix`;
}

export interface DeckWrite {
  /** ids of rows to close, with the time each closes */
  closeIds: string[];
  closeAt: Date[];
  insert: {
    prefix: string;
    mccMnc: string;
    origin: string;
    destination: string;
    rate: string;
    increment: string;
    effectiveFrom: Date;
  }[];
  changes: {
    id: string;
    prefix: string;
    mccMnc: string;
    origin: string;
    kind: 'increase' | 'removal';
    oldRate: string | null;
    newRate: string | null;
    effectiveAt: Date;
  }[];
}

/**
 * Takes the deck's lock and drops what a previous upload scheduled but has not yet come into
 * force, so a new sheet always plans against the rows in force now. Returns those rows.
 */
export async function lockDeckForUpload(tx: Db, routeId: string, now: Date): Promise<LiveRateRow[]> {
  await tx`select 1 from rate_decks where route_id = ${routeId} for update`;
  await tx`delete from rate_rows where route_id = ${routeId} and effective_from > ${now}`;
  await tx`update rate_rows set effective_to = null where route_id = ${routeId} and effective_to > ${now}`;
  await tx`update rate_changes set status = 'superseded' where route_id = ${routeId} and status = 'scheduled' and effective_at > ${now}`;
  return liveRows(tx, routeId, now);
}

/** Writes an upload's plan in the caller's transaction and announces the new version. */
export async function writeDeck(
  tx: Db,
  routeId: string,
  w: DeckWrite,
  now: Date,
  liveCount: number,
  load: { onLoaded?: (rows: number) => void; signal?: AbortSignal } = {},
): Promise<string> {
  if (w.closeIds.length > 0) {
    await tx`
      update rate_rows set effective_to = x.t
      from unnest(${tx.array(w.closeIds)}::bigint[], ${tx.array(w.closeAt.map((d) => d.toISOString()))}::timestamptz[]) as x(id, t)
      where rate_rows.id = x.id`;
  }
  // Chunked so one statement's arrays stay moderate on 200,000-row sheets, and small enough that
  // building and encoding one chunk's arrays is a short slice of the event loop.
  const CHUNK = 10_000;
  for (let i = 0; i < w.insert.length; i += CHUNK) {
    load.signal?.throwIfAborted();
    const part = w.insert.slice(i, i + CHUNK);
    await tx`
      insert into rate_rows (route_id, prefix, mcc_mnc, origin, destination, rate, increment, effective_from)
      select ${routeId}, * from unnest(
        ${tx.array(part.map((r) => r.prefix))}::text[],
        ${tx.array(part.map((r) => r.mccMnc))}::text[],
        ${tx.array(part.map((r) => r.origin))}::text[],
        ${tx.array(part.map((r) => r.destination))}::text[],
        ${tx.array(part.map((r) => r.rate))}::numeric[],
        ${tx.array(part.map((r) => r.increment))}::text[],
        ${tx.array(part.map((r) => r.effectiveFrom.toISOString()))}::timestamptz[])`;
    load.onLoaded?.(i + part.length);
  }
  if (w.changes.length > 0) {
    const c = w.changes;
    await tx`
      insert into rate_changes (id, route_id, prefix, mcc_mnc, origin, kind, old_rate, new_rate, effective_at)
      select y.id, ${routeId}, y.prefix, y.mcc, y.origin, y.kind, nullif(y.o, '')::numeric, nullif(y.n, '')::numeric, y.at from unnest(
        ${tx.array(c.map((r) => r.id))}::uuid[], ${tx.array(c.map((r) => r.prefix))}::text[], ${tx.array(c.map((r) => r.mccMnc))}::text[],
        ${tx.array(c.map((r) => r.origin))}::text[],
        ${tx.array(c.map((r) => r.kind))}::text[], ${tx.array(c.map((r) => r.oldRate ?? ''))}::text[], ${tx.array(c.map((r) => r.newRate ?? ''))}::text[],
        ${tx.array(c.map((r) => r.effectiveAt.toISOString()))}::timestamptz[]
      ) as y(id, prefix, mcc, origin, kind, o, n, at)`;
  }
  const [deck] = await tx<{ version: string }[]>`
    update rate_decks set version = version + 1, row_count = ${liveCount}, uploaded_at = ${now}
    where route_id = ${routeId} returning version::text`;
  await tx`select pg_notify(${DECK_CHANNEL}, ${`${routeId}:${deck!.version}`})`;
  return deck!.version;
}

/** Announces a deck or listing change to every daemon (payload `<routeId>:<version>`). */
export const DECK_CHANNEL = 'svc_rate_deck';

export async function bumpDeck(db: Db, routeId: string): Promise<void> {
  const [deck] = await db<
    { version: string }[]
  >`update rate_decks set version = version + 1 where route_id = ${routeId} returning version::text`;
  if (deck) await db`select pg_notify(${DECK_CHANNEL}, ${`${routeId}:${deck.version}`})`;
}

/**
 * Announces a listing-only change (status, visibility, terms) of many of one seller's routes at
 * once: one version step per deck and one notification (`m:<sellerId>`), after which every daemon
 * re-reads that seller's listing facts in one query and keeps the decks' indexes (no row changed).
 */
export async function bumpListings(db: Db, sellerId: string, routeIds: readonly string[]): Promise<void> {
  await db`update rate_decks set version = version + 1 where route_id = any(${db.array(routeIds as string[])}::uuid[])`;
  await db`select pg_notify(${DECK_CHANNEL}, ${`m:${sellerId}`})`;
}

/**
 * Withdraws one scheduled change before it comes into force: the replacement row is dropped and
 * the row it would have closed stays open. False when the change is unknown, not scheduled or due.
 */
export async function cancelScheduledChange(tx: Db, routeId: string, changeId: string, now: Date): Promise<boolean> {
  const [c] = await tx<{ prefix: string; mccMnc: string; origin: string; effectiveAt: Date }[]>`
    update rate_changes set status = 'cancelled'
    where id = ${changeId} and route_id = ${routeId} and status = 'scheduled' and effective_at > ${now}
    returning prefix, mcc_mnc, origin, effective_at`;
  if (c === undefined) return false;
  await tx`delete from rate_rows where route_id = ${routeId} and prefix = ${c.prefix} and mcc_mnc = ${c.mccMnc}
    and origin = ${c.origin} and effective_from = ${c.effectiveAt}`;
  await tx`update rate_rows set effective_to = null where route_id = ${routeId} and prefix = ${c.prefix} and mcc_mnc = ${c.mccMnc}
    and origin = ${c.origin} and effective_to = ${c.effectiveAt}`;
  return true;
}

/** Per country and type: public active routes and their cheapest country row in force (list price, no fee). */
export async function marketDestinations(sql: Sql, at: Date) {
  return sql<
    {
      country: string;
      type: 'voice' | 'sms';
      routes: number;
      lowest: string;
      lowestDestination: string;
      lowestPrefix: string;
    }[]
  >`
    select r.country, r.type, count(distinct r.id)::int as routes,
      min(x.rate)::numeric(20,6)::text as lowest,
      (array_agg(x.destination order by x.rate, x.prefix))[1] as lowest_destination,
      (array_agg(x.prefix order by x.rate, x.prefix))[1] as lowest_prefix
    from routes r
    join rate_rows x on x.route_id = r.id and x.mcc_mnc = '' and x.origin = '' and x.effective_from <= ${at} and (x.effective_to is null or x.effective_to > ${at})
    where r.status = 'active' and r.visibility = 'public' and r.country is not null
    group by r.country, r.type
    order by r.country, r.type`;
}

/** Counts over public active routes for the marketplace summary (list prices, no fee). */
export async function marketSummary(sql: Sql, at: Date, since: Date) {
  const [row] = await sql<
    {
      routes: number;
      voiceRoutes: number;
      smsRoutes: number;
      destinations: number;
      capacity: string | null;
      avgAsr: string | null;
      avgAcd: string | null;
      avgPrice: string | null;
    }[]
  >`
    with pub as (
      select r.id, r.type, r.country, r.capacity, r.expected_asr, r.expected_acd,
        (select min(x.rate) from rate_rows x where x.route_id = r.id and x.mcc_mnc = '' and x.origin = ''
           and x.effective_from <= ${at} and (x.effective_to is null or x.effective_to > ${at})) as lowest
      from routes r where r.status = 'active' and r.visibility = 'public'
    )
    select count(*)::int as routes,
      count(*) filter (where type = 'voice')::int as voice_routes,
      count(*) filter (where type = 'sms')::int as sms_routes,
      count(distinct country) filter (where lowest is not null)::int as destinations,
      sum(capacity) filter (where type = 'voice')::text as capacity,
      round(avg(expected_asr) filter (where type = 'voice'), 2)::text as avg_asr,
      round(avg(expected_acd) filter (where type = 'voice'), 2)::text as avg_acd,
      avg(lowest) filter (where type = 'voice')::numeric(20,6)::text as avg_price
    from pub`;
  const movers = await sql<{ country: string; newRoutes: number }[]>`
    select country, count(*)::int as new_routes from routes
    where status = 'active' and visibility = 'public' and country is not null and created_at >= ${since}
    group by country order by count(*) desc, country limit 5`;
  return { ...row!, movers };
}

/** Rows in force of public active routes of one country and type, for a destination's page. */
export async function marketRows(sql: Sql, country: string, type: 'voice' | 'sms', at: Date) {
  return sql<
    {
      routeId: string;
      cliType: string | null;
      billingIncrement: string;
      expectedAsr: string | null;
      expectedAcd: string | null;
      prefix: string;
      destination: string;
      rate: string;
      increment: string;
    }[]
  >`
    select r.id as route_id, r.cli_type, r.billing_increment, r.expected_asr::text as expected_asr, r.expected_acd::text as expected_acd,
      x.prefix, x.destination, x.rate::numeric(20,6)::text as rate, x.increment
    from routes r
    join rate_rows x on x.route_id = r.id and x.mcc_mnc = '' and x.origin = '' and x.effective_from <= ${at} and (x.effective_to is null or x.effective_to > ${at})
    where r.status = 'active' and r.visibility = 'public' and r.country = ${country} and r.type = ${type}
    order by x.rate, x.prefix`;
}

/** An endpoint of one of the seller's routes. */
export async function findOwnEndpoint(db: Db, id: string, sellerId: string): Promise<EndpointRow | undefined> {
  const [row] = await db<EndpointRow[]>`
    select e.id, e.route_id, e.host, e.port, e.transport, e.tech_prefix, e.username, e.password, e.priority, e.weight, e.label
    from route_endpoints e join routes r on r.id = e.route_id
    where e.id = ${id} and r.seller_id = ${sellerId} and r.status <> 'deleted'`;
  return row;
}

export async function insertEndpoint(db: Db, e: EndpointRow): Promise<void> {
  await db`insert into route_endpoints ${db({
    id: e.id,
    route_id: e.routeId,
    host: e.host,
    port: e.port,
    transport: e.transport,
    tech_prefix: e.techPrefix,
    username: e.username,
    password: e.password,
    priority: e.priority,
    weight: e.weight,
    label: e.label,
  })}`;
}

export async function updateEndpoint(db: Db, e: EndpointRow): Promise<void> {
  await db`
    update route_endpoints set host = ${e.host}, port = ${e.port}, transport = ${e.transport}, tech_prefix = ${e.techPrefix},
      username = ${e.username}, password = ${e.password}, priority = ${e.priority}, weight = ${e.weight}, label = ${e.label}
    where id = ${e.id}`;
}

export async function countEndpoints(db: Db, routeId: string): Promise<number> {
  const [row] = await db<{ n: number }[]>`select count(*)::int as n from route_endpoints where route_id = ${routeId}`;
  return row!.n;
}

/** The seller's live routes of a type, all or those listed. */
export async function ownRoutesOfType(db: Db, sellerId: string, type: 'voice' | 'sms', ids: readonly string[] | null) {
  return db<{ id: string }[]>`
    select id from routes where seller_id = ${sellerId} and type = ${type} and status <> 'deleted'
      ${ids === null ? db`` : db`and id = any(${db.array(ids as string[])}::uuid[])`}
    order by id`;
}

/** Puts one endpoint on many routes: replacing their endpoints, or added beside them. */
export async function setEndpointOnRoutes(
  db: Db,
  routeIds: readonly string[],
  e: Omit<EndpointRow, 'id' | 'routeId'>,
  mode: 'replace' | 'add',
  ids: readonly string[],
) {
  if (mode === 'replace')
    await db`delete from route_endpoints where route_id = any(${db.array(routeIds as string[])}::uuid[])`;
  await db`
    insert into route_endpoints (id, route_id, host, port, transport, tech_prefix, username, password, priority, weight, label)
    select x.id, x.route_id, ${e.host}, ${e.port}, ${e.transport}, ${e.techPrefix}, ${e.username}, ${e.password}, ${e.priority}, ${e.weight}, ${e.label}
    from unnest(${db.array(ids as string[])}::uuid[], ${db.array(routeIds as string[])}::uuid[]) as x(id, route_id)`;
}

export async function setSmsDelivery(
  db: Db,
  routeIds: readonly string[],
  delivery: Record<string, string | number | boolean | null>,
  at: Date,
) {
  await db`update routes set sms_delivery = ${db.json(delivery)}, updated_at = ${at} where id = any(${db.array(routeIds as string[])}::uuid[])`;
}

/** Per own route: the facts listing health is judged on. */
export async function listingHealth(sql: Sql, sellerId: string, at: Date) {
  return sql<
    {
      id: string;
      name: string;
      type: 'voice' | 'sms';
      status: string;
      visibility: string;
      rateCount: number;
      endpoints: number;
      hasSmsDelivery: boolean;
      expectedAsr: string | null;
      purchases: number;
      scheduledChanges: number;
      uploadedAt: Date | null;
      openReports: number;
      upheldReports: number;
    }[]
  >`
    select r.id, r.name, r.type, r.status, r.visibility, coalesce(d.row_count, 0)::int as rate_count,
      (select count(*)::int from route_endpoints e where e.route_id = r.id) as endpoints,
      (r.sms_delivery is not null) as has_sms_delivery, r.expected_asr::text as expected_asr,
      (select count(*)::int from purchases p where p.route_id = r.id and p.status = 'active') as purchases,
      (select count(*)::int from rate_changes c where c.route_id = r.id and c.status = 'scheduled' and c.effective_at > ${at}) as scheduled_changes,
      d.uploaded_at,
      (select count(*)::int from route_reports x where x.route_id = r.id and x.status in ('open', 'answered', 'escalated')) as open_reports,
      (select count(*)::int from route_reports x where x.route_id = r.id and x.status = 'upheld' and x.decided_at > ${at}::timestamptz - interval '90 days') as upheld_reports
    from routes r left join rate_decks d on d.route_id = r.id
    where r.seller_id = ${sellerId} and r.status <> 'deleted'
    order by r.id desc limit 10000`;
}

export type SheetVersionKind = 'upload' | 'flat' | 'rows' | 'restore' | 'bulk';

/** Numbers and records a change of the sheet, under the deck's lock (the caller holds it). */
export async function recordSheetVersion(
  tx: Db,
  routeId: string,
  v: {
    kind: SheetVersionKind;
    at: Date;
    rows: number;
    counts: { increase: number; decrease: number; new: number; removal: number; update: number; unchanged: number };
    scheduled: number;
    firstScheduledAt: Date | null;
    restoredFrom: number | null;
  },
): Promise<number> {
  const [row] = await tx<{ number: number }[]>`
    insert into rate_sheet_versions (route_id, number, kind, created_at, rows, increases, decreases, new_destinations,
      removals, updates, unchanged, scheduled_changes, first_scheduled_at, restored_from)
    select ${routeId}, coalesce(max(number), 0) + 1, ${v.kind}, ${v.at}, ${v.rows}, ${v.counts.increase}, ${v.counts.decrease},
      ${v.counts.new}, ${v.counts.removal}, ${v.counts.update}, ${v.counts.unchanged}, ${v.scheduled}, ${v.firstScheduledAt},
      ${v.restoredFrom}
    from rate_sheet_versions where route_id = ${routeId}
    returning number`;
  return row!.number;
}

/** One route-check or caller-ID test result counted on the route's day (216_route_check_results.sql). */
export async function recordCheckResult(
  db: Db,
  r: { routeId: string; kind: 'call' | 'sms' | 'cli'; passed: boolean; at: Date },
): Promise<void> {
  await db`
    insert into route_check_results_daily as t (route_id, day, kind, checks, passed)
    values (${r.routeId}, (${r.at}::timestamptz at time zone 'UTC')::date, ${r.kind}, 1, ${r.passed ? 1 : 0})
    on conflict (route_id, day, kind) do update set checks = t.checks + 1, passed = t.passed + excluded.passed`;
}

/** Check results of the seller's routes over the last 30 days, per route and kind. */
export async function checkResults(sql: Sql, routeIds: readonly string[], at: Date) {
  if (routeIds.length === 0) return [];
  return sql<{ routeId: string; kind: 'call' | 'sms' | 'cli'; checks: number; passed: number }[]>`
    select route_id, kind, sum(checks)::int as checks, sum(passed)::int as passed
    from route_check_results_daily
    where route_id = any(${sql.array(routeIds as string[])}::uuid[])
      and day > (${at}::timestamptz at time zone 'UTC')::date - 30
    group by route_id, kind`;
}
