import type { Db } from '../../db/connection.js';

/** A CDR as every plane writes it: one per call leg, one per message. */
export interface CdrInsert {
  id: string;
  accountId: string;
  operatorId: string | null;
  sellerId: string | null;
  callUuid: string | null;
  callGroupId: string | null;
  direction: 'outbound' | 'inbound';
  kind: 'voice' | 'sms';
  source: string;
  routeId: string | null;
  fromNumber: string | null;
  toNumber: string | null;
  cli: string | null;
  status: string;
  sipCode: number | null;
  hangupCause: string | null;
  durationSeconds: number | null;
  billedSeconds: number | null;
  segments: number | null;
  pddMs: number | null;
  /** A trunk leg's route media mode at setup; null for SMS and platform-placed calls. */
  mediaMode: 'direct' | 'proxy' | null;
  buyerCost: string | null;
  sellerCredit: string | null;
  ratePerUnit: string | null;
  /** The interconnection whose terms priced the leg or message, and the seller rate they agreed. */
  interconnectionId: string | null;
  agreedRate: string | null;
  simulated: boolean;
  isProbe: boolean;
  answeredAt: Date | null;
  endedAt: Date | null;
  createdAt: Date;
}

export interface CdrRow {
  id: string;
  accountId: string;
  sellerId: string | null;
  callUuid: string | null;
  callGroupId: string | null;
  direction: string;
  kind: string;
  routeId: string | null;
  fromNumber: string | null;
  toNumber: string | null;
  cli: string | null;
  status: string | null;
  sipCode: number | null;
  hangupCause: string | null;
  durationSeconds: number | null;
  billedSeconds: number | null;
  segments: number | null;
  pddMs: number | null;
  mediaMode: 'direct' | 'proxy' | null;
  buyerCost: string | null;
  sellerCredit: string | null;
  ratePerUnit: string | null;
  answeredAt: Date | null;
  endedAt: Date | null;
  createdAt: Date;
}

export interface CdrFilter {
  viewerId: string;
  from?: Date | undefined;
  to?: Date | undefined;
  kind?: 'voice' | 'sms' | undefined;
  direction?: 'outbound' | 'inbound' | undefined;
  mediaMode?: 'direct' | 'proxy' | undefined;
  cursor?: string | undefined;
  limit: number;
}

/** Seller and capacity terms of a route, as billing and call admission read them. */
export interface RouteTerms {
  id: string;
  sellerId: string;
  capacity: number | null;
  maxCps: number | null;
  mediaMode: 'direct' | 'proxy';
}

/** One month of a rented number's calls (`period` YYYY-MM, UTC). */
export interface NumberUsageMonth {
  period: string;
  calls: number;
  answered: number;
  seconds: number;
  /** 6-place money: everything the payer's calls on the number cost. */
  cost: string;
}

