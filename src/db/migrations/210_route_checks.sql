-- Route checks (issue 21, spec "Route checks", resource "Route check"): the operator's public
-- self-answering test lines, the checks and one row per checked route. Owned by src/modules/route-checks.

create table route_test_lines (
  id uuid primary key,
  -- E.164 digits without '+'.
  number text not null unique check (number ~ '^[1-9][0-9]{6,14}$'),
  country text not null check (country ~ '^[A-Z]{2}$'),
  line_type text not null check (line_type in ('fixed', 'mobile')),
  label text check (length(label) <= 120),
  created_at timestamptz not null
);
create index route_test_lines_country_idx on route_test_lines (country, line_type);

create table route_checks (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  mode text not null check (mode in ('network', 'ring_me', 'sms')),
  status text not null check (status in ('running', 'done')),
  simulated boolean not null,
  -- '+digits', or a dial code as given in network mode; null when none was given.
  number text,
  total_cost numeric(20, 6) not null default 0.0,
  created_at timestamptz not null,
  completed_at timestamptz
);
create index route_checks_account_idx on route_checks (account_id, id desc);
-- Ring-me and test SMS limits count checks per number (all accounts) and per account per day.
create index route_checks_number_idx on route_checks (number, created_at) where mode in ('ring_me', 'sms');

create table route_check_legs (
  check_id uuid not null references route_checks (id) on delete cascade,
  position integer not null check (position between 0 and 2),
  route_id uuid not null references routes (id),
  route_name text not null,
  country text,
  own_route boolean not null,
  result text not null check (
    result in ('pending', 'checking', 'working', 'no_capacity', 'not_delivered', 'false_answer', 'inconclusive',
               'accepts', 'accepted', 'delivered', 'refused')
  ),
  message text not null,
  check_type text check (check_type in ('full', 'light', 'ring_me', 'sms', 'simulated')),
  destination text,
  line_type text check (line_type in ('fixed', 'mobile')),
  test_line_id uuid references route_test_lines (id) on delete set null,
  rang boolean,
  answered boolean,
  pdd_ms integer,
  sip_code integer,
  billable_seconds integer not null default 0,
  cost numeric(20, 6) not null default 0.0,
  paid_from text check (paid_from in ('test_credit', 'balance', 'mixed')),
  answer_ms integer,
  completed_at timestamptz,
  message_ref text,
  sender text,
  error_code text,
  carrier_status text,
  carrier_error text,
  accepted_at timestamptz,
  receipt_at timestamptz,
  route_returns_receipts boolean,
  -- Test SMS: the postings that paid it, refunded when its receipt says failed.
  charge_posting_ids uuid[],
  primary key (check_id, position)
);
