-- A Switch customer's sell-rate deck (spec "Switch", sell rates with notice): what the operator
-- charges one of its sub-accounts per destination prefix, instead of the percentage markup. Every
-- change is a new version row; the row in force for a prefix is its latest version whose
-- effective_from has passed (a version a later change replaced before it took effect is cancelled).
-- `change` and `previous_rate` record how the version compared with the rate in force when it was
-- written: what the notice e-mail and GET .../notice/changes show.
create table switch_sell_rates (
  id uuid primary key,
  customer_id uuid not null references sub_accounts (account_id) on delete cascade,
  kind text not null check (kind in ('voice', 'sms')),
  prefix text not null check (prefix ~ '^[0-9]{1,15}$'),
  destination text not null default '',
  rate numeric(20, 6) not null check (rate >= 0),
  billing_increment text not null,
  effective_from timestamptz not null,
  change text not null check (change in ('new', 'increase', 'decrease', 'unchanged')),
  previous_rate numeric(20, 6),
  cancelled_at timestamptz,
  created_at timestamptz not null
);
create index switch_sell_rates_deck_idx on switch_sell_rates (customer_id, kind, prefix, effective_from desc);
create index switch_sell_rates_recent_idx on switch_sell_rates (customer_id, created_at desc);

-- The call and SMS paths keep each customer's deck in process; every change tells every daemon.
create function svc_sell_rates_notify() returns trigger language plpgsql as $$
begin
  perform pg_notify('svc_sell_rates', coalesce(new.customer_id, old.customer_id)::text);
  return null;
end $$;

create trigger switch_sell_rates_notify after insert or update or delete on switch_sell_rates
  for each row execute function svc_sell_rates_notify();
