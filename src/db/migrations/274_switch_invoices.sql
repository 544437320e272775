-- Switch invoicing (spec "Switch" Invoicing, resource "Switch invoice"; docs/switch.md "Invoicing").
-- A Switch account (the operator) invoices a customer (one of its sub-accounts) for the customer's
-- rated CDRs of a period. Numbers are gap-free per operator: the counter row is locked by the issuing
-- transaction (not a sequence, whose values a rolled-back issue would lose).
create table switch_invoice_counters (
  operator_id uuid primary key references accounts (id) on delete cascade,
  last_number bigint not null check (last_number >= 0)
);

create domain switch_invoice_status as text
  check (value in ('draft', 'open', 'partial', 'paid', 'overdue', 'void'));

create table switch_invoices (
  id uuid primary key,
  operator_id uuid not null references accounts (id) on delete cascade,
  customer_id uuid not null references accounts (id) on delete cascade,
  invoice_number bigint not null check (invoice_number > 0),
  period_start timestamptz not null,
  period_end timestamptz not null,
  issue_date date not null,
  due_date date not null,
  payment_terms_days integer not null,
  currency text not null,
  subtotal numeric(20, 6) not null,
  brought_forward numeric(20, 6) not null default 0.0,
  credits_applied numeric(20, 6) not null default 0.0,
  tax numeric(20, 6) not null default 0.0,
  total numeric(20, 6) not null,
  amount_paid numeric(20, 6) not null default 0.0,
  status switch_invoice_status not null,
  notes text,
  customer_label text not null,
  billing_profile jsonb not null,
  lines jsonb not null,
  country_breakdown jsonb not null,
  exclusions jsonb,
  preview jsonb not null,
  review_digest text not null,
  replaces_invoice_id uuid references switch_invoices (id),
  -- An earlier invoice whose outstanding amount this invoice brought forward (cleared on void).
  carried_into_id uuid references switch_invoices (id),
  sent_at timestamptz,
  send_count integer not null default 0,
  void_reason text,
  voided_at timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  unique (operator_id, invoice_number),
  check (period_end > period_start),
  check (amount_paid >= 0.0 and credits_applied >= 0.0 and brought_forward >= 0.0)
);
create index switch_invoices_list_idx on switch_invoices (operator_id, invoice_number desc);
create index switch_invoices_customer_idx on switch_invoices (customer_id, period_start);
-- A void invoice is replaced at most once.
create unique index switch_invoices_replaces_key on switch_invoices (replaces_invoice_id)
  where replaces_invoice_id is not null;

-- The usage an invoice bills: each CDR claimed by at most one invoice that is not void. A void
-- releases its claims (released_at) and keeps them as the record of what it billed.
create table switch_invoice_claims (
  invoice_id uuid not null references switch_invoices (id) on delete cascade,
  cdr_id uuid not null,
  released_at timestamptz,
  primary key (invoice_id, cdr_id)
);
create unique index switch_invoice_claims_live_key on switch_invoice_claims (cdr_id) where released_at is null;

-- Payments recorded by `settle`. They move no money: the customer's usage was already paid from its
-- prepaid sub-account balance through the ledger when each call or message settled.
create table switch_invoice_payments (
  id uuid primary key,
  invoice_id uuid not null references switch_invoices (id) on delete cascade,
  amount numeric(20, 6) not null check (amount > 0.0),
  method text not null,
  reference text,
  paid_at timestamptz not null,
  created_at timestamptz not null
);
create index switch_invoice_payments_invoice_idx on switch_invoice_payments (invoice_id, paid_at);
