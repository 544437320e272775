-- SMS messages sent through the API or customer SMPP binds (issue 5).
-- The text itself is not kept: only its SHA-256, length and encoding (privacy; billing needs only segments).
create table messages (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  operator_id uuid references accounts (id),
  source text not null check (source in ('api', 'smpp')),
  to_number text not null,
  from_sender text not null,
  text_sha256 text not null,
  text_units integer not null,
  encoding text not null check (encoding in ('gsm7', 'ucs2')),
  data_coding integer not null,
  segments integer not null check (segments > 0),
  route_id uuid,
  seller_id uuid references accounts (id),
  mcc_mnc text,
  network_name text,
  network_price_applied boolean not null default false,
  status text not null check (status in ('queued', 'sent', 'delivered', 'failed')),
  error_code text check (error_code in ('SELLER_REJECTED', 'NO_ENDPOINT', 'UNDELIVERABLE', 'EXPIRED', 'REJECTED')),
  error_detail text,
  -- Supplier ids exactly as received (normalised: stray bytes trimmed, leading zeros kept), one per part.
  supplier_message_ids text[] not null default '{}',
  receipt_stat text,
  receipt_err text,
  price_per_segment numeric(20, 6),
  cost numeric(20, 6) not null default 0,
  hold_id uuid,
  charge_posting_id uuid,
  markup_posting_id uuid,
  refund_posting_id uuid,
  registered_delivery boolean not null default true,
  simulated boolean not null default false,
  queued_at timestamptz not null,
  sent_at timestamptz,
  delivered_at timestamptz,
  failed_at timestamptz,
  receipt_at timestamptz,
  -- After this a sent message with no final receipt on a route that returns receipts is EXPIRED.
  receipt_due_at timestamptz
);
create index messages_account_idx on messages (account_id, id desc);
create index messages_expiry_idx on messages (receipt_due_at) where status = 'sent' and receipt_due_at is not null;
create index messages_route_receipt_idx on messages (route_id, receipt_at) where receipt_at is not null;

-- Receipts come per wire part; each part's id is matched under every key `supplierIdKeys` gives
-- (the id case-folded, and its value read as decimal and as hex).
create table message_parts (
  message_id uuid not null references messages (id) on delete cascade,
  seq integer not null,
  supplier_message_id text not null,
  match_keys text[] not null,
  stat text,
  err text,
  receipt_at timestamptz,
  primary key (message_id, seq)
);
create index message_parts_keys_idx on message_parts using gin (match_keys);
