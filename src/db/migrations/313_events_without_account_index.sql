-- The outbox without its (account_id, id desc) index (issue 26): every emit wrote an entry in it
-- (128 of an emit's 602 WAL bytes, bench/webhooks/emit-cost.bench.ts) and no query reads it. Events
-- are read by id (a delivery's event), by the notification feed through events_notification_idx,
-- and by nothing per account: the API lists deliveries (webhook_deliveries_account_idx), not events.
-- A future per-account read of events makes its own index.
drop index if exists events_account_idx;
