-- What the trunk call path reads for every call is cached in each daemon (issue 8: PostgreSQL time
-- per call). These triggers tell every daemon on commit, whoever wrote the change.
--
-- svc_call_terms: a paying account's terms (status, operator, markup, concurrency cap) changed.
-- Payload `a:<accountId>`, or `o:<operatorId>` when an operator's default markup changed (every
-- sub-account following it).
create function svc_call_terms_notify_account() returns trigger language plpgsql as $$
begin
  perform pg_notify('svc_call_terms', 'a:' || new.id::text);
  return null;
end $$;

create trigger accounts_call_terms_notify after update on accounts
  for each row when (old.status is distinct from new.status or old.parent_id is distinct from new.parent_id)
  execute function svc_call_terms_notify_account();

create function svc_call_terms_notify_sub() returns trigger language plpgsql as $$
begin
  if tg_op = 'UPDATE' and old.markup_pct is not distinct from new.markup_pct
     and old.max_concurrent_calls is not distinct from new.max_concurrent_calls
     and old.parent_id is not distinct from new.parent_id then
    return null;
  end if;
  if tg_op <> 'INSERT' then perform pg_notify('svc_call_terms', 'a:' || old.account_id::text); end if;
  if tg_op <> 'DELETE' then perform pg_notify('svc_call_terms', 'a:' || new.account_id::text); end if;
  return null;
end $$;

create trigger sub_accounts_call_terms_notify after insert or update or delete on sub_accounts
  for each row execute function svc_call_terms_notify_sub();

create function svc_call_terms_notify_operator() returns trigger language plpgsql as $$
begin
  if tg_op = 'UPDATE' and old.default_markup_pct is not distinct from new.default_markup_pct then return null; end if;
  if tg_op <> 'INSERT' then perform pg_notify('svc_call_terms', 'o:' || old.operator_id::text); end if;
  if tg_op <> 'DELETE' then perform pg_notify('svc_call_terms', 'o:' || new.operator_id::text); end if;
  return null;
end $$;

create trigger application_settings_call_terms_notify after insert or update or delete on application_settings
  for each row execute function svc_call_terms_notify_operator();

-- Route endpoints join the routing cache's per-route entries (migration 032): a change to one
-- notifies its route on svc_routing like a change to the route row.
create function svc_routing_notify_endpoint() returns trigger language plpgsql as $$
begin
  if tg_op <> 'INSERT' then perform pg_notify('svc_routing', 'r:' || old.route_id::text); end if;
  if tg_op <> 'DELETE' then perform pg_notify('svc_routing', 'r:' || new.route_id::text); end if;
  return null;
end $$;

create trigger route_endpoints_routing_notify after insert or update or delete on route_endpoints
  for each row execute function svc_routing_notify_endpoint();
