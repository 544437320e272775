-- Offers (issue 23): a buyer asks a route's seller for prices on destinations and a volume; the two
-- trade proposals until one side accepts the other's (or declines, or the offer expires). An
-- accepted offer becomes private rates for that buyer on that route, which rating uses in place of
-- the deck's rate for numbers under the offer's prefixes.
create domain offer_status as text
  check (value in ('pending', 'countered', 'accepted', 'declined', 'expired'));

create table offers (
  id uuid primary key,
  route_id uuid not null references routes (id),
  buyer_id uuid not null references accounts (id),
  seller_id uuid not null references accounts (id),
  status offer_status not null default 'pending',
  -- Who made the proposal on the table: the other side may accept it.
  proposed_by text not null check (proposed_by in ('buyer', 'seller')),
  volume integer check (volume > 0),
  note text check (length(note) <= 1000),
  -- How long accepted rates stay private rates for the buyer.
  valid_days integer not null check (valid_days between 1 and 366),
  expires_at timestamptz not null,
  decided_at timestamptz,
  declined_by text check (declined_by in ('buyer', 'seller')),
  rounds integer not null default 1,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index offers_buyer_idx on offers (buyer_id, id);
create index offers_seller_idx on offers (seller_id, id);
create index offers_open_idx on offers (expires_at) where status in ('pending', 'countered');

-- The proposal on the table: seller rates (before the platform fee) per destination prefix.
create table offer_rates (
  offer_id uuid not null references offers (id) on delete cascade,
  prefix text not null check (prefix ~ '^\d{1,15}$'),
  rate numeric(20, 6) not null check (rate >= 0.0),
  primary key (offer_id, prefix)
);

-- Private rates in force from accepted offers: one buyer, one route, longest prefix first.
create table private_rates (
  route_id uuid not null references routes (id) on delete cascade,
  account_id uuid not null references accounts (id),
  prefix text not null check (prefix ~ '^\d{1,15}$'),
  rate numeric(20, 6) not null check (rate >= 0.0),
  offer_id uuid not null references offers (id),
  valid_from timestamptz not null,
  valid_until timestamptz not null,
  primary key (account_id, route_id, prefix)
);
create index private_rates_route_idx on private_rates (route_id);

-- Every daemon caches each buyer's private rates; this tells all of them on commit.
create function svc_private_rates_notify() returns trigger language plpgsql as $$
begin
  perform pg_notify('svc_private_rates', coalesce(new.account_id, old.account_id)::text);
  return null;
end $$;
create trigger private_rates_notify after insert or update or delete on private_rates
  for each row execute function svc_private_rates_notify();
