import type { Db, Sql } from '../../db/connection.js';
import { newId } from '../../platform/ids.js';

export type DidStatus = 'pending' | 'active' | 'suspended' | 'released' | 'failed';
export type PointMode = 'unrouted' | 'sip' | 'forward';
export type DidEventKind =
  | 'ordered'
  | 'activated'
  | 'renewed'
  | 'renewal_failed'
  | 'suspended'
  | 'reactivated'
  | 'released'
  | 'routing_changed'
  | 'auto_renew_changed'
  | 'failed'
  | 'release_scheduled'
  | 'release_cancelled'
  | 'settings_changed'
  | 'ported_in'
  | 'provisioning_changed';

/** Where the number's emergency calls are located (`PUT /dids/{id}/emergency-address`). */
export interface EmergencyAddress {
  name: string;
  street: string;
  street2: string | null;
  city: string;
  region: string | null;
  postalCode: string;
  countryCode: string;
}

export interface DidRow {
  id: string;
  accountId: string;
  orderedBy: string;
  /** Null on a ported number (no seller, group or SKU). */
  groupId: string | null;
  skuId: string | null;
  sellerId: string | null;
  numberId: string | null;
  number: string | null;
  status: DidStatus;
  pointMode: PointMode;
  pointsTo: string | null;
  pointsToBackup: string | null;
  ringTimeoutSeconds: number;
  autoRenew: boolean;
  channels: number;
  setupPrice: string;
  monthlyPrice: string;
  graceDays: number;
  label: string | null;
  aiAgentId: string | null;
  periodsPaid: number;
  orderedAt: Date;
  activatedAt: Date | null;
  nextRenewalAt: Date | null;
  suspendedAt: Date | null;
  releasedAt: Date | null;
  endpointReachable: boolean | null;
  endpointCause: string | null;
  endpointCheckedAt: Date | null;
  tags: string[];
  callerName: string | null;
  emergencyAddress: EmergencyAddress | null;
  releaseAt: Date | null;
  /** Null for a ported number whose digits no catalogue country dials. */
  country: string | null;
  countryCode: string | null;
  city: string | null;
  areaPrefix: string | null;
  didType: string;
  /** `rented` from a seller's listing, or `ported` in by a completed port-in order. */
  origin: DidOrigin;
  portInId: string | null;
  /** A ported number's carrier trunk account when its order named one. */
  inboundCarrierId: string | null;
}

export type DidOrigin = 'rented' | 'ported';

const COLUMNS = (db: Db) => db`
  d.id, d.account_id, d.ordered_by, d.group_id, d.sku_id, d.seller_id, d.number_id, d.number, d.status, d.point_mode,
  d.points_to, d.points_to_backup, d.ring_timeout_seconds, d.auto_renew, d.channels, d.setup_price::text, d.monthly_price::text, d.grace_days,
  d.label, d.ai_agent_id, d.periods_paid, d.ordered_at, d.activated_at, d.next_renewal_at, d.suspended_at,
  d.released_at, d.endpoint_reachable, d.endpoint_cause, d.endpoint_checked_at, d.tags, d.caller_name,
  d.emergency_address, d.release_at, c.name as country, c.country_code,
  g.city, g.area_prefix, coalesce(t.name, 'Ported') as did_type, d.origin, d.port_in_id, d.inbound_carrier_id`;

const FROM = (db: Db) => db`
  dids d left join did_groups g on g.id = d.group_id left join did_countries c on c.id = coalesce(g.country_id, d.country_id)
  left join did_types t on t.id = g.type_id`;

export async function insert(
  db: Db,
  d: {
    id: string;
    accountId: string;
    orderedBy: string;
    groupId: string;
    skuId: string;
    sellerId: string;
    numberId: string;
    channels: number;
    setupPrice: string;
    monthlyPrice: string;
    graceDays: number;
    orderedAt: Date;
  },
): Promise<void> {
  await db`
    insert into dids (id, account_id, ordered_by, group_id, sku_id, seller_id, number_id, channels, setup_price,
                      monthly_price, grace_days, ordered_at, updated_at)
    values (${d.id}, ${d.accountId}, ${d.orderedBy}, ${d.groupId}, ${d.skuId}, ${d.sellerId}, ${d.numberId}, ${d.channels},
            ${d.setupPrice}::numeric, ${d.monthlyPrice}::numeric, ${d.graceDays}, ${d.orderedAt}, ${d.orderedAt})`;
}

