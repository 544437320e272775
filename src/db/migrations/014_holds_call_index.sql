-- A settlement that reaches a daily cap still bills the rest of its call (012/013): that check
-- looks for the call's settled hold on the account, which without this index scans every hold.
create index holds_account_call_idx on holds (account_id, call_id) where call_id is not null;
