-- Support tickets: a conversation between an account and the operators, with attachments kept
-- under <state>/support/.

create table support_tickets (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  subject text not null,
  category text not null check (category in ('billing', 'technical', 'routes', 'numbers', 'account', 'compliance', 'other')),
  priority text not null check (priority in ('low', 'normal', 'high', 'urgent')),
  -- open: waiting for support; answered: waiting for the customer; closed.
  status text not null check (status in ('open', 'answered', 'closed')),
  created_at timestamptz not null,
  updated_at timestamptz not null,
  closed_at timestamptz
);
create index support_tickets_account_idx on support_tickets (account_id, id desc);
create index support_tickets_queue_idx on support_tickets (status, id desc);

create table support_messages (
  id uuid primary key,
  ticket_id uuid not null references support_tickets (id),
  author_id uuid not null references accounts (id),
  from_operator boolean not null,
  body text not null,
  created_at timestamptz not null
);
create index support_messages_ticket_idx on support_messages (ticket_id, id);

create table support_attachments (
  id uuid primary key,
  ticket_id uuid not null references support_tickets (id),
  message_id uuid not null references support_messages (id),
  file_name text not null,
  content_type text not null,
  size_bytes integer not null,
  sha256 text not null,
  storage_key text not null,
  created_at timestamptz not null
);
create index support_attachments_ticket_idx on support_attachments (ticket_id, id);