/**
 * A ported number's DID, active at once (its digits are known): the buyer's own, without seller,
 * group or SKU; its monthly fee is the platform's, charged from `nextRenewalAt` by the renewal job.
 */
export async function insertPorted(
  db: Db,
  d: {
    id: string;
    accountId: string;
    number: string;
    portInId: string;
    inboundCarrierId: string | null;
    monthlyFee: string;
    graceDays: number;
    at: Date;
    nextRenewalAt: Date;
  },
): Promise<void> {
  // The catalogue country is the longest dialling prefix the digits start with (none: unknown).
  await db`
    insert into dids (id, account_id, ordered_by, origin, port_in_id, number, status, channels, setup_price,
                      monthly_price, grace_days, ordered_at, activated_at, next_renewal_at, inbound_carrier_id,
                      country_id, updated_at)
    values (${d.id}, ${d.accountId}, ${d.accountId}, 'ported', ${d.portInId}, ${d.number}, 'active', 1, 0,
            ${d.monthlyFee}::numeric, ${d.graceDays}, ${d.at}, ${d.at}, ${d.nextRenewalAt}, ${d.inboundCarrierId},
            (select id from did_countries where ${d.number} like prefix || '%' order by length(prefix) desc limit 1),
            ${d.at})`;
}

/** The monthly price a ported number was last charged (the setting may change between months). */
export async function setMonthlyPrice(db: Db, id: string, price: string): Promise<void> {
  await db`update dids set monthly_price = ${price}::numeric where id = ${id}`;
}

export async function byId(db: Db, id: string, opts: { forUpdate?: boolean } = {}): Promise<DidRow | undefined> {
  const [row] = opts.forUpdate
    ? await db<DidRow[]>`select ${COLUMNS(db)} from ${FROM(db)} where d.id = ${id} for update of d`
    : await db<DidRow[]>`select ${COLUMNS(db)} from ${FROM(db)} where d.id = ${id}`;
  return row;
}

/** DIDs the viewer may see: its own, and those of its sub-accounts. */
export async function list(
  sql: Sql,
  viewerId: string,
  q: { status?: DidStatus | undefined; tag?: string | undefined; cursor?: string | undefined; limit: number },
): Promise<DidRow[]> {
  return sql<DidRow[]>`
    select ${COLUMNS(sql)} from ${FROM(sql)}
    where (d.account_id = ${viewerId} or d.ordered_by = ${viewerId})
      ${q.status ? sql`and d.status = ${q.status}` : sql``}
      ${q.tag ? sql`and d.tags @> array[${q.tag}]::text[]` : sql``}
      ${q.cursor ? sql`and d.id < ${q.cursor}` : sql``}
    order by d.id desc limit ${q.limit + 1}`;
}

export async function activeNumbers(sql: Sql, viewerId: string): Promise<DidRow[]> {
  return sql<DidRow[]>`
    select ${COLUMNS(sql)} from ${FROM(sql)}
    where (d.account_id = ${viewerId} or d.ordered_by = ${viewerId}) and d.status = 'active' and d.number is not null
    order by d.number`;
}

export async function event(
  db: Db,
  e: {
    didId: string;
    accountId: string;
    kind: DidEventKind;
    at: Date;
    amount?: string | null;
    postingId?: string | null;
    data?: Record<string, unknown>;
  },
): Promise<void> {
  await db`
    insert into did_events (id, did_id, account_id, kind, amount, posting_id, data, created_at)
    values (${newId()}, ${e.didId}, ${e.accountId}, ${e.kind}, ${e.amount ?? null}::numeric, ${e.postingId ?? null},
            ${db.json((e.data ?? {}) as never)}, ${e.at})`;
}

export async function events(sql: Sql, didId: string, q: { cursor?: string | undefined; limit: number }) {
  return sql<
    {
      id: string;
      kind: DidEventKind;
      amount: string | null;
      postingId: string | null;
      data: Record<string, unknown>;
      createdAt: Date;
    }[]
  >`
    select id, kind, amount::text, posting_id, data, created_at from did_events
    where did_id = ${didId} ${q.cursor ? sql`and id < ${q.cursor}` : sql``}
    order by id desc limit ${q.limit + 1}`;
}

