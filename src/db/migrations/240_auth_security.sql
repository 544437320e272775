-- E-mail verification, password reset, TOTP two-factor sign-in and the login history (issue 24).

alter table accounts add column email_verified_at timestamptz;

-- Single-use e-mailed tokens; only their SHA-256 is kept, so a database read cannot use one.
create table auth_tokens (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  purpose text not null check (purpose in ('verify_email', 'password_reset')),
  token_hash text not null unique,
  -- The address the token was sent to: verifying proves this address, not whatever the account has now.
  email text not null,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  used_at timestamptz
);
create index auth_tokens_account_idx on auth_tokens (account_id, purpose) where used_at is null;

-- The TOTP secret is stored sealed (AES-256-GCM under a key derived from the server secret).
create table account_totp (
  account_id uuid primary key references accounts (id),
  secret_sealed text not null,
  -- null: enrolled but not yet confirmed with a first code.
  enabled_at timestamptz,
  -- The last 30-second step a code was accepted for: a code is never accepted twice.
  last_step bigint not null default 0,
  created_at timestamptz not null
);

create table totp_recovery_codes (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  code_hash text not null,
  used_at timestamptz,
  created_at timestamptz not null
);
create index totp_recovery_codes_account_idx on totp_recovery_codes (account_id) where used_at is null;

-- A password accepted for an account with two-factor sign-in: the session waits for the code.
create table login_challenges (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  token_hash text not null unique,
  attempts integer not null default 0,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  used_at timestamptz,
  user_agent text,
  ip text
);

create table login_events (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  outcome text not null check (outcome in ('success', 'failure', 'second_factor_required', 'second_factor_failed', 'password_reset')),
  method text not null check (method in ('password', 'totp', 'recovery_code', 'reset_token')),
  session_id uuid,
  ip text,
  user_agent text,
  created_at timestamptz not null
);
create index login_events_account_idx on login_events (account_id, id desc);
