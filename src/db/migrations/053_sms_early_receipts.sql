-- HTTPS receipt callbacks that name a message whose send has not committed yet (the supplier
-- answered the callback faster than our submit's answer was stored). They are answered 200, so
-- they are kept here and not only in memory: a restart in that window must not lose a receipt
-- the supplier was told we have. Matched after each send, at start and by the expiry sweep;
-- deleted once applied or after the pending window.
create table sms_early_receipts (
  id uuid primary key default gen_random_uuid(),
  route_id uuid not null,
  supplier_message_id text not null,
  reference uuid,
  stat text not null,
  err text not null,
  done_at timestamptz,
  received_at timestamptz not null
);
create index sms_early_receipts_received_idx on sms_early_receipts (received_at);
