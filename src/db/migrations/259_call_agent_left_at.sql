-- Calls on rented numbers (issue 22): an AI voice agent's per-minute fee ends when the agent transfers
-- the caller. The moment is kept on the call so a crash reconcile bills the fee to there too.
-- Owned by src/modules/sip-trunks (written when the numbers' answering reports the transfer).
alter table calls add column agent_left_at timestamptz;
