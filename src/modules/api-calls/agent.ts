import type { Db } from '../../db/connection.js';
import type { EngineCall } from '../../telephony/engine.js';

/**
 * The seam through which a call placed here is handed to an AI voice agent (`aiAgentId`): the
 * ai-agents module implements it, so this module needs nothing of agents but these calls.
 */
export interface AgentCalls {
  /** The caller's agent, ready to hold a call; refuses an unknown or disabled agent, or missing providers. */
  prepare(accountId: string, agentId: string): Promise<AgentCallPlan>;
  /** The conversation an agent held on the account's call, for the call record; null when none did. */
  conversation(accountId: string, callId: string): Promise<Record<string, unknown> | null>;
}

export interface AgentCallPlan {
  agentId: string;
  maxCallSeconds: number;
  /** Money string: the agent fee per started minute of the answered call. */
  feePerMinute: string;
  /**
   * Holds the conversation on the answered call; resolves when it is over (the call may still be
   * up). `transferTo`: the agent handed the caller to this number, which the call plane dials and joins.
   */
  converse(call: EngineCall): Promise<{ transferTo: string | null }>;
  /** Stores the conversation with the call's end, in the transaction that settles the call. */
  store(
    tx: Db,
    r: {
      callId: string;
      accountId: string;
      conversation: unknown;
      durationSeconds: number;
      fee: string;
      /** The transfer leg placed for the agent's `transferTo` (null id: it could not be placed). */
      transfer: { callId: string | null; bridged: boolean } | null;
      startedAt: Date;
      endedAt: Date;
    },
  ): Promise<void>;
}
