-- Binds one SMPP credential may hold open at once, across the daemons. Throughput is per bind, so
-- without a cap a customer multiplies it by opening more binds. Null: the daemon's
-- `[smpp] max_binds_per_credential`.
alter table smpp_accounts add column max_binds integer check (max_binds between 1 and 1000);
