import type { Db } from '../../db/connection.js';
import { communicationsHistory, type HistoryFilter } from '../../ledger/history.js';

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

export type { HistoryRow } from '../../ledger/history.js';

/** Reads for the call API; writes go through the calls service (`records`) and the cdrs service. */
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

    async insertVoiceOtp(r: {
      id: string;
      accountId: string;
      callId: string;
      toNumber: string;
      language: string;
      codeLength: number;
      repeat: number;
      codeHash: string;
      createdAt: Date;
    }) {
      await db`insert into voice_otps ${db(r, 'id', 'accountId', 'callId', 'toNumber', 'language', 'codeLength', 'repeat', 'codeHash', 'createdAt')}`;
    },

    /**
     * The customer's ledger entries for API calls, newest first (spec "Communications history entry").
     * Read from the ledger's entries: the ledger exposes no filter by related entity type.
     */
    history: (accountId: string, f: HistoryFilter) => communicationsHistory(db, accountId, ['api_call'], f),
  };
}

export type CommsCallsRepo = ReturnType<typeof createCommsCallsRepo>;
