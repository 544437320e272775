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

export function createCdrsRepo(db: Db) {
  return {
    /** Many rows in one statement, in the caller's transaction. */
    async insertCdrs(tx: Db, rows: readonly CdrInsert[]): Promise<void> {
      if (rows.length === 0) return;
      await tx`insert into cdrs ${tx(rows as unknown as Record<string, unknown>[], ...cdrColumns)}`;
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

    // Seller and capacity terms of routes: read here until the marketplace service exposes them.
    routeTerms: (ids: readonly string[]) =>
      db<RouteTerms[]>`
        select id, seller_id, capacity, max_cps, media_mode from routes where id = any(${ids as string[]}::uuid[])`,
  };
}

const cdrColumns = [
  'id',
  'accountId',
  'operatorId',
  'sellerId',
  'callUuid',
  'callGroupId',
  'direction',
  'kind',
  'source',
  'routeId',
  'fromNumber',
  'toNumber',
  'cli',
  'status',
  'sipCode',
  'hangupCause',
  'durationSeconds',
  'billedSeconds',
  'segments',
  'pddMs',
  'mediaMode',
  'buyerCost',
  'sellerCredit',
  'ratePerUnit',
  'interconnectionId',
  'agreedRate',
  'simulated',
  'isProbe',
  'answeredAt',
  'endedAt',
  'createdAt',
] as const;

export type CdrsRepo = ReturnType<typeof createCdrsRepo>;
