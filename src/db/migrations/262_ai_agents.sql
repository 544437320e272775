-- AI voice agents: the prompt, voice and tools an agent holds a call with. Owned by src/modules/ai-agents.
create table ai_agents (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  name text not null,
  voice_id text,
  voice_provider text not null,
  language text not null,
  first_message text,
  system_prompt text not null,
  model text not null,
  guardrails text,
  tools text[] not null,
  max_call_seconds integer not null,
  enabled boolean not null,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create index ai_agents_account_idx on ai_agents (account_id, id desc);
