-- Switch plans (spec "Switch"): every Switch operation needs an active Switch plan or trial, else
-- 402 SWITCH_SUBSCRIPTION_REQUIRED. Granted and ended by the operator with `svcctl switch-plan`;
-- a trial always ends, a plan runs until its end or until it is ended.
create table switch_subscriptions (
  account_id uuid primary key references accounts (id) on delete cascade,
  kind text not null check (kind in ('trial', 'plan')),
  started_at timestamptz not null,
  ends_at timestamptz,
  updated_at timestamptz not null,
  check (kind = 'plan' or ends_at is not null),
  check (ends_at is null or ends_at > started_at)
);