export async function activate(db: Db, id: string, at: Date, nextRenewalAt: Date): Promise<string | null> {
  const [row] = await db<{ number: string }[]>`
    update dids d set status = 'active', number = n.number, activated_at = ${at}, next_renewal_at = ${nextRenewalAt},
                      updated_at = ${at}
    from did_numbers n where d.id = ${id} and d.status = 'pending' and n.id = d.number_id
    returning d.number`;
  return row?.number ?? null;
}

/** Pending DIDs, oldest first, locked for the provisioner (another daemon skips them). */
export async function lockPending(db: Db, limit: number): Promise<string[]> {
  const rows = await db<{ id: string }[]>`
    select id from dids where status = 'pending' order by ordered_at limit ${limit} for update skip locked`;
  return rows.map((r) => r.id);
}

/** Active DIDs due for renewal and suspended ones, except those this run has handled already. */
export async function due(db: Db, now: Date, limit: number, exclude: readonly string[]): Promise<string[]> {
  const rows = await db<{ id: string }[]>`
    (select id from dids where status = 'active' and next_renewal_at <= ${now}
       and id <> all (${exclude as string[]}::uuid[]) order by next_renewal_at limit ${limit})
    union all
    (select id from dids where status = 'suspended' and id <> all (${exclude as string[]}::uuid[])
     order by suspended_at limit ${limit})`;
  return rows.map((r) => r.id);
}

export async function renewed(db: Db, id: string, period: number, next: Date, at: Date): Promise<void> {
  await db`
    update dids set status = 'active', periods_paid = ${period}, next_renewal_at = ${next}, suspended_at = null,
                    updated_at = ${at}
    where id = ${id}`;
}

export async function suspend(db: Db, id: string, at: Date): Promise<void> {
  await db`update dids set status = 'suspended', suspended_at = ${at}, updated_at = ${at} where id = ${id}`;
}

export async function release(db: Db, id: string, at: Date): Promise<void> {
  const [d] = await db<{ origin: DidOrigin; number: string | null; accountId: string }[]>`
    update dids set status = 'released', released_at = ${at}, next_renewal_at = null, updated_at = ${at},
                    point_mode = 'unrouted', points_to = null, points_to_backup = null
    where id = ${id} returning origin, number, account_id`;
  // What the provider lists for the number is taken off (the provisioning job clears it); what was never sent is forgotten.
  await db`delete from did_provisioning where did_id = ${id} and status in ('not_provisioned', 'pending', 'failed')`;
  await db`
    update did_provisioning set desired = null, status = 'pending', attempts = 0, error = null, next_attempt_at = ${at},
                                updated_at = ${at}
    where did_id = ${id} and status = 'provisioned' and desired is not null`;
  // A released ported number is no longer the buyer's here: its digits may be ordered again.
  if (d?.origin === 'ported' && d.number !== null)
    await db`
      update did_port_in_numbers set state = 'dropped'
      where number = ${d.number} and account_id = ${d.accountId} and state = 'ported'`;
}

export async function setAutoRenew(db: Db, id: string, on: boolean, at: Date): Promise<void> {
  await db`update dids set auto_renew = ${on}, updated_at = ${at} where id = ${id}`;
}

export async function setLabel(db: Db, id: string, label: string | null, at: Date): Promise<void> {
  await db`update dids set label = ${label}, updated_at = ${at} where id = ${id}`;
}

export async function setRouting(
  db: Db,
  id: string,
  r: { pointMode: PointMode; pointsTo: string | null; pointsToBackup: string | null; ringTimeoutSeconds: number },
  at: Date,
): Promise<void> {
  await db`
    update dids set point_mode = ${r.pointMode}, points_to = ${r.pointsTo}, points_to_backup = ${r.pointsToBackup},
                    ring_timeout_seconds = ${r.ringTimeoutSeconds},
                    endpoint_reachable = null, endpoint_cause = null, endpoint_checked_at = null, updated_at = ${at}
    where id = ${id}`;
}

