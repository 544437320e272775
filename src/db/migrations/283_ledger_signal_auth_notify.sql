-- Issue 26: one statement per posting on the daemon's ledger path, and API credentials cached
-- until a change is announced (owned by src/ledger and src/modules/{keys,accounts}).
--
-- 1. ledger_debit_signal: the balance events a debit's result calls for (the low-balance line
--    crossed by it; a sub-account's daily cap reached), the rule the daemon applied in a query of
--    its own after each charge or settle. Called in the posting's own statement
--    (`from ledger_charge(...) r cross join lateral ledger_debit_signal(r, ...)`) it saves a
--    round trip and a statement per posting. With p_strict the function refuses (SQLSTATE SVC90)
--    a posting that has events to emit, so the whole statement rolls back: a caller that posts
--    outside a transaction sends the rare posting with events again inside one, where the
--    posting and its outbox rows commit together, and every other posting is one round trip
--    instead of BEGIN, posting, check, COMMIT.
create function ledger_debit_signal(
  p_result jsonb, p_default_threshold numeric, p_strict boolean,
  out parent_id uuid, out crossed boolean, out capped boolean
) language plpgsql stable as $$
begin
  crossed := false;
  capped := false;
  if coalesce((p_result->>'replayed')::boolean, false) or p_result->>'mode' is distinct from 'live' then
    return;
  end if;
  select a.parent_id,
         coalesce((p_result->>'balanceBefore')::numeric >= t.v and (p_result->>'balanceAfter')::numeric < t.v
                  and t.v > 0, false),
         coalesce((p_result->>'capReached')::boolean, false) and a.parent_id is not null
    into parent_id, crossed, capped
  from accounts a
  left join application_settings s on s.operator_id = a.parent_id
  cross join lateral (select case when a.parent_id is null
                                  -- The account's own line when it set one (account_profiles, 254).
                                  then coalesce((select p.low_balance_threshold from account_profiles p
                                                 where p.account_id = a.id), p_default_threshold)
                                  else coalesce(s.sub_low_balance_threshold, 5) end as v) t
  where a.id = (p_result->>'accountId')::uuid;
  crossed := coalesce(crossed, false);
  capped := coalesce(capped, false);
  if p_strict and (crossed or capped) then
    raise exception 'this posting has balance events to emit; post it in a transaction'
      using errcode = 'SVC90';
  end if;
end $$;

-- 2. API keys and accounts are cached by every daemon's authentication path until they change:
--    these triggers tell every daemon on commit, whoever wrote the change (a revocation or a
--    narrowing on another daemon, svcctl, SQL by hand). Payload: the row's id.
create function svc_auth_notify() returns trigger language plpgsql as $$
begin
  perform pg_notify(tg_argv[0], coalesce(new.id, old.id)::text);
  return null;
end $$;

create trigger api_keys_auth_notify after insert or delete on api_keys
  for each row execute function svc_auth_notify('svc_auth_api_keys');

-- Not for last_used_at, which the usage flush writes every few seconds.
create trigger api_keys_auth_notify_update after update on api_keys
  for each row when (old.revoked_at is distinct from new.revoked_at or old.scopes is distinct from new.scopes
                     or old.webhooks_write is distinct from new.webhooks_write or old.mode is distinct from new.mode
                     or old.account_id is distinct from new.account_id or old.secret_hash is distinct from new.secret_hash)
  execute function svc_auth_notify('svc_auth_api_keys');

create trigger accounts_auth_notify after delete on accounts
  for each row execute function svc_auth_notify('svc_auth_accounts');

create trigger accounts_auth_notify_update after update on accounts
  for each row when (old.* is distinct from new.*) execute function svc_auth_notify('svc_auth_accounts');
