-- Connections (issue 24, docs/interconnections.md): limits per connection point, disabling one
-- without deleting it, and the history of reachability tests.

-- A whitelisted source address and a purchase's SIP credentials each carry their own limits on the
-- calls that come through them (null: none beyond the account's), and can be disabled: while
-- disabled, calls through it are refused (403) and the address or username stays the account's.
alter table trunk_ips
  add column max_concurrent_calls integer check (max_concurrent_calls > 0),
  add column max_cps integer check (max_cps > 0),
  add column disabled_at timestamptz,
  add column updated_at timestamptz;
alter table trunk_credentials
  add column max_concurrent_calls integer check (max_concurrent_calls > 0),
  add column max_cps integer check (max_cps > 0),
  add column disabled_at timestamptz,
  add column updated_at timestamptz;
alter table smpp_accounts add column updated_at timestamptz;

-- A change to an SMPP credential reaches every daemon's live binds: a disabled one is unbound,
-- a new throughput applies to the next submit. The payload is the system_id.
create function svc_smpp_account_changed() returns trigger language plpgsql as $$
begin
  perform pg_notify('svc_smpp_accounts', new.system_id);
  return null;
end $$;
create trigger smpp_accounts_changed after update of disabled_at, throughput on smpp_accounts
  for each row execute function svc_smpp_account_changed();

-- The same for SIP connection points: every daemon drops what it cached of the address or username.
-- Each branch names only its own table's columns (a record's fields are resolved when the statement runs).
create function svc_trunk_point_changed() returns trigger language plpgsql as $$
begin
  if tg_table_name = 'trunk_ips' then
    perform pg_notify('svc_trunk_points', 'ip:' || host(old.ip));
  else
    perform pg_notify('svc_trunk_points', 'user:' || old.username);
  end if;
  return null;
end $$;
create trigger trunk_ips_changed after update or delete on trunk_ips
  for each row execute function svc_trunk_point_changed();
create trigger trunk_credentials_changed after update or delete on trunk_credentials
  for each row execute function svc_trunk_point_changed();

-- Reachability tests an account ran (POST /connections/test), kept to be listed.
create table connection_tests (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  host text not null,
  port integer not null,
  transport text not null check (transport in ('udp', 'tcp', 'tls')),
  address text,
  reachable boolean not null,
  status integer,
  rtt_ms numeric(10, 3),
  created_at timestamptz not null
);
create index connection_tests_account_idx on connection_tests (account_id, id desc);
