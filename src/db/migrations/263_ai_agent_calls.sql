-- Conversations AI voice agents held on calls: the transcript, what was captured, how it ended and
-- the per-minute agent fee billed with the call. Owned by src/modules/ai-agents; written in the
-- transaction that settles the call.
create table ai_agent_calls (
  call_id uuid primary key,
  agent_id uuid not null,
  account_id uuid not null references accounts (id),
  outcome text not null,
  transcript jsonb not null,
  captured jsonb not null,
  transfer_to text,
  turn_latency_ms integer[] not null,
  duration_seconds integer not null,
  fee numeric(20, 6) not null,
  started_at timestamptz not null,
  ended_at timestamptz not null
);
create index ai_agent_calls_agent_idx on ai_agent_calls (agent_id, ended_at desc);
