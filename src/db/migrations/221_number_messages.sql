-- SMS on phone numbers (issue 22): messages sent from a rented number, kept per conversation
-- (`peer`, the other party's digits). Inbound messages will land here too (direction 'in').
create table did_messages (
  id uuid primary key,
  did_id uuid not null references dids (id),
  account_id uuid not null references accounts (id),
  direction text not null check (direction in ('in', 'out')),
  from_number text not null,
  to_number text not null,
  peer text not null check (peer ~ '^\d{1,32}$'),
  body text not null,
  segments integer not null default 1,
  status text not null check (status in ('received', 'queued', 'sent', 'delivered', 'failed')),
  error text,
  -- The SMS message id of the send path (GET /comms/sms/{id}).
  provider_message_id text,
  cost numeric(20, 6) not null default 0,
  idempotency_key text check (length(idempotency_key) <= 80),
  read_at timestamptz,
  created_at timestamptz not null
);
create unique index did_messages_idempotency_key on did_messages (did_id, idempotency_key) where idempotency_key is not null;
create index did_messages_thread_idx on did_messages (did_id, peer, id desc);
create index did_messages_unread_idx on did_messages (did_id, peer) where direction = 'in' and read_at is null;
