-- A rate sheet above [rate_sheets] async_rows is loaded as a job: the request answers 202 at once
-- and the seller follows the job's progress and outcome here (GET /routes/{id}/rates/jobs/{jobId}).
-- The sheet itself is held only in the memory of the daemon loading it: a job whose daemon died
-- (no heartbeat for two minutes) is marked failed at the next start, and the seller uploads again.
create domain rate_sheet_job_status as text
  check (value in ('queued', 'parsing', 'loading', 'completed', 'failed'));

create table rate_sheet_jobs (
  id uuid primary key,
  route_id uuid not null references routes (id) on delete cascade,
  account_id uuid not null references accounts (id),
  status rate_sheet_job_status not null default 'queued',
  rows_total integer not null,
  rows_parsed integer not null default 0,
  rows_loaded integer not null default 0,
  error_count integer not null default 0,
  -- The first bad rows as [{ line, reason }], or one { line: 0, reason } for a job that broke.
  errors jsonb not null default '[]',
  -- The upload result (the 200 body's data of a synchronous upload) once completed.
  result jsonb,
  created_at timestamptz not null default now(),
  heartbeat_at timestamptz not null default now(),
  finished_at timestamptz
);
create index rate_sheet_jobs_route_idx on rate_sheet_jobs (route_id, id desc);
create index rate_sheet_jobs_unfinished_idx on rate_sheet_jobs (heartbeat_at) where finished_at is null;
