-- Ids our SMPP server gave the earlier parts of a customer's concatenated submit_sm (the last part
-- got the message id): each receives its own receipt (deliver_sm) when the message ends.
alter table messages add column customer_part_ids text[] not null default '{}';
