-- Marketplace: listings, their delivery, rate decks and rows, scheduled rate changes, purchases,
-- routing order and private-route access (issue 4). Owned by src/modules/routes and src/modules/purchases.

create table routes (
  id uuid primary key,
  seller_id uuid not null references accounts (id),
  type text not null check (type in ('voice', 'sms')),
  name text not null check (length(name) between 1 and 120),
  -- ISO 3166 alpha-2, or null for an A-Z listing.
  country text check (country ~ '^[A-Z]{2}$'),
  visibility text not null default 'public' check (visibility in ('public', 'private')),
  status text not null default 'active' check (status in ('active', 'paused', 'deleted')),
  expected_asr numeric(5, 2) check (expected_asr between 0 and 100),
  expected_acd numeric(8, 2) check (expected_acd >= 0),
  expected_pdd integer check (expected_pdd >= 0),
  cli_type text,
  billing_increment text not null default '60/60' check (billing_increment ~ '^\d{1,4}/\d{1,4}$'),
  capacity integer check (capacity > 0),
  max_cps integer check (max_cps > 0),
  notice_days integer not null default 7 check (notice_days between 0 and 90),
  -- SMS delivery: { kind: 'smpp', host, port, systemId, password, systemType, tls } or { kind: 'http', url, authorization }.
  -- Secrets inside are write-only: never selected into an API response.
  sms_delivery jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index routes_market_idx on routes (type, country, id) where status = 'active';
create index routes_seller_idx on routes (seller_id, id);

create table route_endpoints (
  id uuid primary key,
  route_id uuid not null references routes (id) on delete cascade,
  host text not null,
  port integer not null default 5060 check (port between 1 and 65535),
  transport text not null default 'udp' check (transport in ('udp', 'tcp', 'tls')),
  tech_prefix text not null default '' check (tech_prefix ~ '^[0-9#*]{0,10}$'),
  username text,
  -- write-only
  password text,
  priority integer not null default 1 check (priority between 1 and 100),
  weight integer not null default 100 check (weight between 1 and 1000),
  label text check (length(label) <= 60),
  created_at timestamptz not null default now()
);
create index route_endpoints_route_idx on route_endpoints (route_id, priority);

-- One deck per route; `version` moves on every change so peers can tell a stale notification.
create table rate_decks (
  route_id uuid primary key references routes (id) on delete cascade,
  version bigint not null default 0,
  row_count integer not null default 0,
  uploaded_at timestamptz
);

-- Row history: a row is in force from effective_from until effective_to (null: open). An upload
-- closes the rows it replaces at the change's effective time and opens the new ones from then.
create table rate_rows (
  id bigint generated always as identity primary key,
  route_id uuid not null references rate_decks (route_id) on delete cascade,
  prefix text not null check (prefix ~ '^\d{1,15}$'),
  mcc_mnc text not null default '' check (mcc_mnc = '' or mcc_mnc ~ '^\d{3}-\d{2,3}$'),
  destination text not null,
  rate numeric(20, 6) not null check (rate >= 0),
  increment text not null check (increment ~ '^\d{1,4}/\d{1,4}$'),
  effective_from timestamptz not null,
  effective_to timestamptz,
  -- equal bounds: a row replaced in the instant it came into force, never in force
  check (effective_to is null or effective_to >= effective_from)
);
create index rate_rows_live_idx on rate_rows (route_id, prefix, mcc_mnc) where effective_to is null;
create index rate_rows_window_idx on rate_rows (route_id, effective_from, effective_to);

-- Scheduled increases and removals, for sellers (rate-changes) and buyers (upcoming-rate-changes).
create table rate_changes (
  id uuid primary key,
  route_id uuid not null references routes (id) on delete cascade,
  prefix text not null,
  mcc_mnc text not null default '',
  kind text not null check (kind in ('increase', 'removal')),
  old_rate numeric(20, 6),
  new_rate numeric(20, 6),
  effective_at timestamptz not null,
  status text not null default 'scheduled' check (status in ('scheduled', 'applied', 'superseded', 'cancelled')),
  created_at timestamptz not null default now()
);
create index rate_changes_route_idx on rate_changes (route_id, effective_at);

create table purchases (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  route_id uuid not null references routes (id),
  status text not null default 'active' check (status in ('active', 'cancelled')),
  created_at timestamptz not null default now(),
  cancelled_at timestamptz
);
-- Buying is idempotent: one active purchase per buyer and route.
create unique index purchases_active_uq on purchases (account_id, route_id) where status = 'active';
create index purchases_account_idx on purchases (account_id, id);

-- The buyer's own order of preference over purchased and own routes (lower position first).
create table routing_orders (
  account_id uuid not null references accounts (id),
  route_id uuid not null references routes (id) on delete cascade,
  position integer not null check (position >= 1),
  primary key (account_id, route_id)
);

-- Grants that make a private route visible to and buyable by another account.
create table route_access (
  route_id uuid not null references routes (id) on delete cascade,
  account_id uuid not null references accounts (id),
  granted_at timestamptz not null default now(),
  primary key (route_id, account_id)
);
