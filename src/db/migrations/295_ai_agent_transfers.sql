-- An AI voice agent's transfer bridges the caller to a new call to the target (billed as its own
-- call): the conversation names that call, so the two records lead to each other.
alter table ai_agent_calls add column transfer_call_id uuid;
