-- A DNC scrub resumes after its daemon restarts (docs/switch.md "DNC"). Its files live in that
-- daemon's state directory, so the scrub belongs to the daemon's lasting node id (`node`), which a
-- restart keeps. Each batch checkpoints the counts (`total` = input rows behind them) with the
-- bytes of clean.csv and listed.csv written and flushed by then: a resumed scrub cuts both lists
-- back to those lengths and reads on from row `total + 1`. `heartbeat_at` (database time) moves at
-- every checkpoint; a scrub of another node silent for an hour is failed by any daemon starting.
alter table switch_dnc_scrubs
  add column node text,
  add column heartbeat_at timestamptz,
  add column clean_bytes bigint not null default 0,
  add column listed_bytes bigint not null default 0,
  add column resumes integer not null default 0;

create index switch_dnc_scrubs_open_idx on switch_dnc_scrubs (node) where phase in ('queued', 'scrubbing');
