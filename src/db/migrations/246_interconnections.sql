-- Interconnections (issue 24, docs/interconnections.md): bilateral agreements between two accounts
-- of the exchange. One account proposes terms to another (the peer); the side the proposal awaits
-- counters, accepts or declines. An active interconnection gives each side a discount off the
-- other side's seller rates on the services it names, which rating applies when one buys the
-- other's routes (routing/routing.ts), so calls and messages between the two bill at those terms.
create domain interconnection_status as text
  check (value in ('pending', 'active', 'suspended', 'declined', 'cancelled', 'terminated'));

create table interconnections (
  id uuid primary key,
  requester_id uuid not null references accounts (id),
  peer_id uuid not null references accounts (id),
  status interconnection_status not null default 'pending',
  -- Who made the terms on the table (while pending): the other side may accept them.
  proposed_by text not null check (proposed_by in ('requester', 'peer')),
  services text[] not null check (cardinality(services) between 1 and 2 and services <@ array['voice', 'sms']),
  -- Percent off the other side's seller rates that each side pays when it buys the other's routes.
  requester_discount_pct numeric(5, 2) not null check (requester_discount_pct between 0 and 50),
  peer_discount_pct numeric(5, 2) not null check (peer_discount_pct between 0 and 50),
  -- How long the terms run once accepted.
  term_days integer not null check (term_days between 1 and 3660),
  note text check (length(note) <= 1000),
  expires_at timestamptz not null,
  rounds integer not null default 1,
  activated_at timestamptz,
  valid_until timestamptz,
  suspended_by uuid references accounts (id),
  suspended_at timestamptz,
  ended_by uuid references accounts (id),
  ended_at timestamptz,
  end_reason text check (length(end_reason) <= 500),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check (requester_id <> peer_id)
);
create index interconnections_requester_idx on interconnections (requester_id, id);
create index interconnections_peer_idx on interconnections (peer_id, id);
-- One live agreement (proposed, in force or paused) per pair of accounts, whichever side asked.
create unique index interconnections_pair_live_idx
  on interconnections (least(requester_id, peer_id), greatest(requester_id, peer_id))
  where status in ('pending', 'active', 'suspended');

-- Every daemon caches each account's terms in force; this tells all of them on commit.
create function svc_interconnections_notify() returns trigger language plpgsql as $$
begin
  perform pg_notify('svc_interconnections', new.requester_id::text);
  perform pg_notify('svc_interconnections', new.peer_id::text);
  return null;
end $$;
create trigger interconnections_notify after insert or update on interconnections
  for each row execute function svc_interconnections_notify();
