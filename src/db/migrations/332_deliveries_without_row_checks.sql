-- webhook_deliveries without its state CHECK and its resent_from foreign key (issue 26). Each cost
-- every emit that fans out, whatever the number of rows:
-- - the CHECK is read from its stored text (stringToNode) and planned again by each INSERT or UPDATE
--   statement on the table, about 3.6 % of a backend's CPU in a loop of one-insert transactions
--   with an emit (perf);
-- - the foreign key queues an after-trigger event per inserted row, run at the end of the statement
--   only to find resent_from null.
-- Neither guards anything code can write: state is set only by src/webhooks (emit, the worker) from
-- literals among the four, and resent_from only by a resend, from the delivery row it reads in the
-- same statement. No code deletes deliveries (migration 267). The API still validates the state
-- filter of the delivery list against the four.
alter table webhook_deliveries
  drop constraint if exists webhook_deliveries_state_check,
  drop constraint if exists webhook_deliveries_resent_from_fkey;
