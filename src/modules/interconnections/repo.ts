import type { Db } from '../../db/connection.js';

export type InterconnectionStatus = 'pending' | 'active' | 'suspended' | 'declined' | 'cancelled' | 'terminated';
export type Side = 'requester' | 'peer';
export type Service = 'voice' | 'sms';

export interface Terms {
  services: Service[];
  requesterDiscountPct: string;
  peerDiscountPct: string;
  termDays: number;
  note: string | null;
  expiresAt: Date;
}

export interface InterconnectionRow extends Terms {
  id: string;
  requesterId: string;
  peerId: string;
  status: InterconnectionStatus;
  proposedBy: Side;
  rounds: number;
  activatedAt: Date | null;
  validUntil: Date | null;
  suspendedBy: string | null;
  suspendedAt: Date | null;
  endedBy: string | null;
  endedAt: Date | null;
  endReason: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A change of state (`at` is when; the other fields only when they change). */
export interface StatusChange {
  status: InterconnectionStatus;
  activatedAt?: Date;
  validUntil?: Date;
  suspendedBy?: string | null;
  endedBy?: string;
  endReason?: string | null;
}

const columns = (db: Db) => db`
  id, requester_id, peer_id, status, proposed_by, services,
  requester_discount_pct::text as requester_discount_pct, peer_discount_pct::text as peer_discount_pct,
  term_days, note, expires_at, rounds, activated_at, valid_until, suspended_by, suspended_at,
  ended_by, ended_at, end_reason, created_at, updated_at`;

export async function insert(
  db: Db,
  row: Terms & { id: string; requesterId: string; peerId: string; at: Date },
): Promise<InterconnectionRow> {
  const [r] = await db<InterconnectionRow[]>`
    insert into interconnections (id, requester_id, peer_id, proposed_by, services, requester_discount_pct,
      peer_discount_pct, term_days, note, expires_at, created_at, updated_at)
    values (${row.id}, ${row.requesterId}, ${row.peerId}, 'requester', ${row.services}::text[],
      ${row.requesterDiscountPct}, ${row.peerDiscountPct}, ${row.termDays}, ${row.note}, ${row.expiresAt},
      ${row.at}, ${row.at})
    returning ${columns(db)}`;
  return r!;
}

/** One interconnection the account is a side of (`lock`: for update, inside a transaction). */
export async function find(
  db: Db,
  id: string,
  accountId: string,
  lock = false,
): Promise<InterconnectionRow | undefined> {
  const [r] = await db<InterconnectionRow[]>`
    select ${columns(db)} from interconnections
    where id = ${id} and (requester_id = ${accountId} or peer_id = ${accountId})
    ${lock ? db`for update` : db``}`;
  return r;
}

export async function list(
  db: Db,
  accountId: string,
  q: {
    role?: Side | undefined;
    status?: InterconnectionStatus | undefined;
    cursor?: string | undefined;
    limit: number;
  },
): Promise<InterconnectionRow[]> {
  const side =
    q.role === 'requester'
      ? db`requester_id = ${accountId}`
      : q.role === 'peer'
        ? db`peer_id = ${accountId}`
        : db`(requester_id = ${accountId} or peer_id = ${accountId})`;
  return db<InterconnectionRow[]>`
    select ${columns(db)} from interconnections
    where ${side}
      ${q.status ? db`and status = ${q.status}` : db``}
      ${q.cursor ? db`and id < ${q.cursor}` : db``}
    order by id desc limit ${q.limit}`;
}

/** Replaces the terms on the table with the other side's counter-proposal. */
export async function counter(db: Db, id: string, by: Side, t: Terms, at: Date): Promise<InterconnectionRow> {
  const [r] = await db<InterconnectionRow[]>`
    update interconnections set proposed_by = ${by}, services = ${t.services}::text[],
      requester_discount_pct = ${t.requesterDiscountPct}, peer_discount_pct = ${t.peerDiscountPct},
      term_days = ${t.termDays}, note = ${t.note}, expires_at = ${t.expiresAt}, rounds = rounds + 1,
      updated_at = ${at}
    where id = ${id}
    returning ${columns(db)}`;
  return r!;
}

export async function setStatus(db: Db, id: string, change: StatusChange & { at: Date }): Promise<InterconnectionRow> {
  const { at } = change;
  const [r] = await db<InterconnectionRow[]>`
    update interconnections set status = ${change.status}, updated_at = ${at}
      ${change.activatedAt ? db`, activated_at = ${change.activatedAt}, valid_until = ${change.validUntil!}` : db``}
      ${change.suspendedBy !== undefined ? db`, suspended_by = ${change.suspendedBy}, suspended_at = ${change.suspendedBy === null ? null : at}` : db``}
      ${change.endedBy ? db`, ended_by = ${change.endedBy}, ended_at = ${at}, end_reason = ${change.endReason ?? null}` : db``}
    where id = ${id}
    returning ${columns(db)}`;
  return r!;
}
