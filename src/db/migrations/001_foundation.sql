-- Accounts, credentials, sessions, API keys, idempotency and shared secrets.

create table accounts (
  id uuid primary key,
  email text,
  password_hash text,
  must_change_password boolean not null default false,
  role text not null default 'customer' check (role in ('customer', 'admin')),
  parent_id uuid references accounts (id),
  status text not null default 'active' check (status in ('draft', 'active', 'suspended', 'closed')),
  label text,
  external_ref text,
  settings jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check (email is not null or parent_id is not null)
);
create unique index accounts_email_key on accounts (lower(email)) where email is not null;
create index accounts_parent_idx on accounts (parent_id, created_at desc, id desc) where parent_id is not null;

create table sessions (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  refresh_hash text not null unique,
  -- The refresh token replaced by the last rotation: presenting it again means it leaked.
  previous_refresh_hash text unique,
  created_at timestamptz not null default now(),
  last_seen_at timestamptz not null default now(),
  expires_at timestamptz not null,
  revoked_at timestamptz,
  user_agent text,
  ip text
);
create index sessions_account_idx on sessions (account_id, created_at desc);

create table api_keys (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  name text not null default '',
  mode text not null check (mode in ('live', 'test')),
  -- Public look-up handle: the key's type prefix and its first random characters.
  prefix text not null unique,
  secret_hash text not null,
  -- null: full access (every scope but webhooks:write); otherwise exactly these scopes.
  scopes text[],
  webhooks_write boolean not null default false,
  created_at timestamptz not null default now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);
create index api_keys_account_idx on api_keys (account_id, created_at desc, id desc);

create table api_key_usage (
  key_id uuid not null references api_keys (id),
  day date not null,
  requests bigint not null default 0,
  primary key (key_id, day)
);

create table idempotency_keys (
  account_id uuid not null references accounts (id),
  key text not null,
  fingerprint text not null,
  state text not null check (state in ('in_flight', 'done')),
  lease_until timestamptz not null,
  status_code integer,
  response_body text,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  primary key (account_id, key)
);
create index idempotency_keys_expiry_idx on idempotency_keys (expires_at);

create table server_secrets (
  name text primary key,
  value text not null,
  created_at timestamptz not null default now()
);

create table notifications (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  kind text not null,
  title text not null,
  body text not null default '',
  data jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default now(),
  read_at timestamptz
);
create index notifications_account_idx on notifications (account_id, created_at desc, id desc);
