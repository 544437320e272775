-- Test SMS receipts that arrive after a daemon restart (issue 21): the supplier's message ids of a
-- test message, as the receipt correlation normalises them, kept on its check leg so that a receipt
-- the restarted daemon has no memory of still finds its check. Cleared once a final receipt applied.
alter table route_check_legs add column supplier_keys text[];
create index route_check_legs_supplier_keys_idx on route_check_legs using gin (supplier_keys)
  where supplier_keys is not null;
