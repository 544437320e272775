-- Switch providers (supplier accounts) and their supplier trunks (spec "Switch provider (supplier
-- account) and trunk", docs/switch.md "Providers and supplier trunks"): a Switch account's own
-- carriers, their trunks and SIP endpoints, contacts, disputes and cost decks, with an audit of every
-- change and a configuration version per trunk change. Nothing here is on a call's hot path yet
-- (routing customer traffic over these trunks is the next step), so single-column rules are table checks.

create table switch_providers (
  id uuid primary key,
  account_id uuid not null references accounts (id) on delete cascade,
  name text not null check (length(name) between 1 and 160),
  account_code text check (length(account_code) <= 40),
  legal_name text check (length(legal_name) <= 200),
  trading_name text check (length(trading_name) <= 200),
  provider_type text not null default 'carrier'
    check (provider_type in ('carrier', 'aggregator', 'mno', 'mvno', 'sip_provider')),
  registration_number text check (length(registration_number) <= 80),
  tax_id text check (length(tax_id) <= 80),
  vat_id text check (length(vat_id) <= 80),
  address text check (length(address) <= 600),
  country text check (length(country) <= 2),
  account_manager text check (length(account_manager) <= 160),
  tags text[] not null default '{}',
  services text[] not null default '{}'
    check (services <@ array['termination', 'origination', 'did', 'sms']::text[]),
  portal_email text check (length(portal_email) <= 255),
  notes text check (length(notes) <= 4000),
  currency text not null default 'USD' check (length(currency) between 1 and 3),
  status text not null default 'draft'
    check (status in ('draft', 'pending_approval', 'testing', 'active', 'suspended', 'terminated')),
  status_note text check (length(status_note) <= 1000),
  status_changed_at timestamptz not null,
  contract_start date,
  contract_end date,
  auto_renew boolean not null default false,
  rate_notice_days integer not null default 7 check (rate_notice_days between 0 and 365),
  dispute_days integer not null default 30 check (dispute_days between 1 and 365),
  billing_mode text not null default 'postpaid' check (billing_mode in ('prepaid', 'postpaid')),
  credit_limit numeric(20, 6) not null default 0.0 check (credit_limit >= 0.0),
  balance numeric(20, 6) not null default 0.0,
  payment_terms_days integer not null default 30 check (payment_terms_days between 0 and 365),
  invoice_cycle text not null default 'monthly' check (invoice_cycle in ('weekly', 'biweekly', 'monthly')),
  billing_timezone text not null default 'UTC' check (length(billing_timezone) <= 64),
  version integer not null default 1,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  check (contract_end is null or contract_start is null or contract_end >= contract_start)
);
-- Names and account codes are unique within the Switch account, whatever their case.
create unique index switch_providers_name on switch_providers (account_id, lower(name));
create unique index switch_providers_code on switch_providers (account_id, lower(account_code))
  where account_code is not null;

create table switch_provider_contacts (
  id uuid primary key,
  provider_id uuid not null references switch_providers (id) on delete cascade,
  role text not null check (role in ('noc', 'billing', 'rates', 'sales', 'technical', 'other')),
  name text not null check (length(name) between 1 and 160),
  email text check (length(email) <= 255),
  phone text check (length(phone) <= 40),
  created_at timestamptz not null
);
create index switch_provider_contacts_provider on switch_provider_contacts (provider_id);

