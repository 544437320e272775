-- What a new account chose to skip or hide in its onboarding checklist; whether each step is done
-- is read live from the modules that own it.
create table onboarding_state (
  account_id uuid primary key references accounts (id),
  skipped text[] not null default '{}',
  dismissed_at timestamptz,
  updated_at timestamptz not null
);
