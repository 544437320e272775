-- Account profile and display preferences, company and billing details (frozen into each
-- credited top-up's receipt and invoice), and the audit log of account changes.

create table account_profiles (
  account_id uuid primary key references accounts (id),
  display_name text check (length(display_name) <= 120),
  time_zone text not null default 'UTC',
  currency_display text not null default 'USD' check (currency_display ~ '^[A-Z]{3}$'),
  locale text not null default 'en' check (length(locale) <= 35),
  company_name text check (length(company_name) <= 200),
  tax_id text check (length(tax_id) <= 64),
  billing_email text check (length(billing_email) <= 254),
  address jsonb,
  updated_at timestamptz not null
);

create table account_audit_log (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  -- Who made the change: the account itself, or an operator acting on it.
  actor_id uuid references accounts (id),
  credential text not null check (credential in ('session', 'key', 'system')),
  action text not null,
  changes jsonb not null,
  ip text,
  created_at timestamptz not null
);
create index account_audit_log_account on account_audit_log (account_id, id desc);
