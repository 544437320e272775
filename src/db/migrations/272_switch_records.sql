-- Switch call records and analytics (src/modules/switch/records): a Switch account's customers are
-- its sub-accounts, whose records carry it as operator_id; every read of them is by operator and time.
create index cdrs_operator_created_idx on cdrs (operator_id, created_at) where operator_id is not null;

-- Switch record exports share billing_exports (its running limit, files, download path and expiry).
alter table billing_exports drop constraint billing_exports_kind_check;
alter table billing_exports add constraint billing_exports_kind_check check (kind in ('transactions', 'cdrs', 'switch_cdrs'));
