-- An account's rules for its team members' sessions (docs/account.md "Team security settings").
create table account_team_security (
  account_id uuid primary key references accounts (id),
  -- Members sign in to the account only from logins with two-factor sign-in on.
  require_two_factor boolean not null default false,
  -- Member sessions are made only from these networks; empty: any.
  allowed_login_cidrs cidr[] not null default '{}',
  updated_at timestamptz not null
);
