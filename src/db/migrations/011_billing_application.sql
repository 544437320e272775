-- Invite codes (test credit), x402 payments, reseller sub-accounts and their SIP credentials.

create table invite_codes (
  code text primary key,
  amount numeric(20, 6) not null check (amount > 0),
  max_redemptions integer not null default 1 check (max_redemptions > 0),
  redemptions integer not null default 0,
  expires_at timestamptz,
  note text,
  created_at timestamptz not null default now()
);

create table invite_redemptions (
  code text not null references invite_codes (code),
  account_id uuid not null references accounts (id),
  posting_id uuid not null,
  created_at timestamptz not null default now(),
  -- One redemption of a code per account.
  primary key (code, account_id)
);

-- x402 payments credited, by the payment's own identity so one payment credits once.
create table x402_payments (
  payment_hash text primary key,
  account_id uuid not null references accounts (id),
  amount numeric(20, 6) not null,
  network text not null,
  payer text,
  transaction text,
  posting_id uuid not null,
  created_at timestamptz not null default now()
);

-- The reseller fields of an account whose parent is an operator (accounts.parent_id);
-- label, external reference and status stay on accounts.
create table sub_accounts (
  account_id uuid primary key references accounts (id),
  parent_id uuid not null references accounts (id),
  markup_pct numeric(9, 3),
  daily_spend_cap numeric(20, 6),
  max_concurrent_calls integer,
  credit_limit numeric(20, 6) not null default 0,
  currency varchar(3) not null default 'USD',
  portal_email text,
  -- The UTC day a daily cap suspended it (resumed event sent when lifted).
  auto_suspended_day date,
  low_balance_notified boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index sub_accounts_parent_idx on sub_accounts (parent_id);

-- SIP digest credentials: only HA1 = md5(username:realm:password) is kept.
create table sip_credentials (
  username text primary key,
  account_id uuid not null unique references accounts (id),
  ha1 text not null,
  created_at timestamptz not null default now(),
  rotated_at timestamptz
);

create table application_settings (
  operator_id uuid primary key references accounts (id),
  default_markup_pct numeric(9, 3) not null default 0,
  default_billing_increment integer not null default 60,
  min_margin_pct numeric(9, 3) not null default 0,
  sub_low_balance_threshold numeric(20, 6) not null default 5,
  default_daily_spend_cap numeric(20, 6),
  default_max_concurrent_calls integer,
  brand_name varchar(120),
  brand_color varchar(9),
  brand_logo_url varchar(500),
  require_trunk_approval boolean not null default false,
  require_trunk_readiness boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
