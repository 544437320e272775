-- Switch DNC scrubs (docs/switch.md "DNC"): an uploaded file of up to 500,000 numbers checked
-- against the account's do-not-call list in the background. The file and the two result lists
-- (clean, listed) are kept under <state>/switch-dnc-scrubs/<account>/<id>/.
create table switch_dnc_scrubs (
  id uuid primary key,
  account_id uuid not null references accounts (id) on delete cascade,
  phase text not null check (phase in ('queued', 'scrubbing', 'done', 'failed')),
  file_bytes bigint not null,
  total integer not null default 0,
  listed integer not null default 0,
  clean integer not null default 0,
  invalid integer not null default 0,
  truncated boolean not null default false,
  error text,
  created_at timestamptz not null,
  finished_at timestamptz
);
create index switch_dnc_scrubs_account_idx on switch_dnc_scrubs (account_id, id desc);
