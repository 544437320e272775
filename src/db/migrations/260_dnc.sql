-- Per-account do-not-call lists: whole numbers and prefixes, E.164 digits without '+'. The dialer
-- checks a number at dial time; the Switch's DNC scrub reuses the same store.
create table dnc_entries (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  kind text not null check (kind in ('number', 'prefix')),
  value text not null,
  note text,
  source text not null check (source in ('api', 'import')),
  created_at timestamptz not null
);
-- The look-up key of a check: the account, then the number or any of its prefixes.
create unique index dnc_entries_value_idx on dnc_entries (account_id, value, kind);
create index dnc_entries_account_idx on dnc_entries (account_id, id desc);
