-- Interconnections: an event when a side reaches a cap. The crossing is seen by the CDR trigger of
-- migration 290, inside the settlement's transaction, where the outbox's emit cannot run; so the
-- trigger records it here (once per interconnection, side, period and cap, by the primary key)
-- and the interconnections module's job emits `interconnection.cap_reached` to both sides and
-- marks the row told, in one transaction.
create table interconnection_cap_crossings (
  interconnection_id uuid not null references interconnections (id),
  payer text not null check (payer in ('requester', 'peer')),
  period_start timestamptz not null,
  cap text not null check (cap in ('minutes', 'messages', 'amount')),
  crossed_at timestamptz not null,
  -- The side's usage in the period just after the crossing CDR.
  seconds bigint not null,
  messages bigint not null,
  amount numeric(20, 6) not null,
  told_at timestamptz,
  primary key (interconnection_id, payer, period_start, cap)
);
create index interconnection_cap_crossings_untold_idx on interconnection_cap_crossings (crossed_at) where told_at is null;

create or replace function svc_interconnection_usage() returns trigger language plpgsql as $$
declare
  ic interconnections%rowtype;
  side text;
  d_seconds bigint := case when new.kind = 'voice' then coalesce(new.billed_seconds, 0) else 0 end;
  d_messages bigint := case when new.kind = 'sms' then coalesce(new.segments, 0) else 0 end;
  d_amount numeric(20, 6) := coalesce(new.seller_credit, 0);
  u interconnection_usage%rowtype;
  crossed text[] := '{}';
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
  -- Concurrent settlements queue on the usage row above, so exactly one CDR crosses each cap.
  if ic.cap_minutes is not null and u.seconds >= ic.cap_minutes * 60 and u.seconds - d_seconds < ic.cap_minutes * 60 then
    crossed := crossed || 'minutes';
  end if;
  if ic.cap_messages is not null and u.messages >= ic.cap_messages and u.messages - d_messages < ic.cap_messages then
    crossed := crossed || 'messages';
  end if;
  if ic.cap_amount is not null and u.amount >= ic.cap_amount and u.amount - d_amount < ic.cap_amount then
    crossed := crossed || 'amount';
  end if;
  if cardinality(crossed) > 0 then
    insert into interconnection_cap_crossings
      (interconnection_id, payer, period_start, cap, crossed_at, seconds, messages, amount)
    select ic.id, side, u.period_start, c, new.created_at, u.seconds, u.messages, u.amount from unnest(crossed) c
    on conflict do nothing;
    perform pg_notify('svc_interconnections', (case when side = 'requester' then ic.requester_id else ic.peer_id end)::text);
  end if;
  return null;
end $$;
