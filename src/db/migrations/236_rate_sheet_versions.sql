-- Rate sheet versions (issue 23, "Rate sheets"): one row per change of a route's sheet (an upload,
-- a flat change, a row edit, a restore, a bulk upload), numbered per route from 1. A version's rows
-- are not copied: they are the rate_rows in force at `created_at` (rows keep their history), so a
-- version can be read, compared with another and restored for as long as the route exists.
create table rate_sheet_versions (
  route_id uuid not null references routes (id) on delete cascade,
  number integer not null check (number >= 1),
  kind text not null check (kind in ('upload', 'flat', 'rows', 'restore', 'bulk')),
  created_at timestamptz not null,
  rows integer not null,
  increases integer not null,
  decreases integer not null,
  new_destinations integer not null,
  removals integer not null,
  updates integer not null,
  unchanged integer not null,
  scheduled_changes integer not null,
  first_scheduled_at timestamptz,
  -- the version a restore brought back
  restored_from integer,
  primary key (route_id, number)
);

-- A seller's watch list of listings (Marketplace routes: watch, unwatch, watch list).
create table route_watches (
  account_id uuid not null references accounts (id) on delete cascade,
  route_id uuid not null references routes (id) on delete cascade,
  created_at timestamptz not null default now(),
  primary key (account_id, route_id)
);
create index route_watches_route_idx on route_watches (route_id);
