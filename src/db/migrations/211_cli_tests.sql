-- Caller-ID tests (issue 21, spec "CLI tests"): the operator's test handsets, single tests (with
-- schedule and recurrence), and route liveness batches. Owned by src/modules/cli-tests.

-- A handset is a number the exchange calls through a route; the call arrives back at the
-- exchange's own SIP port (a number hosted here), where the INVITE's From/P-Asserted-Identity is read.
create table cli_handsets (
  id uuid primary key,
  number text not null unique check (number ~ '^[1-9][0-9]{6,14}$'),
  country text not null check (country ~ '^[A-Z]{2}$'),
  label text check (length(label) <= 120),
  created_at timestamptz not null
);
create index cli_handsets_country_idx on cli_handsets (country);

create table cli_test_batches (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  status text not null check (status in ('running', 'completed', 'cancelled')),
  display_cli text not null,
  route_ids uuid[] not null,
  created_at timestamptz not null,
  completed_at timestamptz
);
create index cli_test_batches_account_idx on cli_test_batches (account_id, id desc);
-- One running batch per account (spec "Limits": one running batch at a time).
create unique index cli_test_batches_running_idx on cli_test_batches (account_id) where status = 'running';

create table cli_tests (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  batch_id uuid references cli_test_batches (id),
  route_id uuid references routes (id),
  blend_route_id uuid,
  display_cli text not null,
  test_country text not null,
  -- Digits of the handset asked for (or chosen at dispatch).
  test_number text,
  handset_id uuid references cli_handsets (id) on delete set null,
  status text not null check (
    status in ('scheduled', 'pending', 'dispatching', 'in_progress', 'completed', 'failed', 'not_tested', 'cancelled')
  ),
  recurrence text not null check (recurrence in ('none', 'daily', 'weekly')),
  scheduled_at timestamptz,
  simulated boolean not null,
  reported_cli text,
  displayed_correctly boolean,
  result_notes text,
  rang boolean,
  ring_ms integer,
  answer_ms integer,
  sip_code integer,
  failure_cause text,
  cost numeric(20, 6) not null default 0.0,
  dispatched_at timestamptz,
  completed_at timestamptz,
  created_at timestamptz not null
);
create index cli_tests_account_idx on cli_tests (account_id, id desc);
create index cli_tests_batch_idx on cli_tests (batch_id) where batch_id is not null;
create index cli_tests_due_idx on cli_tests (scheduled_at) where status = 'scheduled';
