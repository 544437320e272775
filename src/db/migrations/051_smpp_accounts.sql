-- SMPP credentials for customer binds (issue 5): one or more per account or sub-account.
-- The password is kept only as a hash (src/modules/accounts/passwords.ts format); it is shown once at issue.
create table smpp_accounts (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  system_id text not null unique check (length(system_id) between 1 and 16),
  password_hash text not null,
  -- Empty: any address may bind.
  allowed_ips inet[] not null default '{}',
  -- Submits per second per bind; 0 = unlimited.
  throughput integer not null default 50 check (throughput >= 0),
  created_at timestamptz not null,
  disabled_at timestamptz
);
create index smpp_accounts_account_idx on smpp_accounts (account_id);
