import type { Db, Sql } from '../../../db/connection.js';

export type OfferStatus = 'pending' | 'countered' | 'accepted' | 'declined' | 'expired';
export type Side = 'buyer' | 'seller';

export interface OfferRow {
  id: string;
  routeId: string;
  routeName: string;
  routeType: 'voice' | 'sms';
  buyerId: string;
  sellerId: string;
  status: OfferStatus;
  proposedBy: Side;
  volume: number | null;
  note: string | null;
  validDays: number;
  expiresAt: Date;
  decidedAt: Date | null;
  declinedBy: Side | null;
  rounds: number;
  createdAt: Date;
  updatedAt: Date;
  rates: { prefix: string; rate: string }[];
}

const SELECT = (db: Db) => db`
  select o.id, o.route_id, r.name as route_name, r.type as route_type, o.buyer_id, o.seller_id, o.status,
    o.proposed_by, o.volume, o.note, o.valid_days, o.expires_at, o.decided_at, o.declined_by, o.rounds,
    o.created_at, o.updated_at,
    coalesce((select json_agg(json_build_object('prefix', x.prefix, 'rate', x.rate::numeric(20,6)::text) order by x.prefix)
              from offer_rates x where x.offer_id = o.id), '[]'::json) as rates
  from offers o join routes r on r.id = o.route_id`;

export async function find(db: Db, id: string, accountId: string, lock = false): Promise<OfferRow | undefined> {
  if (lock) await db`select 1 from offers where id = ${id} for update`;
  const [row] = await db<
    OfferRow[]
  >`${SELECT(db)} where o.id = ${id} and (o.buyer_id = ${accountId} or o.seller_id = ${accountId})`;
  return row;
}

export async function list(
  sql: Sql,
  accountId: string,
  q: { role?: Side; status?: OfferStatus; routeId?: string; cursor?: string; limit: number },
): Promise<OfferRow[]> {
  const who =
    q.role === 'buyer'
      ? sql`o.buyer_id = ${accountId}`
      : q.role === 'seller'
        ? sql`o.seller_id = ${accountId}`
        : sql`(o.buyer_id = ${accountId} or o.seller_id = ${accountId})`;
  return sql<OfferRow[]>`
    ${SELECT(sql)} where ${who}
      ${q.status ? sql`and o.status = ${q.status}` : sql``}
      ${q.routeId ? sql`and o.route_id = ${q.routeId}` : sql``}
      ${q.cursor ? sql`and o.id < ${q.cursor}` : sql``}
    order by o.id desc limit ${q.limit + 1}`;
}

export async function openOfferExists(db: Db, buyerId: string, routeId: string): Promise<boolean> {
  const rows = await db`
    select 1 from offers where buyer_id = ${buyerId} and route_id = ${routeId} and status in ('pending', 'countered')`;
  return rows.length > 0;
}

export async function insert(
  db: Db,
  o: {
    id: string;
    routeId: string;
    buyerId: string;
    sellerId: string;
    volume: number | null;
    note: string | null;
    validDays: number;
    expiresAt: Date;
  },
): Promise<void> {
  await db`insert into offers ${db({
    id: o.id,
    route_id: o.routeId,
    buyer_id: o.buyerId,
    seller_id: o.sellerId,
    proposed_by: 'buyer',
    volume: o.volume,
    note: o.note,
    valid_days: o.validDays,
    expires_at: o.expiresAt,
  })}`;
}

export async function replaceRates(db: Db, offerId: string, rates: readonly { prefix: string; rate: string }[]) {
  await db`delete from offer_rates where offer_id = ${offerId}`;
  await db`
    insert into offer_rates (offer_id, prefix, rate)
    select ${offerId}, x.prefix, x.rate
    from unnest(${db.array(rates.map((r) => r.prefix))}::text[], ${db.array(rates.map((r) => r.rate))}::numeric[]) as x(prefix, rate)`;
}

export async function counter(db: Db, id: string, by: Side, note: string | null, expiresAt: Date, at: Date) {
  await db`
    update offers set status = 'countered', proposed_by = ${by}, note = coalesce(${note}, note), expires_at = ${expiresAt},
      rounds = rounds + 1, updated_at = ${at}
    where id = ${id}`;
}

export async function decide(db: Db, id: string, status: 'accepted' | 'declined', by: Side | null, at: Date) {
  await db`
    update offers set status = ${status}, declined_by = ${status === 'declined' ? by : null}, decided_at = ${at}, updated_at = ${at}
    where id = ${id}`;
}

/** Accepted rates become the buyer's private rates on the route; a newer offer's prefix replaces an older one's. */
export async function grantPrivateRates(db: Db, o: OfferRow, from: Date, until: Date): Promise<void> {
  await db`
    insert into private_rates (route_id, account_id, prefix, rate, offer_id, valid_from, valid_until)
    select ${o.routeId}, ${o.buyerId}, x.prefix, x.rate, ${o.id}, ${from}, ${until}
    from offer_rates x where x.offer_id = ${o.id}
    on conflict (account_id, route_id, prefix) do update
      set rate = excluded.rate, offer_id = excluded.offer_id, valid_from = excluded.valid_from, valid_until = excluded.valid_until`;
}

/** Open offers whose time has run out, marked expired; the rows to tell both sides about. */
export async function expireDue(db: Db, now: Date) {
  return db<{ id: string; routeId: string; buyerId: string; sellerId: string }[]>`
    update offers set status = 'expired', decided_at = ${now}, updated_at = ${now}
    where status in ('pending', 'countered') and expires_at <= ${now}
    returning id, route_id, buyer_id, seller_id`;
}

export async function privateRates(
  sql: Sql,
  accountId: string,
  q: { role: Side; routeId?: string; limit: number; offset: number },
  now: Date,
) {
  const rows = await sql<
    {
      routeId: string;
      routeName: string;
      routeType: 'voice' | 'sms';
      prefix: string;
      rate: string;
      offerId: string;
      validFrom: Date;
      validUntil: Date;
      total: string;
    }[]
  >`
    select p.route_id, r.name as route_name, r.type as route_type, p.prefix, p.rate::numeric(20,6)::text as rate,
      p.offer_id, p.valid_from, p.valid_until, count(*) over () as total
    from private_rates p join routes r on r.id = p.route_id
    where ${q.role === 'buyer' ? sql`p.account_id = ${accountId}` : sql`r.seller_id = ${accountId}`}
      and p.valid_until > ${now}
      ${q.routeId ? sql`and p.route_id = ${q.routeId}` : sql``}
    order by p.route_id, p.prefix, p.account_id
    limit ${q.limit} offset ${q.offset}`;
  return { rows, total: rows.length === 0 ? 0 : Number(rows[0]!.total) };
}
