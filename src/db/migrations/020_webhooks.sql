-- Events outbox, webhook endpoints, deliveries (the durable queue) and delivery attempts.
-- See src/webhooks/README.md.

-- UUIDv7 made in SQL: deliveries are fanned out by one insert ... select inside the emitting
-- transaction, and their ids must keep time order for cursor lists (PostgreSQL 15 has no uuidv7()).
create function webhook_new_id() returns uuid
language sql volatile as $$
  select encode(
    set_bit(set_bit(
      overlay(uuid_send(gen_random_uuid())
              placing substring(int8send(floor(extract(epoch from clock_timestamp()) * 1000)::bigint) from 3)
              from 1 for 6),
      52, 1), 53, 1),
    'hex')::uuid
$$;

-- The outbox: one row per emitted event, written in the transaction of the change it reports.
create table events (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  event text not null,
  data jsonb not null,
  created_at timestamptz not null
);
create index events_account_idx on events (account_id, id desc);

create table webhook_endpoints (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  url text not null,
  description text not null default '',
  -- Subscribed event names; '*' subscribes to every event.
  events text[] not null,
  secret text not null,
  status text not null default 'active' check (status in ('active', 'disabled')),
  disabled_reason text,
  disabled_at timestamptz,
  -- Deliveries that failed for good in a row; any acknowledged attempt resets it.
  consecutive_failures integer not null default 0,
  secret_rotated_at timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  deleted_at timestamptz
);
create index webhook_endpoints_account_idx on webhook_endpoints (account_id, id desc) where deleted_at is null;

-- One row per (event, endpoint): the delivery and its queue entry. `due_at` is when a worker
-- should next look at it: the next attempt while pending, the lease end while in flight.
create table webhook_deliveries (
  id uuid primary key,
  event_id uuid not null references events (id),
  endpoint_id uuid not null references webhook_endpoints (id),
  account_id uuid not null references accounts (id),
  event text not null,
  state text not null default 'pending' check (state in ('pending', 'in_flight', 'succeeded', 'failed')),
  attempts integer not null default 0,
  due_at timestamptz,
  lease_token uuid,
  last_status integer,
  last_error text,
  resent_from uuid references webhook_deliveries (id),
  created_at timestamptz not null,
  completed_at timestamptz
);
create index webhook_deliveries_due_idx on webhook_deliveries (due_at) where state in ('pending', 'in_flight');
create index webhook_deliveries_endpoint_idx on webhook_deliveries (endpoint_id, id desc);
create index webhook_deliveries_account_idx on webhook_deliveries (account_id, id desc);

create table webhook_attempts (
  delivery_id uuid not null references webhook_deliveries (id),
  attempt integer not null,
  started_at timestamptz not null,
  finished_at timestamptz,
  -- ok, http_status, redirect, timeout, connect_error, tls_error, refused_target, worker_lost, endpoint_inactive
  outcome text,
  status_code integer,
  error text,
  response_excerpt text,
  duration_ms integer,
  primary key (delivery_id, attempt)
);
