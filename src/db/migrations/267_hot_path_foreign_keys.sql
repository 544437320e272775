-- Foreign keys off the per-message and per-event tables (issue 26), as entries and holds have had
-- since 010. A foreign key check is a statement of its own per written row that share-locks the
-- referenced row: on the SMS path 5 per message (messages.account_id on insert, seller_id on the
-- update to sent, cdrs.account_id and seller_id, events.account_id), each lock writing the
-- accounts tuple (its xmax) and a WAL record, and a multixact where two transactions lock the same
-- buyer or seller at once; an emitted event paid 1 + 3 per delivery.
--
-- What they guarded cannot happen: no code deletes accounts, events, webhook endpoints or
-- deliveries (accounts close, endpoints are soft-deleted), and every id written here comes from a
-- row read in the same transaction (the authenticated account, the route's seller, the event
-- inserted by the same statement, the endpoint joined in it). message_parts keeps its key: its
-- cascade is how a message's parts go with it.
alter table messages
  drop constraint if exists messages_account_id_fkey,
  drop constraint if exists messages_operator_id_fkey,
  drop constraint if exists messages_seller_id_fkey;
alter table cdrs
  drop constraint if exists cdrs_account_id_fkey,
  drop constraint if exists cdrs_operator_id_fkey,
  drop constraint if exists cdrs_seller_id_fkey;
alter table events drop constraint if exists events_account_id_fkey;
alter table webhook_deliveries
  drop constraint if exists webhook_deliveries_account_id_fkey,
  drop constraint if exists webhook_deliveries_event_id_fkey,
  drop constraint if exists webhook_deliveries_endpoint_id_fkey;
