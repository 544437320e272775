-- Revenue share numbers (issue 22, docs/revenue-share.md): ranges a supplier publishes with a payout
-- per answered minute by origin, numbers allocated to holders, the calls they receive (the group's
-- CDRs), fraud flags, releases of held earnings and the supplier payments that settle them.

create domain revshare_range_status as text check (value in ('active', 'paused', 'retired'));
create domain revshare_number_state as text check (value in ('available', 'allocated', 'withdrawn'));
create domain revshare_call_status as text check (value in ('unanswered', 'test', 'held', 'flagged', 'released', 'clawed_back'));
create domain revshare_flag_status as text check (value in ('open', 'cleared', 'confirmed'));

create table revshare_ranges (
  id uuid primary key,
  supplier_id uuid not null references accounts (id),
  name text not null,
  country_code text not null,
  country text not null,
  -- E.164 digits every number of the range starts with.
  prefix text not null,
  number_type text not null check (number_type in ('iprn', 'premium', 'shared_cost', 'audiotext')),
  -- What the supplier owes the platform per answered minute; payouts never exceed it.
  rate_per_minute numeric(20, 6) not null check (rate_per_minute >= 0.0),
  billing_initial integer not null default 1 check (billing_initial between 1 and 3600),
  billing_increment integer not null default 1 check (billing_increment between 1 and 3600),
  hold_days integer not null default 30 check (hold_days between 0 and 365),
  release_on text not null default 'hold_period' check (release_on in ('hold_period', 'supplier_payment')),
  -- The supplier's signalling addresses: INVITEs to the range's numbers come only from these.
  source_ips text[] not null default '{}',
  max_call_seconds integer not null default 3600 check (max_call_seconds between 10 and 14400),
  status revshare_range_status not null default 'active',
  -- Per-range overrides of the fraud rules ([revenue_share] defaults).
  fraud_rules jsonb not null default '{}',
  -- Supplier payments recorded up to this day (UTC) settle the calls answered on or before it.
  paid_through date,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  unique (supplier_id, prefix)
);
create index revshare_ranges_catalogue on revshare_ranges (country_code, id) where status = 'active';

-- Payout per answered minute by origin: the longest origin prefix matching the caller's number wins;
-- '' matches every origin.
create table revshare_payouts (
  range_id uuid not null references revshare_ranges (id) on delete cascade,
  origin text not null check (origin ~ '^[0-9]{0,15}$'),
  payout_per_minute numeric(20, 6) not null check (payout_per_minute >= 0.0),
  primary key (range_id, origin)
);

create table revshare_numbers (
  id uuid primary key,
  range_id uuid not null references revshare_ranges (id),
  number text not null unique check (number ~ '^[1-9][0-9]{6,14}$'),
  -- A test number answers anyone's test calls and earns nobody anything.
  is_test boolean not null default false,
  state revshare_number_state not null default 'available',
  holder_id uuid references accounts (id),
  label text,
  max_call_seconds integer check (max_call_seconds between 10 and 14400),
  allocated_at timestamptz,
  released_at timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  check ((state = 'allocated') = (holder_id is not null))
);
create index revshare_numbers_holder on revshare_numbers (holder_id, id desc) where holder_id is not null;
create index revshare_numbers_range on revshare_numbers (range_id, state, id);

create table revshare_fraud_flags (
  id uuid primary key,
  holder_id uuid not null references accounts (id),
  range_id uuid not null references revshare_ranges (id),
  number_id uuid not null references revshare_numbers (id),
  rule text not null,
  detail jsonb not null default '{}',
  status revshare_flag_status not null default 'open',
  note text,
  resolved_by uuid references accounts (id),
  resolved_at timestamptz,
  posting_id uuid,
  created_at timestamptz not null
);
-- One open flag per number: later calls join it.
create unique index revshare_flags_open on revshare_fraud_flags (number_id) where status = 'open';
create index revshare_flags_holder on revshare_fraud_flags (holder_id, id desc);
create index revshare_flags_range on revshare_fraud_flags (range_id, id desc);

create table revshare_releases (
  id uuid primary key,
  holder_id uuid not null references accounts (id),
  amount numeric(20, 6) not null,
  calls integer not null,
  posting_id uuid not null,
  created_at timestamptz not null
);
create index revshare_releases_holder on revshare_releases (holder_id, id desc);

create table revshare_calls (
  id uuid primary key,
  number_id uuid not null references revshare_numbers (id),
  range_id uuid not null references revshare_ranges (id),
  holder_id uuid references accounts (id),
  supplier_id uuid not null references accounts (id),
  sip_call_id text not null,
  from_number text not null,
  -- The origin row that priced the payout ('' = any origin).
  origin text,
  source_ip text not null,
  started_at timestamptz not null,
  answered_at timestamptz,
  ended_at timestamptz not null,
  duration_seconds integer not null,
  billed_seconds integer not null,
  rate_per_minute numeric(20, 6) not null,
  payout_per_minute numeric(20, 6) not null,
  charge numeric(20, 6) not null,
  payout numeric(20, 6) not null,
  status revshare_call_status not null,
  sip_code integer not null,
  hangup_cause text not null,
  release_at timestamptz,
  flag_id uuid references revshare_fraud_flags (id),
  release_id uuid references revshare_releases (id),
  posting_id uuid,
  created_at timestamptz not null,
  unique (sip_call_id, number_id)
);
create index revshare_calls_holder on revshare_calls (holder_id, id desc) where holder_id is not null;
create index revshare_calls_supplier on revshare_calls (supplier_id, id desc);
create index revshare_calls_number_time on revshare_calls (number_id, started_at);
create index revshare_calls_due on revshare_calls (release_at) where status = 'held';
create index revshare_calls_flag on revshare_calls (flag_id) where flag_id is not null;

create table revshare_supplier_payments (
  id uuid primary key,
  range_id uuid not null references revshare_ranges (id),
  supplier_id uuid not null references accounts (id),
  period_end date not null,
  amount numeric(20, 6) not null check (amount > 0.0),
  reference text,
  posting_id uuid not null,
  recorded_by uuid not null references accounts (id),
  created_at timestamptz not null
);
create index revshare_supplier_payments_range on revshare_supplier_payments (range_id, id desc);

create table revshare_settings (
  account_id uuid primary key references accounts (id),
  -- Seconds a call rings before the exchange answers it.
  ring_seconds integer not null default 0 check (ring_seconds between 0 and 10),
  -- Copied onto numbers allocated afterwards (null: the range's limit).
  default_max_call_seconds integer check (default_max_call_seconds between 10 and 14400),
  notify_fraud boolean not null default true,
  updated_at timestamptz not null
);
