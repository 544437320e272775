-- Interconnections: an event when a side reaches a cap. The crossing is seen by the CDR trigger of
-- migration 290, inside the settlement's transaction, where the outbox's emit cannot run; so the
-- trigger records it here (once per interconnection, side, period and cap, by the primary key)
-- and the interconnections module's job emits `interconnection.cap_reached` to both sides and
-- marks the row told, in one transaction. The trigger that records them redefines migration 290's,
-- so it comes after it, in migration 300.
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