export async function setReachability(
  db: Db,
  id: string,
  r: { reachable: boolean; cause: string | null },
  at: Date,
): Promise<void> {
  await db`
    update dids set endpoint_reachable = ${r.reachable}, endpoint_cause = ${r.cause}, endpoint_checked_at = ${at}
    where id = ${id}`;
}

export async function setAiAgent(db: Db, id: string, agentId: string | null, at: Date): Promise<void> {
  await db`update dids set ai_agent_id = ${agentId}, updated_at = ${at} where id = ${id}`;
}

/** Counts by status and the money spent on DIDs (every event amount is a charge). */
export async function overview(sql: Sql, viewerId: string) {
  const [row] = await sql<
    {
      total: number;
      active: number;
      pending: number;
      suspended: number;
      released: number;
      failed: number;
      monthlyRecurring: string;
      lifetimeSpend: string;
    }[]
  >`
    select count(*)::int as total,
           count(*) filter (where status = 'active')::int as active,
           count(*) filter (where status = 'pending')::int as pending,
           count(*) filter (where status = 'suspended')::int as suspended,
           count(*) filter (where status = 'released')::int as released,
           count(*) filter (where status = 'failed')::int as failed,
           coalesce(sum(monthly_price) filter (where status in ('active', 'pending') and auto_renew), 0)::text as monthly_recurring,
           coalesce((select sum(e.amount) from did_events e join dids x on x.id = e.did_id
                     where (x.account_id = ${viewerId} or x.ordered_by = ${viewerId}) and e.amount is not null), 0)::text
             as lifetime_spend
    from dids where account_id = ${viewerId} or ordered_by = ${viewerId}`;
  return row!;
}

/** Charges (and refunds) of one DID by month since `from`. */
export async function spendByMonth(sql: Sql, didId: string, from: Date) {
  return sql<{ period: string; kind: DidEventKind; amount: string }[]>`
    select to_char(date_trunc('month', created_at at time zone 'UTC'), 'YYYY-MM') as period, kind,
           sum(amount)::text as amount
    from did_events where did_id = ${didId} and amount is not null and created_at >= ${from}
    group by 1, 2 order by 1`;
}

/** The numbers an account rents or rented (usage follows the renter). */
export async function idsOf(sql: Sql, accountId: string): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`select id from dids where account_id = ${accountId}`;
  return rows.map((r) => r.id);
}

/** Messages and voicemails on numbers by month (UTC) while `accountId` rented them. */
export async function messageUsage(sql: Sql, accountId: string, didIds: readonly string[], from: Date, to: Date) {
  return sql<{ period: string; received: number; sent: number; segments: number; cost: string }[]>`
    select to_char(created_at at time zone 'UTC', 'YYYY-MM') as period,
           count(*) filter (where direction = 'in')::int as received, count(*) filter (where direction = 'out')::int as sent,
           coalesce(sum(segments), 0)::int as segments, sum(cost)::numeric(20, 6)::text as cost
    from did_messages
    where did_id = any(${didIds as string[]}::uuid[]) and account_id = ${accountId}
      and created_at >= ${from} and created_at < ${to}
    group by 1`;
}

export async function voicemailUsage(sql: Sql, accountId: string, didIds: readonly string[], from: Date, to: Date) {
  return sql<{ period: string; voicemails: number; ms: number }[]>`
    select to_char(created_at at time zone 'UTC', 'YYYY-MM') as period, count(*)::int as voicemails,
           coalesce(sum(duration_ms), 0)::int as ms
    from did_voicemails
    where did_id = any(${didIds as string[]}::uuid[]) and account_id = ${accountId} and deleted_at is null
      and created_at >= ${from} and created_at < ${to}
    group by 1`;
}

export async function spendTotals(sql: Sql, didId: string) {
  const [row] = await sql<{ gross: string; setup: string; recurring: string; refunded: string }[]>`
    select coalesce(sum(amount) filter (where amount > 0), 0)::text as gross,
           coalesce(sum(coalesce((data ->> 'setup')::numeric, 0)) filter (where kind = 'ordered'), 0)::text as setup,
           coalesce(sum(coalesce((data ->> 'monthly')::numeric, amount)) filter (where kind in ('ordered', 'renewed', 'reactivated')), 0)::text
             as recurring,
           coalesce(-sum(amount) filter (where amount < 0), 0)::text as refunded
    from did_events where did_id = ${didId}`;
  return row!;
}
