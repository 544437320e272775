-- Requests for access to private listings (issue 23, group "Route access"): a buyer holding a
-- private route's id asks; the seller approves (a grant in route_access) or denies. One open
-- request per buyer and route.
create domain route_access_request_status as text check (value in ('pending', 'approved', 'denied', 'withdrawn'));

create table route_access_requests (
  id uuid primary key,
  route_id uuid not null references routes (id) on delete cascade,
  account_id uuid not null references accounts (id),
  status route_access_request_status not null default 'pending',
  note text check (length(note) <= 500),
  reason text check (length(reason) <= 500),
  created_at timestamptz not null default now(),
  decided_at timestamptz
);
create unique index route_access_requests_open_uq on route_access_requests (route_id, account_id) where status = 'pending';
create index route_access_requests_route_idx on route_access_requests (route_id, id);
create index route_access_requests_account_idx on route_access_requests (account_id, id);
create index route_access_account_idx on route_access (account_id);
