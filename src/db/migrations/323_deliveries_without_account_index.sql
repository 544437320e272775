-- webhook_deliveries without its (account_id, id desc) index (issue 26): every delivery an emit fans
-- out wrote an entry in it (about 130 of an emit's 980 WAL bytes with one endpoint,
-- bench/webhooks/emit-cost.bench.ts) beside the primary key, due_idx and endpoint_idx. Its one
-- reader, the account's delivery list (GET /account/webhooks/deliveries), now walks endpoint_idx
-- per endpoint of the account (src/modules/webhooks/repo.ts): a delivery's account is always its
-- endpoint's. That walk finds the account's endpoints, deleted ones included, by this index: the
-- existing webhook_endpoints_account_idx leaves deleted endpoints out, and endpoints are written
-- rarely, so the entry costs nothing on the emit path.
create index webhook_endpoints_owner_idx on webhook_endpoints (account_id);
drop index if exists webhook_deliveries_account_idx;
