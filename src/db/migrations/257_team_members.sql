-- Team members of an account (docs/account.md "Team members and roles"). The account's own login
-- is its owner and is not a row here; each row lets another login act on the account with a role.
create table account_members (
  account_id uuid not null references accounts (id),
  member_id uuid not null references accounts (id),
  role text not null check (role in ('owner', 'admin', 'billing', 'developer', 'read_only')),
  invited_by uuid references accounts (id),
  joined_at timestamptz not null default now(),
  primary key (account_id, member_id),
  check (account_id <> member_id)
);
create index account_members_member on account_members (member_id);

-- Invitations by e-mail: the token is kept as its SHA-256 only, single-use and expiring.
create table account_invitations (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  email text not null,
  role text not null check (role in ('owner', 'admin', 'billing', 'developer', 'read_only')),
  token_hash text not null unique,
  invited_by uuid not null references accounts (id),
  created_at timestamptz not null,
  expires_at timestamptz not null,
  sent_at timestamptz not null,
  sent_count int not null default 1,
  accepted_at timestamptz,
  accepted_by uuid references accounts (id),
  revoked_at timestamptz
);
-- One open invitation per address and account (expired ones are revoked before a new one).
create unique index account_invitations_open on account_invitations (account_id, lower(email))
  where accepted_at is null and revoked_at is null;

-- A session of a membership: account_id is the team account, member_id the login that signed in.
alter table sessions add column member_id uuid references accounts (id);
create index sessions_member on sessions (member_id) where member_id is not null;

-- A member's sign-in to a team account (invitation accepted, or switching to the team).
alter table login_events drop constraint login_events_method_check;
alter table login_events add constraint login_events_method_check
  check (method in ('password', 'totp', 'recovery_code', 'reset_token', 'membership'));
