-- The voice plane's records (issues 6 and 8): live and final calls, one CDR row per leg (and per
-- SMS message, kind 'sms'), the trunk IP whitelist and purchase SIP credentials.

create table calls (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  -- The reseller whose sub-account pays, for its views and analytics.
  operator_id uuid references accounts (id),
  source text not null check (source in ('api', 'trunk', 'check', 'campaign')),
  mode text not null default 'sync' check (mode in ('sync', 'async', 'trunk')),
  simulated boolean not null default false,
  status text not null check (status in ('queued', 'ringing', 'answered', 'completed', 'no_answer', 'busy', 'failed')),
  to_number text not null,
  from_number text not null,
  call_group_id uuid not null,
  route_id uuid,
  hold_id uuid,
  max_duration_seconds integer,
  billing_increment text,
  rate_per_minute numeric(20, 6),
  -- How each candidate route was priced at the start, and the reseller markup: enough to bill
  -- the call again after a crash.
  pricing jsonb,
  sip_response_code integer,
  hangup_cause text,
  hangup_reason text,
  error text,
  actions jsonb,
  gathered jsonb,
  attempts jsonb not null default '[]'::jsonb,
  duration_seconds integer,
  billable_seconds integer,
  cost numeric(20, 6),
  -- Which daemon runs the call, and when it last said so: a restart reconciles the orphans.
  owner_node text,
  last_seen_at timestamptz,
  created_at timestamptz not null default now(),
  ringing_at timestamptz,
  answered_at timestamptz,
  ended_at timestamptz
);
create index calls_account_idx on calls (account_id, id desc);
create index calls_live_idx on calls (owner_node, last_seen_at) where ended_at is null;

create table cdrs (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  operator_id uuid references accounts (id),
  seller_id uuid references accounts (id),
  call_uuid uuid,
  call_group_id uuid,
  direction text not null default 'outbound' check (direction in ('outbound', 'inbound')),
  kind text not null check (kind in ('voice', 'sms')),
  source text not null default 'api',
  route_id uuid,
  from_number text,
  to_number text,
  cli text,
  status text,
  sip_code integer,
  hangup_cause text,
  duration_seconds integer,
  billed_seconds integer,
  segments integer,
  pdd_ms integer,
  buyer_cost numeric(20, 6),
  seller_credit numeric(20, 6),
  rate_per_unit numeric(20, 6),
  simulated boolean not null default false,
  -- Platform probes (route checks, health calls) are kept but never listed to customers.
  is_probe boolean not null default false,
  answered_at timestamptz,
  ended_at timestamptz,
  created_at timestamptz not null default now()
);
create index cdrs_account_idx on cdrs (account_id, id desc);
create index cdrs_seller_idx on cdrs (seller_id, id desc) where seller_id is not null;
create index cdrs_route_quality_idx on cdrs (route_id, created_at) where kind = 'voice' and not is_probe and not simulated;

-- A whitelisted source address bills every call from it to its account (attribution step 1).
create table trunk_ips (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  ip inet not null unique,
  label text check (length(label) <= 60),
  created_at timestamptz not null default now()
);
create index trunk_ips_account_idx on trunk_ips (account_id, id desc);

-- SIP credentials of a route purchase (attribution step 2); only the digest HA1 is kept.
create table trunk_credentials (
  username text primary key,
  account_id uuid not null references accounts (id),
  purchase_id uuid not null unique references purchases (id),
  ha1 text not null,
  created_at timestamptz not null default now(),
  rotated_at timestamptz
);
