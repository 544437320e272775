-- Port-in orders (docs/numbers.md "Port-in orders"): a buyer brings numbers it holds at another
-- carrier into the exchange. The operator reviews the order and completes it once the losing
-- carrier has released the numbers; they are then the buyer's own (no seller, no monthly price).
create table did_port_ins (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  status text not null default 'submitted'
    check (status in ('submitted', 'in_review', 'approved', 'rejected', 'completed', 'cancelled')),
  numbers text[] not null check (cardinality(numbers) between 1 and 100),
  losing_carrier text not null check (length(losing_carrier) between 1 and 120),
  carrier_account_number text not null check (length(carrier_account_number) between 1 and 64),
  -- The losing carrier's port-out PIN: given to the operator, never shown back to the buyer or logged.
  carrier_pin text check (length(carrier_pin) <= 32),
  authorized_name text not null check (length(authorized_name) between 1 and 120),
  documents_ref text check (length(documents_ref) <= 500),
  desired_date date not null,
  review_note text check (length(review_note) <= 2000),
  reviewed_by uuid references accounts (id),
  submitted_at timestamptz not null,
  reviewed_at timestamptz,
  completed_at timestamptz,
  cancelled_at timestamptz,
  updated_at timestamptz not null
);
create index did_port_ins_account_idx on did_port_ins (account_id, id desc);
create index did_port_ins_status_idx on did_port_ins (status, id desc);

-- One row per number of an order: a number is in one open order at a time, and once ported it
-- belongs to that order's account (`ported`); a rejected or cancelled order's numbers are `dropped`.
create table did_port_in_numbers (
  port_in_id uuid not null references did_port_ins (id),
  number text not null check (number ~ '^[1-9][0-9]{6,14}$'),
  account_id uuid not null references accounts (id),
  state text not null default 'requested' check (state in ('requested', 'ported', 'dropped')),
  primary key (port_in_id, number)
);
create unique index did_port_in_numbers_live_key on did_port_in_numbers (number) where state <> 'dropped';
create index did_port_in_numbers_owner_idx on did_port_in_numbers (account_id) where state = 'ported';
