-- Revenue share calls in progress, so that one a daemon was carrying when it died is settled by the
-- next start (or any other daemon) exactly once, as trunk calls are (docs/revenue-share.md "Crash").
-- A row is written when the exchange answers and removed in the transaction that records the call;
-- `last_seen_at` is the owner's heartbeat, the end of what a reconcile bills.
create table revshare_live_calls (
  id uuid primary key,
  number_id uuid not null references revshare_numbers (id),
  sip_call_id text not null,
  from_number text not null,
  source_ip text not null,
  started_at timestamptz not null,
  answered_at timestamptz not null,
  node text not null,
  last_seen_at timestamptz not null,
  unique (number_id, sip_call_id)
);

create index revshare_live_calls_seen on revshare_live_calls (last_seen_at);
