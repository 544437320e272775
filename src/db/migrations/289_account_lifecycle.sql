-- Account deletion, data export and devices (docs/account.md "Account: deletion, data export, devices").

-- A deletion request: scheduled for the end of the grace period, then carried out by the sweep
-- (closing entries, credentials ended, the account closed) or cancelled by the owner before.
create table account_deletions (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  state text not null check (state in ('scheduled', 'cancelled', 'completed')),
  forfeit_balance boolean not null,
  reason text,
  requested_by uuid not null references accounts (id),
  requested_at timestamptz not null,
  scheduled_for timestamptz not null,
  cancelled_at timestamptz,
  completed_at timestamptz,
  -- Why the last attempt at the scheduled time did not go ahead (a live call, a new sub-account…).
  blocked_reason text,
  -- What the closing did: the forfeited balance and its posting, what was ended.
  outcome jsonb
);
create unique index account_deletions_open on account_deletions (account_id) where state = 'scheduled';
create index account_deletions_due on account_deletions (scheduled_for) where state = 'scheduled';
create index account_deletions_account on account_deletions (account_id, id desc);

-- A data export (GDPR-style archive of the account's own data), kept for a week.
create table account_exports (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  state text not null check (state in ('running', 'completed', 'failed')),
  file text,
  size_bytes bigint,
  sha256 text,
  -- Rows per file of the archive.
  sections jsonb,
  error text,
  requested_by uuid not null references accounts (id),
  created_at timestamptz not null,
  completed_at timestamptz,
  expires_at timestamptz not null
);
create index account_exports_account on account_exports (account_id, id desc);
create index account_exports_expiry on account_exports (expires_at);

-- What the login says about one of its devices (a device is its sessions with one user agent).
create table account_devices (
  account_id uuid not null references accounts (id),
  device_id uuid not null,
  name text,
  trusted_at timestamptz,
  updated_at timestamptz not null,
  primary key (account_id, device_id)
);

-- The closing entry of a deleted account: what is left of its balance (its own money, holds
-- excluded) goes to platform revenue, posted as a charge related to the deletion.
create function ledger_forfeit_balance(p_key text, p_owner uuid, p_amount numeric, p_reference text, p_at timestamptz)
returns jsonb
language plpgsql as $$
begin
  return ledger_owner_move(p_key, 'charge', p_owner, ledger_acct(p_owner, 'customer'), ledger_platform('platform_revenue'),
    true, p_amount, 'own', 'account_deletion', p_reference, p_at);
end $$;
