import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Db, Sql } from '../../db/connection.js';
import { ruleError, validationError } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import type { AgentCallPlan, AgentCalls } from '../api-calls/agent.js';
import { converse, type AgentOnCall, type ConversationResult } from './conversation.js';
import type { ChatProvider, SpeechProvider, TranscriptionProvider } from './providers.js';

/** AI voice agents holding calls: `AgentCalls` for the call plane, and the stored conversations. */
export function createAgentCalls(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  config: Readonly<Config>;
  chat: ChatProvider | null;
  stt: TranscriptionProvider | null;
  speech: SpeechProvider | null;
}): AgentCalls {
  const { sql, config } = deps;
  return {
    async prepare(accountId, agentId): Promise<AgentCallPlan> {
      const [a] = await sql<(AgentOnCall & { enabled: boolean; maxCallSeconds: number })[]>`
        select id, model, voice_id, language, system_prompt, guardrails, tools, first_message, enabled, max_call_seconds
        from ai_agents where id = ${agentId} and account_id = ${accountId}`;
      if (!a) throw validationError([{ path: 'aiAgentId', message: 'no such AI voice agent on this account' }]);
      if (!a.enabled) throw validationError([{ path: 'aiAgentId', message: 'this AI voice agent is disabled' }]);
      const chat = deps.chat;
      const stt = deps.stt;
      if (!chat) throw ruleError('AI voice agents need a chat model provider: set [ai] chat_url');
      if (!stt) throw ruleError('AI voice agents need a speech-to-text provider: set [ai] stt_url');
      return {
        agentId: a.id,
        maxCallSeconds: a.maxCallSeconds,
        feePerMinute: config.ai.agent_fee_per_minute,
        converse: (call) =>
          converse(call, a, {
            chat,
            stt,
            speech: deps.speech,
            log: deps.log,
            now: () => deps.clock.now(),
            endOfSpeechMs: config.ai.end_of_speech_ms,
            speechLevel: config.ai.speech_level,
          }),
        async store(tx: Db, r) {
          const c = (r.conversation as ConversationResult | null) ?? {
            outcome: 'call_ended',
            transcript: [],
            captured: {},
            transferTo: null,
            turnLatencyMs: [],
          };
          const outcome =
            c.outcome === 'transfer_requested' && r.transfer
              ? r.transfer.bridged
                ? 'transferred'
                : 'transfer_failed'
              : c.outcome;
          await tx`
            insert into ai_agent_calls (call_id, agent_id, account_id, outcome, transcript, captured, transfer_to,
                                        transfer_call_id, turn_latency_ms, duration_seconds, fee, started_at, ended_at)
            values (${r.callId}, ${a.id}, ${r.accountId}, ${outcome}, ${tx.json(c.transcript as never)},
                    ${tx.json(c.captured)}, ${c.transferTo}, ${r.transfer?.callId ?? null}, ${c.turnLatencyMs},
                    ${r.durationSeconds}, ${r.fee}, ${r.startedAt}, ${r.endedAt})`;
        },
      };
    },

    /** The conversation an agent held on the caller's call, or null when none did. */
    async conversation(accountId, callId) {
      const [r] = await sql<
        {
          agentId: string;
          outcome: string;
          transcript: unknown;
          captured: unknown;
          transferTo: string | null;
          transferCallId: string | null;
          turnLatencyMs: number[];
          fee: string;
        }[]
      >`
        select agent_id, outcome, transcript, captured, transfer_to, transfer_call_id, turn_latency_ms, fee::text as fee
        from ai_agent_calls where call_id = ${callId} and account_id = ${accountId}`;
      if (!r) return null;
      return { ...r };
    },
  };
}
