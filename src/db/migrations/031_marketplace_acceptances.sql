-- Buyers' early acceptance of scheduled rate changes (POST /purchases/{id}/accept-rate, issue 4).
-- An acceptance is the buyer's recorded consent to the new rate before it comes into force; it does
-- not move the change's time or the price (one deck serves every buyer of a route).
create table rate_change_acceptances (
  change_id uuid not null references rate_changes (id) on delete cascade,
  purchase_id uuid not null references purchases (id) on delete cascade,
  accepted_at timestamptz not null,
  primary key (change_id, purchase_id)
);
create index rate_change_acceptances_purchase_idx on rate_change_acceptances (purchase_id);
