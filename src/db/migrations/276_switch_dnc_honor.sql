-- Switch DNC (docs/switch.md "DNC"): whether a Switch account's do-not-call list (dnc_entries, the
-- same store the dialer reads) is honored for its customers' traffic. No row: not honored.
create table switch_dnc_honor (
  account_id uuid primary key references accounts (id) on delete cascade,
  calls boolean not null,
  sms boolean not null,
  updated_at timestamptz not null
);

-- A customer (sub-account) whose traffic is always scrubbed (true) or never (false), whatever the
-- account's own setting; no row: the account's setting applies.
create table switch_dnc_customer_honor (
  account_id uuid not null references accounts (id) on delete cascade,
  customer_id uuid not null references accounts (id) on delete cascade,
  honor boolean not null,
  updated_at timestamptz not null,
  primary key (account_id, customer_id)
);

-- Every daemon keeps the settings in process for call admission and SMS send: a change drops the
-- account's entry everywhere. The payload is the Switch account's id.
create function svc_switch_dnc_honor_changed() returns trigger language plpgsql as $$
begin
  if tg_op = 'DELETE' then
    perform pg_notify('svc_switch_dnc_honor', old.account_id::text);
  else
    perform pg_notify('svc_switch_dnc_honor', new.account_id::text);
  end if;
  return null;
end $$;
create trigger switch_dnc_honor_changed after insert or update or delete on switch_dnc_honor
  for each row execute function svc_switch_dnc_honor_changed();
create trigger switch_dnc_customer_honor_changed after insert or update or delete on switch_dnc_customer_honor
  for each row execute function svc_switch_dnc_honor_changed();

-- A customer's call or message refused because its destination is listed. The number is kept
-- masked only (first digits): the hit says who tried and when, never the whole number.
create table switch_dnc_hits (
  id uuid primary key,
  account_id uuid not null references accounts (id) on delete cascade,
  customer_id uuid not null references accounts (id) on delete cascade,
  channel text not null check (channel in ('voice', 'sms')),
  number_masked text not null,
  entry_kind text not null check (entry_kind in ('number', 'prefix')),
  created_at timestamptz not null
);
create index switch_dnc_hits_account_idx on switch_dnc_hits (account_id, id desc);
create index switch_dnc_hits_customer_idx on switch_dnc_hits (account_id, customer_id, id desc);
