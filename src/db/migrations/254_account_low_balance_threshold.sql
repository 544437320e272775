-- An account's own low-balance line (balance.low): null keeps `[billing] low_balance_threshold`,
-- 0 disables the alert.
alter table account_profiles add column low_balance_threshold numeric(20, 6) check (low_balance_threshold >= 0.0);
