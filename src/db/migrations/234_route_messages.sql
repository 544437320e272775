-- Buyer-seller messages per route (issue 23, group "Route messages"): one thread per route and
-- buyer. The seller sees the thread, never the buyer's account; the buyer sees the route, never the
-- seller's account.
create table route_threads (
  id uuid primary key,
  route_id uuid not null references routes (id) on delete cascade,
  buyer_id uuid not null references accounts (id),
  seller_id uuid not null references accounts (id),
  created_at timestamptz not null default now(),
  last_message_at timestamptz not null default now(),
  unique (route_id, buyer_id)
);
create index route_threads_buyer_idx on route_threads (buyer_id, id);
create index route_threads_seller_idx on route_threads (seller_id, id);

create table route_messages (
  id uuid primary key,
  thread_id uuid not null references route_threads (id) on delete cascade,
  from_side text not null check (from_side in ('buyer', 'seller')),
  body text not null check (length(body) between 1 and 4000),
  created_at timestamptz not null default now(),
  read_at timestamptz
);
create index route_messages_thread_idx on route_messages (thread_id, id);