export function createCdrsRepo(db: Db) {
  return {
    /**
     * Many rows in one statement, in the caller's transaction. One JSON parameter and the table's
     * own column types: the statement's text is the same for every batch size, so it is prepared
     * once per connection (a VALUES list of 31 parameters a row was a new statement per size).
     */
    async insertCdrs(tx: Db, rows: readonly CdrInsert[]): Promise<void> {
      if (rows.length === 0) return;
      await tx`
        insert into cdrs (
          id, account_id, operator_id, seller_id, call_uuid, call_group_id, direction, kind, source,
          route_id, from_number, to_number, cli, status, sip_code, hangup_cause, duration_seconds,
          billed_seconds, segments, pdd_ms, media_mode, buyer_cost, seller_credit, rate_per_unit,
          interconnection_id, agreed_rate, simulated, is_probe, answered_at, ended_at, created_at)
        select
          id, account_id, operator_id, seller_id, call_uuid, call_group_id, direction, kind, source,
          route_id, from_number, to_number, cli, status, sip_code, hangup_cause, duration_seconds,
          billed_seconds, segments, pdd_ms, media_mode, buyer_cost, seller_credit, rate_per_unit,
          interconnection_id, agreed_rate, simulated, is_probe, answered_at, ended_at, created_at
        from jsonb_populate_recordset(null::cdrs, ${tx.json(rows.map(cdrJson) as never)})`;
    },

    /** The buyer's rows, and as a seller the rows of its routes (sellerCredit only for the seller). */
    async listCdrs(f: CdrFilter): Promise<CdrRow[]> {
      return db<CdrRow[]>`
        select id, account_id, seller_id, call_uuid, call_group_id, direction, kind, route_id, from_number, to_number, cli,
               status, sip_code, hangup_cause, duration_seconds, billed_seconds, segments, pdd_ms, media_mode,
               buyer_cost::numeric(20,6)::text as buyer_cost, seller_credit::numeric(20,6)::text as seller_credit,
               rate_per_unit::numeric(20,6)::text as rate_per_unit, answered_at, ended_at, created_at
        from cdrs
        where (account_id = ${f.viewerId} or operator_id = ${f.viewerId} or seller_id = ${f.viewerId})
          and not is_probe
          ${f.from ? db`and created_at >= ${f.from}` : db``}
          ${f.to ? db`and created_at < ${f.to}` : db``}
          ${f.kind ? db`and kind = ${f.kind}` : db``}
          ${f.direction ? db`and direction = ${f.direction}` : db``}
          ${f.mediaMode ? db`and media_mode = ${f.mediaMode}` : db``}
          ${f.cursor ? db`and id < ${f.cursor}` : db``}
        order by id desc
        limit ${f.limit}`;
    },

    /**
     * Rented numbers' calls by month (UTC) of the payer: every call with a leg routed at the number
     * (`route_id` the DID: delivered, voicemail, or a forward's inbound leg), its connected seconds
     * (the longest such leg) and what the whole call cost the payer (all its legs, forward routes too).
     */
    async numberUsage(q: {
      accountId: string;
      didIds: readonly string[];
      from: Date;
      to: Date;
    }): Promise<NumberUsageMonth[]> {
      return db<NumberUsageMonth[]>`
        with calls as (
          select call_group_id, min(created_at) as at, max(duration_seconds) as seconds
          from cdrs
          where route_id = any(${q.didIds as string[]}::uuid[]) and account_id = ${q.accountId} and kind = 'voice' and not is_probe
            and not simulated and created_at >= ${q.from} and created_at < ${q.to} and call_group_id is not null
          group by call_group_id
        )
        select to_char(k.at at time zone 'UTC', 'YYYY-MM') as period, count(*)::int as calls,
               count(*) filter (where k.seconds > 0)::int as answered, coalesce(sum(k.seconds), 0)::int as seconds,
               coalesce(sum(c.cost), 0)::numeric(20, 6)::text as cost
        from calls k
        cross join lateral (
          select sum(x.buyer_cost) as cost from cdrs x
          where x.call_group_id = k.call_group_id and x.account_id = ${q.accountId}
        ) c
        group by 1 order by 1`;
    },

    // Seller and capacity terms of routes: read here until the marketplace service exposes them.
    routeTerms: (ids: readonly string[]) =>
      db<RouteTerms[]>`
        select id, seller_id, capacity, max_cps, media_mode from routes where id = any(${ids as string[]}::uuid[])`,
  };
}

/** A CDR as the JSON object of the columns its insert writes (the rest take their defaults). */
const cdrJson = (r: CdrInsert) => ({
  id: r.id,
  account_id: r.accountId,
  operator_id: r.operatorId,
  seller_id: r.sellerId,
  call_uuid: r.callUuid,
  call_group_id: r.callGroupId,
  direction: r.direction,
  kind: r.kind,
  source: r.source,
  route_id: r.routeId,
  from_number: r.fromNumber,
  to_number: r.toNumber,
  cli: r.cli,
  status: r.status,
  sip_code: r.sipCode,
  hangup_cause: r.hangupCause,
  duration_seconds: r.durationSeconds,
  billed_seconds: r.billedSeconds,
  segments: r.segments,
  pdd_ms: r.pddMs,
  media_mode: r.mediaMode,
  buyer_cost: r.buyerCost,
  seller_credit: r.sellerCredit,
  rate_per_unit: r.ratePerUnit,
  interconnection_id: r.interconnectionId,
  agreed_rate: r.agreedRate,
  simulated: r.simulated,
  is_probe: r.isProbe,
  answered_at: r.answeredAt,
  ended_at: r.endedAt,
  created_at: r.createdAt,
});

export type CdrsRepo = ReturnType<typeof createCdrsRepo>;
