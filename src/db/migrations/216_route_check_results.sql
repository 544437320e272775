-- Route-check and caller-ID test results as the listing's measured health (issue 21): per route,
-- UTC day and kind, how many checks said something about the route and how many it passed. Owned
-- by the marketplace (written only through its listings service, `recordCheckResult`); the checks'
-- own rows stay with route-checks and cli-tests. No account is kept: the seller never learns who
-- checked. Checks of one's own listing are not counted.
create table route_check_results_daily (
  route_id uuid not null references routes (id) on delete cascade,
  day date not null,
  -- call: a route check call; sms: a test message's receipt; cli: a caller-ID test that rang.
  kind text not null check (kind in ('call', 'sms', 'cli')),
  checks integer not null,
  passed integer not null,
  primary key (route_id, day, kind)
);
