import type { Db, Sql } from '../../db/connection.js';

export interface ReservationRow {
  id: string;
  groupId: string;
  numberId: string;
  number: string;
  status: 'held' | 'bought' | 'cancelled' | 'expired';
  didId: string | null;
  expiresAt: Date;
  createdAt: Date;
}

const COLUMNS = (db: Db) => db`
  r.id, r.group_id, r.number_id, n.number, r.status, r.did_id, r.expires_at, r.created_at`;

/** Holds one available number of the group (`numberId` when a search hit was chosen); undefined when none is free. */
export async function hold(
  db: Db,
  h: { id: string; accountId: string; groupId: string; numberId: string | null; expiresAt: Date; at: Date },
): Promise<ReservationRow | undefined> {
  const [n] = await db<{ id: string }[]>`
    update did_numbers set state = 'reserved' where id = (
      select id from did_numbers where group_id = ${h.groupId} and state = 'available'
        ${h.numberId ? db`and id = ${h.numberId}` : db``}
      order by id limit 1 for update skip locked)
    returning id`;
  if (!n) return undefined;
  await db`
    insert into did_reservations (id, account_id, number_id, group_id, expires_at, created_at)
    values (${h.id}, ${h.accountId}, ${n.id}, ${h.groupId}, ${h.expiresAt}, ${h.at})`;
  return byId(db, h.id);
}

export async function byId(db: Db, id: string): Promise<ReservationRow | undefined> {
  const [row] = await db<ReservationRow[]>`
    select ${COLUMNS(db)} from did_reservations r join did_numbers n on n.id = r.number_id where r.id = ${id}`;
  return row;
}

export async function heldBy(sql: Sql, accountId: string, now: Date): Promise<ReservationRow[]> {
  return sql<ReservationRow[]>`
    select ${COLUMNS(sql)} from did_reservations r join did_numbers n on n.id = r.number_id
    where r.account_id = ${accountId} and r.status = 'held' and r.expires_at > ${now}
    order by r.id desc`;
}

export async function countHeld(db: Db, accountId: string, now: Date): Promise<number> {
  const [row] = await db<{ n: number }[]>`
    select count(*)::int as n from did_reservations
    where account_id = ${accountId} and status = 'held' and expires_at > ${now}`;
  return row!.n;
}

/** Ends a held reservation (cancelled or expired) and puts its number back on sale; false when it was not held. */
export async function close(
  db: Db,
  id: string,
  status: 'cancelled' | 'expired',
  at: Date,
  accountId?: string,
): Promise<boolean> {
  const [r] = await db<{ numberId: string }[]>`
    update did_reservations set status = ${status}, closed_at = ${at}
    where id = ${id} and status = 'held' ${accountId ? db`and account_id = ${accountId}` : db``}
    returning number_id`;
  if (!r) return false;
  await db`update did_numbers set state = 'available' where id = ${r.numberId} and state = 'reserved'`;
  return true;
}

/** Held reservations past their time, oldest first, locked for this sweep. */
export async function lockExpired(db: Db, now: Date, limit: number): Promise<string[]> {
  const rows = await db<{ id: string }[]>`
    select id from did_reservations where status = 'held' and expires_at <= ${now}
    order by expires_at limit ${limit} for update skip locked`;
  return rows.map((r) => r.id);
}

/**
 * The held number of an unexpired reservation of `accountId` in `groupId`, taken for an order
 * (reserved → assigned); undefined when the hold is gone.
 */
export async function take(
  db: Db,
  id: string,
  accountId: string,
  groupId: string,
  now: Date,
): Promise<{ id: string; number: string } | undefined> {
  const [row] = await db<{ id: string; number: string }[]>`
    update did_numbers n set state = 'assigned'
    from did_reservations r
    where r.id = ${id} and r.account_id = ${accountId} and r.group_id = ${groupId} and r.status = 'held'
      and r.expires_at > ${now} and n.id = r.number_id and n.state = 'reserved'
    returning n.id, n.number`;
  return row;
}

export async function markBought(db: Db, id: string, didId: string, at: Date): Promise<void> {
  await db`update did_reservations set status = 'bought', did_id = ${didId}, closed_at = ${at} where id = ${id}`;
}
