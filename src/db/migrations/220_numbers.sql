-- Phone numbers (issue 22): the DID catalogue (countries, types, groups, SKUs), sellers' number
-- inventory, the numbers customers rent (`dids`), their history, listing requests and approved
-- sellers. Owned by src/modules/numbers.

-- Catalogue countries: `id` is the catalogue's own id (spec: countryId is not an ISO code).
create table did_countries (
  id text primary key check (id ~ '^[a-z0-9_-]{1,64}$'),
  name text not null check (length(name) between 1 and 120),
  country_code text not null unique check (country_code ~ '^[A-Z]{2}$'),
  prefix text not null check (prefix ~ '^\d{1,4}$')
);

create table did_types (
  id text primary key check (id ~ '^[a-z0-9_-]{1,40}$'),
  name text not null unique check (length(name) between 1 and 40),
  position integer not null default 100
);
insert into did_types (id, name, position) values
  ('local', 'Local', 1), ('national', 'National', 2), ('mobile', 'Mobile', 3),
  ('toll_free', 'Toll-free', 4), ('shared_cost', 'Shared cost', 5);

-- Accounts the operator approved to list numbers (through a listing request, or by svcctl).
create table did_sellers (
  account_id uuid primary key references accounts (id),
  approved_at timestamptz not null default now(),
  request_id uuid
);

-- A group is what the catalogue shows: one seller's numbers of one type in one place.
create table did_groups (
  id uuid primary key,
  seller_id uuid not null references accounts (id),
  country_id text not null references did_countries (id),
  city text check (length(city) between 1 and 120),
  area_prefix text check (area_prefix ~ '^\d{1,16}$'),
  type_id text not null references did_types (id),
  -- Identity verification needed to rent a number here (KYC_REQUIRED).
  requires_kyc boolean not null default false,
  -- Per-minute price of inbound calls to numbers of this group (null: inbound minutes are free).
  inbound_rate numeric(20, 6) check (inbound_rate >= 0.0),
  grace_days integer not null default 7 check (grace_days between 0 and 90),
  status text not null default 'active' check (status in ('active', 'hidden')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index did_groups_place_key
  on did_groups (seller_id, country_id, type_id, coalesce(city, ''), coalesce(area_prefix, ''));
create index did_groups_country_idx on did_groups (country_id, type_id) where status = 'active';

create table did_skus (
  id uuid primary key,
  group_id uuid not null references did_groups (id) on delete cascade,
  channels integer not null check (channels between 1 and 1000),
  setup_price numeric(20, 6) not null check (setup_price >= 0.0),
  monthly_price numeric(20, 6) not null check (monthly_price >= 0.0),
  status text not null default 'active' check (status in ('active', 'retired')),
  created_at timestamptz not null default now()
);
create unique index did_skus_channels_key on did_skus (group_id, channels) where status = 'active';

-- Inventory: one row per number a seller offers. `local_part` is the number after the group's
-- dialling prefix (country + area): what a pattern search matches.
create table did_numbers (
  id uuid primary key,
  group_id uuid not null references did_groups (id),
  seller_id uuid not null references accounts (id),
  number text not null unique check (number ~ '^\d{6,15}$'),
  local_part text not null check (local_part ~ '^\d{1,15}$'),
  vanity boolean not null default false,
  state text not null default 'available' check (state in ('available', 'assigned', 'withdrawn')),
  created_at timestamptz not null default now()
);
create index did_numbers_group_idx on did_numbers (group_id, state);
-- Pattern search over available numbers (catalogue search p99 over a million numbers):
-- starts_with and exact on local_part, ends_with on its reverse, contains on trigrams below.
create index did_numbers_prefix_idx on did_numbers (local_part text_pattern_ops) where state = 'available';
create index did_numbers_suffix_idx on did_numbers (reverse(local_part) text_pattern_ops) where state = 'available';
create index did_numbers_vanity_idx on did_numbers (group_id) where state = 'available' and vanity;

-- contains: a trigram index when pg_trgm can be installed; without it contains scans.
do $$
begin
  create extension if not exists pg_trgm;
  execute 'create index did_numbers_contains_idx on did_numbers using gin (local_part gin_trgm_ops) where state = ''available''';
exception when others then
  raise notice 'pg_trgm unavailable (%): contains searches scan', sqlerrm;
end $$;

-- A rented number (spec "Phone number (DID)"). `account_id` owns and pays (a sub-account when
-- bought with subAccountId); `ordered_by` is who placed the order.
create table dids (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  ordered_by uuid not null references accounts (id),
  group_id uuid not null references did_groups (id),
  sku_id uuid not null references did_skus (id),
  seller_id uuid not null references accounts (id),
  number_id uuid references did_numbers (id),
  number text,
  status text not null default 'pending' check (status in ('pending', 'active', 'suspended', 'released', 'failed')),
  point_mode text not null default 'unrouted' check (point_mode in ('unrouted', 'sip', 'forward')),
  points_to text check (length(points_to) <= 260),
  points_to_backup text check (length(points_to_backup) <= 260),
  auto_renew boolean not null default true,
  channels integer not null,
  setup_price numeric(20, 6) not null,
  monthly_price numeric(20, 6) not null,
  grace_days integer not null,
  label text check (length(label) <= 60),
  ai_agent_id uuid,
  -- Monthly periods charged so far (1 after the purchase): the renewal's posting key.
  periods_paid integer not null default 1,
  ordered_at timestamptz not null,
  activated_at timestamptz,
  next_renewal_at timestamptz,
  suspended_at timestamptz,
  released_at timestamptz,
  endpoint_reachable boolean,
  endpoint_cause text,
  endpoint_checked_at timestamptz,
  updated_at timestamptz not null default now()
);
create index dids_account_idx on dids (account_id, id desc);
create index dids_renewal_idx on dids (next_renewal_at) where status = 'active';
create index dids_suspended_idx on dids (suspended_at) where status = 'suspended';
create index dids_pending_idx on dids (ordered_at) where status = 'pending';
-- A number is rented by one DID at a time.
create unique index dids_number_live_key on dids (number_id) where status in ('pending', 'active', 'suspended');

-- Every state change of a DID, with the money it moved: history and analytics.
create table did_events (
  id uuid primary key,
  did_id uuid not null references dids (id),
  account_id uuid not null references accounts (id),
  kind text not null check (kind in ('ordered', 'activated', 'renewed', 'renewal_failed', 'suspended',
                                     'reactivated', 'released', 'routing_changed', 'auto_renew_changed', 'failed')),
  amount numeric(20, 6),
  posting_id uuid,
  data jsonb not null default '{}',
  created_at timestamptz not null
);
create index did_events_did_idx on did_events (did_id, id desc);
create index did_events_account_idx on did_events (account_id, created_at);

create table did_listing_requests (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  status text not null default 'pending' check (status in ('pending', 'approved', 'rejected')),
  company_name text,
  contact_name text not null,
  contact_email text,
  contact_phone text,
  selected_did_ids uuid[] not null default '{}',
  did_count integer,
  countries text,
  number_types text,
  monthly_volume text,
  target_price text,
  notes text,
  review_note text,
  reviewed_by uuid references accounts (id),
  submitted_at timestamptz not null,
  reviewed_at timestamptz
);
-- One open request per account (a second one: 409).
create unique index did_listing_requests_open_key on did_listing_requests (account_id) where status = 'pending';
create index did_listing_requests_status_idx on did_listing_requests (status, id desc);
