-- A delivery's state checked again, by a domain instead of 020's table CHECK (dropped by 332): a
-- table CHECK is read from its stored text and planned by every INSERT or UPDATE statement on the
-- table, a domain's check once per backend (the type cache keeps it planned), so the emit's
-- fan-out and the worker's updates keep the rule without paying that per statement.
create domain webhook_delivery_state as text
  check (value in ('pending', 'in_flight', 'succeeded', 'failed'));

alter table webhook_deliveries alter column state type webhook_delivery_state;
