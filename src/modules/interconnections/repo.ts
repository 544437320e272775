import type { Db } from '../../db/connection.js';

export type InterconnectionStatus =
  'pending' | 'active' | 'suspended' | 'declined' | 'cancelled' | 'terminated' | 'expired';
export type Side = 'requester' | 'peer';
export type Service = 'voice' | 'sms';
export type Period = 'day' | 'week' | 'month';
export type OverCap = 'list_price' | 'refuse';

/** An agreed seller rate for numbers under a prefix, paid by `payer` on the other side's routes. */
export interface AgreedRate {
  payer: Side;
  service: Service;
  prefix: string;
  rate: string;
  destination: string | null;
}

export interface Terms {
  services: Service[];
  requesterDiscountPct: string;
  peerDiscountPct: string;
  termDays: number;
  note: string | null;
  expiresAt: Date;
  period: Period;
  capMinutes: number | null;
  capMessages: number | null;
  capAmount: string | null;
  overCap: OverCap;
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
  expiredAt: Date | null;
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
  ended_by, ended_at, end_reason, created_at, updated_at, period, cap_minutes, cap_messages,
  cap_amount::text as cap_amount, over_cap, expired_at`;

export async function insert(
  db: Db,
  row: Terms & { id: string; requesterId: string; peerId: string; at: Date },
): Promise<InterconnectionRow> {
  const [r] = await db<InterconnectionRow[]>`
    insert into interconnections (id, requester_id, peer_id, proposed_by, services, requester_discount_pct,
      peer_discount_pct, term_days, note, expires_at, period, cap_minutes, cap_messages, cap_amount, over_cap,
      created_at, updated_at)
    values (${row.id}, ${row.requesterId}, ${row.peerId}, 'requester', ${row.services}::text[],
      ${row.requesterDiscountPct}, ${row.peerDiscountPct}, ${row.termDays}, ${row.note}, ${row.expiresAt},
      ${row.period}, ${row.capMinutes}, ${row.capMessages}, ${row.capAmount}, ${row.overCap}, ${row.at}, ${row.at})
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
      term_days = ${t.termDays}, note = ${t.note}, expires_at = ${t.expiresAt}, period = ${t.period},
      cap_minutes = ${t.capMinutes}, cap_messages = ${t.capMessages}, cap_amount = ${t.capAmount},
      over_cap = ${t.overCap}, rounds = rounds + 1, updated_at = ${at}
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

/** Puts the agreed rates of the terms on the table in place of the last proposal's. */
export async function replaceRates(db: Db, id: string, rates: readonly AgreedRate[]): Promise<void> {
  await db`delete from interconnection_rates where interconnection_id = ${id}`;
  if (rates.length === 0) return;
  await db`
    insert into interconnection_rates ${db(
      rates.map((r) => ({ interconnectionId: id, ...r })),
      'interconnectionId',
      'payer',
      'service',
      'prefix',
      'rate',
      'destination',
    )}`;
}

/** The agreed rates of each interconnection named, by its id. */
export async function ratesOf(db: Db, ids: readonly string[]): Promise<Map<string, AgreedRate[]>> {
  const out = new Map<string, AgreedRate[]>(ids.map((id) => [id, []]));
  if (ids.length === 0) return out;
  const rows = await db<(AgreedRate & { interconnectionId: string })[]>`
    select interconnection_id, payer, service, prefix, rate::text as rate, destination from interconnection_rates
    where interconnection_id = any(${ids as string[]}::uuid[]) order by payer, service, prefix`;
  for (const { interconnectionId, ...r } of rows) out.get(interconnectionId)!.push(r);
  return out;
}

export interface Usage {
  payer: Side;
  periodStart: Date;
  periodEnd: Date;
  seconds: number;
  messages: number;
  amount: string;
}

/** Each side's traffic at the agreed prices in the period running at `at`. */
export function usage(db: Db, r: InterconnectionRow, at: Date): Promise<Usage[]> {
  return db<Usage[]>`
    select s.payer, svc_interconnection_period_start(${r.period}, ${at}) as period_start,
           svc_interconnection_period_end(${r.period}, ${at}) as period_end,
           coalesce(u.seconds, 0)::float8 as seconds, coalesce(u.messages, 0)::float8 as messages,
           coalesce(u.amount, 0)::numeric(20, 6)::text as amount
    from (values ('requester'), ('peer')) s (payer)
    left join interconnection_usage u
      on u.interconnection_id = ${r.id} and u.payer = s.payer
     and u.period_start = svc_interconnection_period_start(${r.period}, ${at})
    order by s.payer desc`;
}

/**
 * Marks pending proposals past `expires_at`, and terms past `valid_until`, expired; returns them.
 * Skips rows another transaction holds, which the next sweep finds.
 */
export function expireDue(db: Db, now: Date): Promise<InterconnectionRow[]> {
  return db<InterconnectionRow[]>`
    update interconnections set status = 'expired', expired_at = ${now}, updated_at = ${now}
    where id in (
      select id from interconnections
      where (status = 'pending' and expires_at <= ${now})
         or (status in ('active', 'suspended') and valid_until <= ${now})
      order by id limit 500
      for update skip locked)
    returning ${columns(db)}`;
}

/**
 * Agreements that were in force at some time in their last closed period and have no final
 * statement of it yet (the statements job's work).
 */
export function closedPeriodDue(db: Db, now: Date): Promise<InterconnectionRow[]> {
  return db<InterconnectionRow[]>`
    select ${columns(db)} from interconnections
    cross join lateral (
      select svc_interconnection_period_start(period, ${now}) as cur,
             svc_interconnection_period_start(period,
               svc_interconnection_period_start(period, ${now}) - interval '1 second') as prev
    ) p
    where activated_at is not null and activated_at < p.cur
      and coalesce(ended_at, expired_at, valid_until) > p.prev
      and not exists (
        select 1 from interconnection_statements s
        where s.interconnection_id = interconnections.id and s.period_start = p.prev and s.final)
    order by id limit 200`;
}

/** A cap one side reached in a period, recorded by the CDR trigger (migration 265) and not yet told. */
export interface CapCrossing {
  interconnectionId: string;
  payer: Side;
  periodStart: Date;
  cap: 'minutes' | 'messages' | 'amount';
  crossedAt: Date;
  periodEnd: Date;
  seconds: string;
  messages: string;
  amount: string;
}

/**
 * Crossings nobody has told yet, locked (another daemon's job skips them), with their
 * interconnection; each is marked told by `capCrossingsTold` in the same transaction.
 */
export async function untoldCapCrossings(
  db: Db,
  limit: number,
): Promise<(CapCrossing & { interconnection: InterconnectionRow })[]> {
  const crossings = await db<CapCrossing[]>`
    select c.interconnection_id, c.payer, c.period_start, c.cap, c.crossed_at,
           svc_interconnection_period_end(i.period, c.period_start) as period_end,
           c.seconds::text, c.messages::text, c.amount::text
    from interconnection_cap_crossings c join interconnections i on i.id = c.interconnection_id
    where c.told_at is null
    order by c.crossed_at limit ${limit} for update of c skip locked`;
  if (crossings.length === 0) return [];
  const rows = await db<InterconnectionRow[]>`
    select ${columns(db)} from interconnections
    where id = any(${[...new Set(crossings.map((c) => c.interconnectionId))]}::uuid[])`;
  const byId = new Map(rows.map((r) => [r.id, r]));
  return crossings.map((c) => ({ ...c, interconnection: byId.get(c.interconnectionId)! }));
}

export async function capCrossingsTold(db: Db, crossings: readonly CapCrossing[], at: Date): Promise<void> {
  for (const c of crossings)
    await db`
      update interconnection_cap_crossings set told_at = ${at}
      where interconnection_id = ${c.interconnectionId} and payer = ${c.payer}
        and period_start = ${c.periodStart} and cap = ${c.cap}`;
}
