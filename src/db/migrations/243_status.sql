-- The public status page: component uptime by day, incidents and maintenance windows that
-- operators post with their updates, and e-mail subscriptions to those updates.

create table status_uptime_daily (
  component text not null,
  day date not null,
  samples integer not null,
  ok_samples integer not null,
  primary key (component, day)
);

create table status_incidents (
  id uuid primary key,
  kind text not null check (kind in ('incident', 'maintenance')),
  title text not null,
  status text not null check (status in ('investigating', 'identified', 'monitoring', 'resolved', 'scheduled', 'in_progress', 'completed')),
  impact text not null check (impact in ('none', 'minor', 'major', 'critical', 'maintenance')),
  components text[] not null,
  starts_at timestamptz not null,
  ends_at timestamptz,
  resolved_at timestamptz,
  created_by uuid not null references accounts (id),
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create index status_incidents_open_idx on status_incidents (starts_at) where resolved_at is null;

create table status_incident_updates (
  id uuid primary key,
  incident_id uuid not null references status_incidents (id),
  status text not null,
  message text not null,
  created_by uuid not null references accounts (id),
  created_at timestamptz not null
);
create index status_incident_updates_idx on status_incident_updates (incident_id, id);

-- `token` only confirms or ends its own subscription, and every update e-mail carries it.
create table status_subscriptions (
  id uuid primary key,
  email text not null,
  token text not null unique,
  confirmed_at timestamptz,
  unsubscribed_at timestamptz,
  created_at timestamptz not null
);
create unique index status_subscriptions_email_idx on status_subscriptions (lower(email)) where unsubscribed_at is null;
