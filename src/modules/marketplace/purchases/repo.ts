import type { Db, Sql } from '../../../db/connection.js';

export interface PurchaseRow {
  id: string;
  accountId: string;
  routeId: string;
  status: 'active' | 'paused' | 'cancelled';
  createdAt: Date;
  cancelledAt: Date | null;
  pausedAt: Date | null;
  routeName: string;
  routeType: 'voice' | 'sms';
  position: number | null;
}

const COLUMNS = (db: Db) => db`
  p.id, p.account_id, p.route_id, p.status, p.created_at, p.cancelled_at, p.paused_at, r.name as route_name, r.type as route_type, o.position`;

export async function findActive(db: Db, accountId: string, routeId: string): Promise<PurchaseRow | undefined> {
  const [row] = await db<PurchaseRow[]>`
    select ${COLUMNS(db)} from purchases p join routes r on r.id = p.route_id
    left join routing_orders o on o.account_id = p.account_id and o.route_id = p.route_id
    where p.account_id = ${accountId} and p.route_id = ${routeId} and p.status = 'active'`;
  return row;
}

export async function findById(db: Db, id: string, accountId: string): Promise<PurchaseRow | undefined> {
  const [row] = await db<PurchaseRow[]>`
    select ${COLUMNS(db)} from purchases p join routes r on r.id = p.route_id
    left join routing_orders o on o.account_id = p.account_id and o.route_id = p.route_id
    where p.id = ${id} and p.account_id = ${accountId}`;
  return row;
}

/** Inserts unless an active purchase exists (the partial unique index decides under concurrency). */
export async function insert(db: Db, id: string, accountId: string, routeId: string): Promise<boolean> {
  const res = await db`
    insert into purchases (id, account_id, route_id) values (${id}, ${accountId}, ${routeId})
    on conflict (account_id, route_id) where status = 'active' do nothing`;
  return res.count === 1;
}

export async function list(
  sql: Sql,
  accountId: string,
  q: { status?: 'active' | 'paused' | 'cancelled'; cursor?: string; limit: number },
) {
  return sql<PurchaseRow[]>`
    select ${COLUMNS(sql)} from purchases p join routes r on r.id = p.route_id
    left join routing_orders o on o.account_id = p.account_id and o.route_id = p.route_id
    where p.account_id = ${accountId}
      ${q.status ? sql`and p.status = ${q.status}` : sql``}
      ${q.cursor ? sql`and p.id < ${q.cursor}` : sql``}
    order by p.id desc limit ${q.limit + 1}`;
}

export async function cancel(db: Db, id: string, accountId: string, at: Date): Promise<boolean> {
  const res =
    await db`update purchases set status = 'cancelled', cancelled_at = ${at} where id = ${id} and account_id = ${accountId} and status in ('active', 'paused')`;
  if (res.count === 1) {
    await db`delete from routing_orders o using purchases p where p.id = ${id} and o.account_id = p.account_id and o.route_id = p.route_id`;
  }
  return res.count === 1;
}

/** Pauses an active purchase or resumes a paused one; false when it is in neither state asked from. */
export async function setPaused(db: Db, id: string, accountId: string, paused: boolean, at: Date): Promise<boolean> {
  const res = paused
    ? await db`update purchases set status = 'paused', paused_at = ${at} where id = ${id} and account_id = ${accountId} and status = 'active'`
    : await db`update purchases set status = 'active', paused_at = null where id = ${id} and account_id = ${accountId} and status = 'paused'`;
  return res.count === 1;
}

/** Routes the account may route over: its active purchases of active routes, and its own active routes. */
export interface UsableRoute {
  routeId: string;
  purchaseId: string | null;
  own: boolean;
  position: number | null;
}

export async function usableRoutes(sql: Sql, accountId: string, type: 'voice' | 'sms'): Promise<UsableRoute[]> {
  return sql<UsableRoute[]>`
    select r.id as route_id, p.id as purchase_id, (r.seller_id = ${accountId}) as own, o.position
    from routes r
    left join purchases p on p.route_id = r.id and p.account_id = ${accountId} and p.status = 'active'
    left join routing_orders o on o.account_id = ${accountId} and o.route_id = r.id
    where r.status = 'active' and r.type = ${type} and (r.seller_id = ${accountId} or p.id is not null)`;
}

export async function routingOrder(sql: Sql, accountId: string) {
  return sql<{ routeId: string; position: number; routeName: string; routeType: string }[]>`
    select o.route_id, o.position, r.name as route_name, r.type as route_type
    from routing_orders o join routes r on r.id = o.route_id
    where o.account_id = ${accountId} order by o.position, o.route_id`;
}

export async function replaceOrder(db: Db, accountId: string, routeIds: readonly string[]): Promise<void> {
  await db`delete from routing_orders where account_id = ${accountId}`;
  if (routeIds.length === 0) return;
  await db`
    insert into routing_orders (account_id, route_id, position)
    select ${accountId}, x.id, x.pos from unnest(${db.array(routeIds as string[])}::uuid[]) with ordinality as x(id, pos)`;
}

export async function setPosition(db: Db, accountId: string, routeId: string, position: number | null): Promise<void> {
  if (position === null) {
    await db`delete from routing_orders where account_id = ${accountId} and route_id = ${routeId}`;
    return;
  }
  await db`
    insert into routing_orders (account_id, route_id, position) values (${accountId}, ${routeId}, ${position})
    on conflict (account_id, route_id) do update set position = excluded.position`;
}

/**
 * A buyer's traffic over one bought route since `since` (its own and its sub-accounts'); a blend's
 * traffic is recorded on its members, so a blend counts its members' records.
 */
export async function buyerUsage(sql: Sql, accountId: string, routeId: string, since: Date) {
  const [row] = await sql<
    { calls: number; answered: number; billedSeconds: string; messages: number; spend: string }[]
  >`
    select count(*) filter (where kind = 'voice')::int as calls,
      count(*) filter (where kind = 'voice' and billed_seconds > 0)::int as answered,
      coalesce(sum(billed_seconds) filter (where kind = 'voice'), 0)::text as billed_seconds,
      coalesce(sum(segments) filter (where kind = 'sms'), 0)::int as messages,
      coalesce(sum(buyer_cost), 0)::numeric(20,6)::text as spend
    from cdrs
    where (account_id = ${accountId} or operator_id = ${accountId}) and created_at >= ${since}
      and not is_probe and not simulated
      and route_id in (select ${routeId}::uuid union all select member_id from route_blend_members where blend_id = ${routeId})`;
  return row!;
}
