-- Dialer campaigns, the numbers they call, one row per attempt (analytics), imports, templates,
-- contact lists and caller-ID sets. Owned by src/modules/dialer.
create domain dialer_campaign_status as text
  check (value in ('draft', 'ready', 'running', 'paused', 'completed', 'failed'));
create domain dialer_number_state as text
  check (value in ('pending', 'dialing', 'answered', 'failed', 'blocked'));

create table dialer_cli_sets (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  name text not null,
  clis text[] not null,
  created_at timestamptz not null
);
create index dialer_cli_sets_account_idx on dialer_cli_sets (account_id, id desc);

create table dialer_campaigns (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  -- The operator of a sub-account that owns the campaign (its calls bill as the sub-account's).
  parent_id uuid,
  route_id uuid not null,
  name text not null,
  kind text not null check (kind in ('voice', 'sms')),
  environment text not null check (environment in ('live', 'test')),
  status dialer_campaign_status not null,
  status_reason text,
  message_body text,
  sender_id text,
  ai_agent_id uuid,
  actions jsonb not null default '[]',
  language text not null default 'en',
  target_acd text,
  target_asr text,
  notes text,
  concurrency integer not null,
  max_call_duration integer not null,
  call_interval integer not null,
  platform_fee_per_call numeric(20, 6) not null,
  cli_set_id uuid references dialer_cli_sets (id) on delete set null,
  cli_strategy jsonb,
  window_start_hour integer,
  window_end_hour integer,
  window_tz text,
  max_attempts integer not null,
  retry_delay_minutes integer not null,
  max_spend numeric(20, 6),
  -- Settled call costs and platform fees of the campaign, moved in the transaction of each result.
  spent numeric(20, 6) not null default 0.0,
  total_numbers integer not null default 0,
  numbers_dialed integer not null default 0,
  numbers_answered integer not null default 0,
  numbers_failed integer not null default 0,
  total_duration_seconds bigint not null default 0,
  -- Round-robin position over the caller IDs.
  cli_cursor bigint not null default 0,
  -- The daemon running the campaign and until when its claim holds (renewed while it runs).
  runner_node text,
  runner_until timestamptz,
  schedule_at timestamptz,
  started_at timestamptz,
  completed_at timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create index dialer_campaigns_account_idx on dialer_campaigns (account_id, id desc);
create index dialer_campaigns_active_idx on dialer_campaigns (status) where status in ('ready', 'running');

create table dialer_numbers (
  id bigint generated always as identity primary key,
  campaign_id uuid not null references dialer_campaigns (id) on delete cascade,
  number text not null,
  name text,
  fields jsonb,
  state dialer_number_state not null default 'pending',
  attempts integer not null default 0,
  next_at timestamptz not null default '-infinity',
  last_call_id uuid,
  last_status text,
  last_cause text,
  updated_at timestamptz
);
create unique index dialer_numbers_unique_idx on dialer_numbers (campaign_id, number);
create index dialer_numbers_due_idx on dialer_numbers (campaign_id, next_at, id) where state = 'pending';
create index dialer_numbers_dialing_idx on dialer_numbers (campaign_id) where state = 'dialing';

create table dialer_attempts (
  id uuid primary key,
  campaign_id uuid not null references dialer_campaigns (id) on delete cascade,
  account_id uuid not null,
  number text not null,
  attempt integer not null,
  call_id uuid,
  cli text,
  status text not null,
  sip_code integer,
  cause text,
  duration_seconds integer not null default 0,
  cost numeric(20, 6) not null default 0.0,
  fee numeric(20, 6) not null default 0.0,
  started_at timestamptz not null,
  ended_at timestamptz not null
);
create index dialer_attempts_campaign_idx on dialer_attempts (campaign_id, started_at);
create index dialer_attempts_account_idx on dialer_attempts (account_id, started_at);

create table dialer_imports (
  id uuid primary key,
  campaign_id uuid not null references dialer_campaigns (id) on delete cascade,
  account_id uuid not null,
  status text not null check (status in ('running', 'completed', 'failed')),
  rows_read integer not null default 0,
  imported integer not null default 0,
  duplicates integer not null default 0,
  invalid integer not null default 0,
  errors jsonb not null default '[]',
  error text,
  started_at timestamptz not null,
  finished_at timestamptz
);
create index dialer_imports_campaign_idx on dialer_imports (campaign_id, id desc);

create table dialer_templates (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  name text not null,
  body text not null,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create index dialer_templates_account_idx on dialer_templates (account_id, id desc);

create table dialer_contact_lists (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  name text not null,
  count integer not null,
  created_at timestamptz not null
);
create index dialer_contact_lists_account_idx on dialer_contact_lists (account_id, id desc);

create table dialer_contacts (
  list_id uuid not null references dialer_contact_lists (id) on delete cascade,
  position integer not null,
  number text not null,
  name text,
  fields jsonb,
  primary key (list_id, position)
);
