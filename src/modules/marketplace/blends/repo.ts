import type { Db, Sql } from '../../../db/connection.js';

export type BlendStrategy = 'percent' | 'priority' | 'least_cost' | 'quality';

export interface BlendMemberRow {
  memberId: string;
  position: number;
  percent: number;
}

/** A blend with its listing's facts, as routing and the API read it. */
export interface BlendRow {
  id: string;
  ownerId: string;
  type: 'voice' | 'sms';
  name: string;
  visibility: 'public' | 'private';
  status: 'active' | 'paused' | 'suspended' | 'deleted';
  strategy: BlendStrategy;
  margin: string;
  createdAt: Date;
  updatedAt: Date;
  members: BlendMemberRow[];
}

export const BLEND_CHANNEL = 'svc_route_blends';

const SELECT = (db: Db) => db`
  select r.id, r.seller_id as owner_id, r.type, r.name, r.visibility, r.status, b.strategy,
    b.margin::numeric(20,6)::text as margin, r.created_at, b.updated_at,
    coalesce((select json_agg(json_build_object('memberId', m.member_id, 'position', m.position, 'percent', m.percent)
                order by m.position)
              from route_blend_members m where m.blend_id = b.route_id), '[]'::json) as members
  from route_blends b join routes r on r.id = b.route_id`;

/** Blends not deleted: every one (`ids` null) or those asked for. */
export async function loadBlends(db: Db, ids: readonly string[] | null): Promise<BlendRow[]> {
  return db<BlendRow[]>`
    ${SELECT(db)} where r.status <> 'deleted'
    ${ids === null ? db`` : db`and r.id = any(${db.array(ids as string[])}::uuid[])`}`;
}

export async function findOwn(db: Db, id: string, ownerId: string): Promise<BlendRow | undefined> {
  const [row] = await db<
    BlendRow[]
  >`${SELECT(db)} where r.id = ${id} and r.seller_id = ${ownerId} and r.status <> 'deleted'`;
  return row;
}

export async function listOwn(
  sql: Sql,
  ownerId: string,
  q: { type?: 'voice' | 'sms'; cursor?: string; limit: number },
): Promise<BlendRow[]> {
  return sql<BlendRow[]>`
    ${SELECT(sql)} where r.seller_id = ${ownerId} and r.status <> 'deleted'
      ${q.type ? sql`and r.type = ${q.type}` : sql``}
      ${q.cursor ? sql`and r.id < ${q.cursor}` : sql``}
    order by r.id desc limit ${q.limit + 1}`;
}

/** Facts of candidate member routes: owner, type, status, and whether the route is itself a blend. */
export async function memberFacts(db: Db, ids: readonly string[]) {
  return db<{ id: string; sellerId: string; type: 'voice' | 'sms'; status: string; isBlend: boolean }[]>`
    select r.id, r.seller_id, r.type, r.status, exists (select 1 from route_blends b where b.route_id = r.id) as is_blend
    from routes r where r.id = any(${db.array(ids as string[])}::uuid[])`;
}

export async function insertBlend(
  db: Db,
  b: { id: string; ownerId: string; type: 'voice' | 'sms'; name: string; visibility: 'public' | 'private' },
  strategy: BlendStrategy,
  margin: string,
): Promise<void> {
  await db`insert into routes (id, seller_id, type, name, visibility) values (${b.id}, ${b.ownerId}, ${b.type}, ${b.name}, ${b.visibility})`;
  await db`insert into route_blends (route_id, strategy, margin) values (${b.id}, ${strategy}, ${margin})`;
}

export async function replaceMembers(db: Db, blendId: string, members: readonly BlendMemberRow[]): Promise<void> {
  await db`delete from route_blend_members where blend_id = ${blendId}`;
  await db`
    insert into route_blend_members (blend_id, member_id, position, percent)
    select ${blendId}, x.member_id, x.position, x.percent
    from unnest(${db.array(members.map((m) => m.memberId))}::uuid[], ${db.array(members.map((m) => m.position))}::int[],
                ${db.array(members.map((m) => m.percent))}::int[]) as x(member_id, position, percent)`;
}

export async function updateBlend(
  db: Db,
  id: string,
  f: { name?: string; visibility?: 'public' | 'private'; strategy?: BlendStrategy; margin?: string },
): Promise<void> {
  const routeFields: Record<string, string> = {};
  if (f.name !== undefined) routeFields['name'] = f.name;
  if (f.visibility !== undefined) routeFields['visibility'] = f.visibility;
  if (Object.keys(routeFields).length > 0)
    await db`update routes set ${db(routeFields)}, updated_at = now() where id = ${id}`;
  await db`
    update route_blends set
      strategy = coalesce(${f.strategy ?? null}, strategy),
      margin = coalesce(${f.margin ?? null}::numeric, margin),
      updated_at = now()
    where route_id = ${id}`;
}

export async function activeSales(db: Db, id: string): Promise<number> {
  const [row] = await db<{ n: number }[]>`
    select count(*)::int as n from purchases where route_id = ${id} and status = 'active'`;
  return row?.n ?? 0;
}

/** A blend is deleted as a listing: its purchases and history keep pointing at the row. */
export async function markDeleted(db: Db, id: string): Promise<void> {
  await db`update routes set status = 'deleted', updated_at = now() where id = ${id}`;
  await db`delete from routing_orders where route_id = ${id}`;
  await db`update route_blends set updated_at = now() where route_id = ${id}`;
}
