import type { Db } from '../../db/connection.js';

/** A `calls` row as GET /comms/calls/{id} shows it. */
export interface ApiCallRow {
  id: string;
  accountId: string;
  operatorId: string | null;
  mode: string;
  status: string;
  simulated: boolean;
  toNumber: string;
  fromNumber: string;
  routeId: string | null;
  billingIncrement: string | null;
  sipResponseCode: number | null;
  hangupCause: string | null;
  hangupReason: string | null;
  error: string | null;
  actions: unknown;
  gathered: unknown;
  attempts: unknown;
  durationSeconds: number | null;
  billableSeconds: number | null;
  cost: string | null;
  createdAt: Date;
  ringingAt: Date | null;
  answeredAt: Date | null;
  endedAt: Date | null;
}

export interface HistoryRow {
  id: string;
  userId: string;
  type: string;
  amount: string;
  balanceAfter: string;
  reference: string | null;
  relatedEntityType: string | null;
  relatedEntityId: string | null;
  callId: string | null;
  createdAt: Date;
}

/** Reads for the call API; writes go through the calls module's repo (`createCallsRepo`). */
export function createCommsCallsRepo(db: Db) {
  return {
    async call(id: string): Promise<ApiCallRow | null> {
      const [r] = await db<ApiCallRow[]>`
        select id, account_id, operator_id, mode, status, simulated, to_number, from_number, route_id, billing_increment,
               sip_response_code, hangup_cause, hangup_reason, error, actions, gathered, attempts, duration_seconds,
               billable_seconds, cost::numeric(20,6)::text as cost, created_at, ringing_at, answered_at, ended_at
        from calls where id = ${id} and source = 'api'`;
      return r ?? null;
    },

    async insertVoiceOtp(r: { id: string; accountId: string; callId: string; toNumber: string; language: string; codeLength: number; repeat: number; codeHash: string; createdAt: Date }) {
      await db`insert into voice_otps ${db(r, 'id', 'accountId', 'callId', 'toNumber', 'language', 'codeLength', 'repeat', 'codeHash', 'createdAt')}`;
    },

    /**
     * The customer's ledger entries for API calls, newest first (spec "Communications history entry").
     * Read from the ledger's entries: the ledger exposes no filter by related entity type.
     */
    history(accountId: string, f: { from?: string | undefined; to?: string | undefined; cursor?: string | undefined; limit: number }) {
      return db<HistoryRow[]>`
        select id, owner_id as user_id, type, to_char(amount, 'FM999999999999990.000000') as amount,
               to_char(coalesce(balance_after, 0), 'FM999999999999990.000000') as balance_after,
               reference, related_entity_type, related_entity_id, call_id, created_at
        from entries
        where owner_id = ${accountId} and account_kind in ('customer', 'test_credit') and related_entity_type = 'api_call'
          ${f.from ? db`and created_at >= ${f.from}::timestamptz` : db``}
          ${f.to ? db`and created_at < ${f.to}::timestamptz` : db``}
          ${f.cursor ? db`and id < ${f.cursor}::uuid` : db``}
        order by id desc limit ${f.limit}`;
    },
  };
}

export type CommsCallsRepo = ReturnType<typeof createCommsCallsRepo>;
