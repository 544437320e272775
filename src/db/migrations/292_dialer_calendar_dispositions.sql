-- The dialer's account calendar (holidays on which no campaign call or message starts), caller IDs
-- taken out of rotation, and a disposition per attempt set by the account. Owned by src/modules/dialer.
create table dialer_holidays (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  -- A local date: each campaign reads it in its own windowTz (UTC without one).
  day date not null,
  name text not null,
  created_at timestamptz not null
);
create unique index dialer_holidays_day_idx on dialer_holidays (account_id, day);

create table dialer_caller_id_states (
  account_id uuid not null references accounts (id),
  -- E.164 digits, as dialer_attempts.cli.
  cli text not null,
  status text not null check (status in ('active', 'paused')),
  note text,
  updated_at timestamptz not null,
  primary key (account_id, cli)
);

alter table dialer_attempts
  add column disposition text,
  add column disposition_note text,
  add column disposition_at timestamptz;

create index dialer_attempts_number_idx on dialer_attempts (campaign_id, number, attempt);
-- Duplicate checks look for recent attempts to a number across the account's campaigns.
create index dialer_attempts_account_number_idx on dialer_attempts (account_id, number, started_at);
