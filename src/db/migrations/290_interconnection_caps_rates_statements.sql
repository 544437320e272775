-- Interconnections, complete (issue 24, docs/interconnections.md): an accounting period with caps on
-- each side's traffic at the agreed prices, agreed rates per destination prefix, the traffic each CDR
-- carried under an agreement, settlement statements, and `expired` as a stored state for the sweep.

-- The sweep marks proposals nobody answered, and terms past their time, `expired`: that frees the
-- pair for a new agreement (the live-pair index counts pending, active and suspended only).
alter domain interconnection_status drop constraint interconnection_status_check;
alter domain interconnection_status add constraint interconnection_status_check
  check (value in ('pending', 'active', 'suspended', 'declined', 'cancelled', 'terminated', 'expired'));

-- The accounting period of caps and statements (UTC; a week starts on Monday). Caps apply to each
-- side's purchases from the other separately: minutes to voice, messages (billed segments) to SMS,
-- the amount (agreed value, what the buyer's traffic credits the seller) to both. Past a cap, the
-- side's traffic in that period is priced at list price, or refused on the other's routes.
alter table interconnections
  add column period text not null default 'month' check (period in ('day', 'week', 'month')),
  add column cap_minutes integer check (cap_minutes > 0),
  add column cap_messages integer check (cap_messages > 0),
  add column cap_amount numeric(20, 6) check (cap_amount > 0),
  add column over_cap text not null default 'list_price' check (over_cap in ('list_price', 'refuse')),
  add column expired_at timestamptz;

-- Agreed prices per destination: the seller rate `payer` pays on the other side's routes for numbers
-- under `prefix` (longest prefix wins), in place of the deck's rate less the discount.
create table interconnection_rates (
  interconnection_id uuid not null references interconnections (id) on delete cascade,
  payer text not null check (payer in ('requester', 'peer')),
  service text not null check (service in ('voice', 'sms')),
  prefix text not null check (prefix ~ '^[0-9]{1,15}$'),
  rate numeric(20, 6) not null check (rate >= 0),
  destination text check (length(destination) <= 100),
  primary key (interconnection_id, payer, service, prefix)
);

-- The agreement that priced a CDR, and the seller rate it agreed (per minute or message).
alter table cdrs
  add column interconnection_id uuid,
  add column agreed_rate numeric(20, 6);
create index cdrs_interconnection_idx on cdrs (interconnection_id, created_at) where interconnection_id is not null;

create function svc_interconnection_period_start(period text, at timestamptz) returns timestamptz
  language sql immutable parallel safe
  as $$ select date_trunc(period, at at time zone 'UTC') at time zone 'UTC' $$;

create function svc_interconnection_period_end(period text, at timestamptz) returns timestamptz
  language sql immutable parallel safe
  as $$ select (date_trunc(period, at at time zone 'UTC') + ('1 ' || period)::interval) at time zone 'UTC' $$;

-- Each side's traffic at the agreed prices in the current period, counted in the transaction that
-- writes its CDR (so every daemon sees one count, and a cap cannot be crossed twice).
create table interconnection_usage (
  interconnection_id uuid not null references interconnections (id),
  payer text not null check (payer in ('requester', 'peer')),
  period_start timestamptz not null,
  seconds bigint not null default 0,
  messages bigint not null default 0,
  amount numeric(20, 6) not null default 0,
  primary key (interconnection_id, payer, period_start)
);

-- Counts a CDR against its side's caps; on the CDR that crosses one, every daemon's terms cache is
-- told (the channel of migration 246), so the paying side's next call or message is priced past it.
create function svc_interconnection_usage() returns trigger language plpgsql as $$
declare
  ic interconnections%rowtype;
  side text;
  d_seconds bigint := case when new.kind = 'voice' then coalesce(new.billed_seconds, 0) else 0 end;
  d_messages bigint := case when new.kind = 'sms' then coalesce(new.segments, 0) else 0 end;
  d_amount numeric(20, 6) := coalesce(new.seller_credit, 0);
  u interconnection_usage%rowtype;
begin
  select * into ic from interconnections where id = new.interconnection_id;
  if not found or (d_seconds = 0 and d_messages = 0 and d_amount = 0) then
    return null;
  end if;
  side := case when new.seller_id = ic.requester_id then 'peer' else 'requester' end;
  insert into interconnection_usage as x (interconnection_id, payer, period_start, seconds, messages, amount)
  values (ic.id, side, svc_interconnection_period_start(ic.period, new.created_at), d_seconds, d_messages, d_amount)
  on conflict (interconnection_id, payer, period_start) do update
    set seconds = x.seconds + excluded.seconds, messages = x.messages + excluded.messages,
        amount = x.amount + excluded.amount
  returning * into u;
  if (ic.cap_minutes is not null and u.seconds >= ic.cap_minutes * 60 and u.seconds - d_seconds < ic.cap_minutes * 60)
     or (ic.cap_messages is not null and u.messages >= ic.cap_messages and u.messages - d_messages < ic.cap_messages)
     or (ic.cap_amount is not null and u.amount >= ic.cap_amount and u.amount - d_amount < ic.cap_amount) then
    perform pg_notify('svc_interconnections', (case when side = 'requester' then ic.requester_id else ic.peer_id end)::text);
  end if;
  return null;
end $$;
create trigger cdrs_interconnection_usage after insert on cdrs
  for each row when (new.interconnection_id is not null and not new.simulated and not new.is_probe)
  execute function svc_interconnection_usage();

-- Settlement statements: what each side sent the other in one period at the agreed prices. A
-- statement of a closed period is final (one per period); one of the running period is provisional.
create table interconnection_statements (
  id uuid primary key,
  interconnection_id uuid not null references interconnections (id),
  period_start timestamptz not null,
  period_end timestamptz not null,
  final boolean not null,
  generated_by text not null check (generated_by in ('job', 'request')),
  body jsonb not null,
  created_at timestamptz not null
);
create index interconnection_statements_idx on interconnection_statements (interconnection_id, id);
create unique index interconnection_statements_final_idx
  on interconnection_statements (interconnection_id, period_start) where final;
