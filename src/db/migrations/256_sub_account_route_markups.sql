-- A reseller's markup per route for one sub-account: where a row exists, calls and messages the
-- sub-account sends over that route carry this markup instead of the sub-account's own (or the
-- operator's default). Billing reads it with the payer's call terms, so a change notifies the
-- trunk path's cache like the sub-account's own markup does (041).
create table sub_account_route_markups (
  sub_account_id uuid not null references sub_accounts (account_id) on delete cascade,
  route_id uuid not null references routes (id) on delete cascade,
  markup_pct numeric(9, 3) not null check (markup_pct >= 0 and markup_pct <= 100000),
  created_at timestamptz not null,
  updated_at timestamptz not null,
  primary key (sub_account_id, route_id)
);

create function svc_call_terms_notify_route_markup() returns trigger language plpgsql as $$
begin
  if tg_op <> 'INSERT' then perform pg_notify('svc_call_terms', 'a:' || old.sub_account_id::text); end if;
  if tg_op <> 'DELETE' then perform pg_notify('svc_call_terms', 'a:' || new.sub_account_id::text); end if;
  return null;
end $$;

create trigger sub_account_route_markups_notify after insert or update or delete on sub_account_route_markups
  for each row execute function svc_call_terms_notify_route_markup();
