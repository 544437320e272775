-- Route reports (issue 23, group "Route reports"): a buyer reports a problem on a route with
-- evidence from its own CDRs (snapshotted, so the seller reads the facts, never the buyer's
-- records); the seller answers; the buyer accepts the answer or escalates; the operator upholds or
-- rejects. Upheld reports count against the listing's health, and the operator can suspend a
-- listing (status `suspended`: no new traffic, not listed, buyers told).
alter table routes drop constraint routes_status_check;
alter table routes add constraint routes_status_check check (status in ('active', 'paused', 'suspended', 'deleted'));
alter table routes add column suspended_reason text check (length(suspended_reason) <= 500);
alter table routes add column suspended_at timestamptz;

create domain route_report_status as text
  check (value in ('open', 'answered', 'escalated', 'resolved', 'upheld', 'rejected', 'withdrawn'));

create table route_reports (
  id uuid primary key,
  route_id uuid not null references routes (id) on delete cascade,
  reporter_id uuid not null references accounts (id),
  seller_id uuid not null references accounts (id),
  category text not null check (category in ('cli_not_delivered', 'false_answer_supervision', 'poor_quality', 'fraud', 'no_delivery_receipts', 'other')),
  description text not null check (length(description) between 1 and 4000),
  status route_report_status not null default 'open',
  answer text check (length(answer) <= 4000),
  answered_at timestamptz,
  outcome_note text check (length(outcome_note) <= 2000),
  decided_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index route_reports_route_idx on route_reports (route_id, id);
create index route_reports_reporter_idx on route_reports (reporter_id, id);
create index route_reports_seller_idx on route_reports (seller_id, id);
create unique index route_reports_open_uq on route_reports (route_id, reporter_id, category)
  where status in ('open', 'answered', 'escalated');

create table route_report_evidence (
  report_id uuid not null references route_reports (id) on delete cascade,
  cdr_id uuid not null,
  -- What the seller may see of the record: no buyer identity, the number cut to its destination.
  facts jsonb not null,
  primary key (report_id, cdr_id)
);
