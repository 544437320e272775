-- The notice terms of a Switch customer's sell rates: how many days an increase waits, who is told,
-- and whether a change is e-mailed as soon as it is saved. No row: 0 days, nobody, no auto-send.
create table switch_sell_rate_notices (
  customer_id uuid primary key references sub_accounts (account_id) on delete cascade,
  notice_days integer not null default 0 check (notice_days between 0 and 365),
  recipients text[] not null default '{}',
  auto_send boolean not null default false,
  updated_at timestamptz not null
);

-- Each notice e-mail sent: to whom, which changes it listed (switch_sell_rates ids), and why.
create table switch_sell_rate_notice_sends (
  id uuid primary key,
  customer_id uuid not null references sub_accounts (account_id) on delete cascade,
  sent_at timestamptz not null,
  recipients text[] not null,
  change_ids uuid[] not null,
  trigger text not null check (trigger in ('manual', 'auto')),
  message_ids text[] not null
);
create index switch_sell_rate_notice_sends_customer_idx on switch_sell_rate_notice_sends (customer_id, sent_at desc);
create index switch_sell_rate_notice_sends_changes_idx on switch_sell_rate_notice_sends using gin (change_ids);
