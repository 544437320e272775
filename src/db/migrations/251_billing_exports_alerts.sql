-- Billing exports (large transaction and record CSVs made in the background, downloaded once
-- completed) and spending alerts.

create domain billing_export_phase as text check (value in ('queued', 'running', 'completed', 'failed'));

create table billing_exports (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  kind text not null check (kind in ('transactions', 'cdrs')),
  params jsonb not null,
  phase billing_export_phase not null,
  row_count integer,
  truncated boolean not null default false,
  -- The file under the state directory; removed with the row when it expires.
  file text,
  error text,
  expires_at timestamptz not null,
  created_at timestamptz not null,
  completed_at timestamptz
);
create index billing_exports_account on billing_exports (account_id, id desc);
create index billing_exports_unfinished on billing_exports (id) where phase in ('queued', 'running');

create table billing_alerts (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  period text not null check (period in ('day', 'month')),
  threshold numeric(20, 6) not null check (threshold > 0.0),
  enabled boolean not null default true,
  -- The period ('2026-05-10' or '2026-05') it last fired in: once per period.
  last_fired_period text,
  last_fired_at timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create index billing_alerts_account on billing_alerts (account_id, id desc);
create index billing_alerts_enabled on billing_alerts (account_id) where enabled;