-- A supplier trunk; supplier_id null = ungrouped. Passwords are sealed (AES-256-GCM under a key
-- derived from the server's signing secret), never stored or logged in clear.
create table switch_trunks (
  id uuid primary key,
  account_id uuid not null references accounts (id) on delete cascade,
  supplier_id uuid references switch_providers (id) on delete set null,
  label text not null check (length(label) between 1 and 120),
  source text not null default 'external' check (source in ('external', 'marketplace')),
  status text not null default 'draft' check (status in ('active', 'disabled', 'draft', 'testing', 'draining', 'fault')),
  status_note text check (length(status_note) <= 1000),
  sip_host text check (length(sip_host) <= 255),
  sip_port integer not null default 5060 check (sip_port between 1 and 65535),
  transport text not null default 'udp' check (transport in ('udp', 'tcp', 'tls')),
  tech_prefix text check (tech_prefix ~ '^[0-9#*]{1,16}$'),
  sip_auth_username text check (length(sip_auth_username) <= 128),
  sip_auth_password_sealed text,
  media_mode text not null default 'proxy' check (media_mode in ('proxy', 'direct')),
  default_rate_per_unit numeric(20, 6) not null default 0.0 check (default_rate_per_unit >= 0.0),
  billing_increment text not null default '60/60' check (billing_increment ~ '^\d{1,4}/\d{1,4}$'),
  currency text not null default 'USD' check (length(currency) between 1 and 3),
  capacity integer not null default 0 check (capacity between 0 and 100000),
  max_cps integer not null default 0 check (max_cps between 0 and 10000),
  settlement_mode text not null default 'ap' check (settlement_mode in ('ap', 'prepaid')),
  balance numeric(20, 6) not null default 0.0,
  sms_delivery_method text check (sms_delivery_method in ('http', 'smpp')),
  sms_delivery_url text check (length(sms_delivery_url) <= 500),
  smpp_host text check (length(smpp_host) <= 255),
  smpp_port integer check (smpp_port between 1 and 65535),
  smpp_system_id text check (length(smpp_system_id) <= 16),
  smpp_password_sealed text,
  smpp_bind_type text check (smpp_bind_type in ('transceiver', 'transmitter')),
  smpp_system_type text check (length(smpp_system_type) <= 13),
  smpp_tps integer check (smpp_tps between 1 and 1000),
  portal_email text check (length(portal_email) <= 255),
  readiness_exempt boolean not null default false,
  exempt_reason text check (length(exempt_reason) <= 500),
  reachable boolean,
  reach_checked_at timestamptz,
  version integer not null default 1,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create unique index switch_trunks_label on switch_trunks (account_id, lower(label));
create index switch_trunks_supplier on switch_trunks (supplier_id) where supplier_id is not null;

create table switch_trunk_endpoints (
  id uuid primary key,
  trunk_id uuid not null references switch_trunks (id) on delete cascade,
  role text not null default 'primary' check (role in ('primary', 'backup')),
  host text not null check (length(host) between 1 and 255),
  port integer not null default 5060 check (port between 1 and 65535),
  transport text not null default 'udp' check (transport in ('udp', 'tcp', 'tls')),
  priority integer not null default 1 check (priority between 1 and 100),
  weight_pct integer not null default 100 check (weight_pct between 0 and 100),
  enabled boolean not null default true,
  options_interval_seconds integer check (options_interval_seconds between 10 and 3600),
  failure_threshold integer check (failure_threshold between 1 and 20),
  recovery_threshold integer check (recovery_threshold between 1 and 20),
  auto_disable boolean not null default false,
  reachable boolean,
  last_status integer,
  last_rtt_ms integer,
  checked_at timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create unique index switch_trunk_endpoints_target on switch_trunk_endpoints (trunk_id, lower(host), port, transport);

-- One row per change of a trunk's configuration: the whole redacted snapshot after it and the diff.
create table switch_trunk_versions (
  id uuid primary key,
  trunk_id uuid not null references switch_trunks (id) on delete cascade,
  version integer not null,
  source text not null check (source in ('create', 'update', 'status', 'endpoints', 'adoption', 'reachability')),
  changed_fields text[] not null,
  diff jsonb not null,
  note text,
  checksum text not null,
  change_request_id uuid,
  actor_user_id uuid,
  snapshot jsonb not null,
  created_at timestamptz not null,
  unique (trunk_id, version)
);

-- Every change to a provider, its contacts, disputes, trunks and endpoints: who, and before/after
-- (secrets redacted). Trunks with no provider keep provider_id null and are listed by trunk.
create table switch_provider_audit (
  id uuid primary key,
  account_id uuid not null references accounts (id) on delete cascade,
  provider_id uuid references switch_providers (id) on delete cascade,
  trunk_id uuid references switch_trunks (id) on delete set null,
  entity text not null check (entity in ('provider', 'contact', 'dispute', 'trunk', 'endpoint')),
  entity_id uuid not null,
  action text not null check (length(action) <= 40),
  actor_kind text not null check (actor_kind in ('session', 'key', 'system')),
  actor_id uuid,
  credential_id text,
  before jsonb,
  after jsonb,
  created_at timestamptz not null
);
create index switch_provider_audit_provider on switch_provider_audit (provider_id, id desc);

create table switch_disputes (
  id uuid primary key,
  account_id uuid not null references accounts (id) on delete cascade,
  supplier_id uuid not null references switch_providers (id) on delete cascade,
  period_start date not null,
  period_end date not null,
  our_amount numeric(20, 6) not null,
  their_amount numeric(20, 6) not null,
  currency text not null check (length(currency) between 1 and 3),
  status text not null default 'open'
    check (status in ('open', 'submitted', 'accepted', 'rejected', 'settled', 'withdrawn')),
  reason text check (length(reason) <= 4000),
  resolution text check (length(resolution) <= 4000),
  invoice_ref text check (length(invoice_ref) <= 120),
  opened_at timestamptz not null,
  respond_by timestamptz not null,
  closed_at timestamptz,
  version integer not null default 1,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  check (period_end >= period_start)
);
create index switch_disputes_supplier on switch_disputes (supplier_id, id desc);

-- A trunk's cost deck. A row is in force from effective_from until a newer row for the same
-- (prefix, origin_prefix) takes effect; `archived` rows were replaced by an upload.
create table switch_trunk_rates (
  id uuid primary key,
  trunk_id uuid not null references switch_trunks (id) on delete cascade,
  prefix text not null check (prefix ~ '^[0-9]{1,16}$'),
  origin_prefix text not null default '' check (origin_prefix ~ '^[0-9]{0,16}$'),
  rate_per_unit numeric(20, 6) not null check (rate_per_unit >= 0.0),
  destination_name text check (length(destination_name) <= 120),
  billing_increment text check (billing_increment ~ '^\d{1,4}/\d{1,4}$'),
  status text not null default 'active' check (status in ('active', 'scheduled', 'archived')),
  effective_from timestamptz not null,
  created_at timestamptz not null
);
create index switch_trunk_rates_lookup on switch_trunk_rates (trunk_id, prefix text_pattern_ops, origin_prefix, effective_from desc)
  where status <> 'archived';

-- Portal invitations: a sign-in link e-mailed to the trunk's portal address; only the token's hash is kept.
create table switch_portal_invites (
  id uuid primary key,
  trunk_id uuid not null references switch_trunks (id) on delete cascade,
  email text not null,
  token_hash text not null unique,
  expires_at timestamptz not null,
  created_at timestamptz not null
);
