-- A buyer may pause a purchase (issue 23): new calls and messages stop using the route while calls
-- in progress finish and settle against their holds; resuming restores it with its routing-order
-- position. Paused and active purchases are one per buyer and route together.
alter table purchases drop constraint purchases_status_check;
alter table purchases add constraint purchases_status_check check (status in ('active', 'paused', 'cancelled'));
alter table purchases add column paused_at timestamptz;
create unique index purchases_open_uq on purchases (account_id, route_id) where status in ('active', 'paused');
