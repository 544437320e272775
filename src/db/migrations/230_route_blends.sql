-- Route blends (issue 23): a listing of its own (a row in `routes`, so purchases, routing order,
-- visibility and access grants work on it unchanged) whose calls and messages go to one of its
-- member routes by a rule, billed as that member plus the blend's margin. A blend has no rate deck
-- and no delivery of its own; routing reads the members' decks and endpoints.
create table route_blends (
  route_id uuid primary key references routes (id) on delete cascade,
  strategy text not null check (strategy in ('percent', 'priority', 'least_cost', 'quality')),
  -- Added to the member's seller rate per minute (voice) or per message (SMS), before the platform fee.
  margin numeric(20, 6) not null default 0 check (margin >= 0.0),
  updated_at timestamptz not null default now()
);

create table route_blend_members (
  blend_id uuid not null references route_blends (route_id) on delete cascade,
  member_id uuid not null references routes (id),
  position integer not null check (position between 1 and 10),
  -- Share of traffic under the percent rule (the shares of a blend add up to 100); 0 otherwise.
  percent integer not null default 0 check (percent between 0 and 100),
  primary key (blend_id, member_id),
  check (member_id <> blend_id)
);
create index route_blend_members_member_idx on route_blend_members (member_id);

-- Every daemon keeps the blends in memory (marketplace/blends/blend-cache.ts); this tells all of
-- them on commit whatever wrote the change.
create function svc_route_blends_notify() returns trigger language plpgsql as $$
begin
  if tg_table_name = 'route_blends' then
    perform pg_notify('svc_route_blends', coalesce(new.route_id, old.route_id)::text);
  else
    perform pg_notify('svc_route_blends', coalesce(new.blend_id, old.blend_id)::text);
  end if;
  return null;
end $$;

create trigger route_blends_notify after insert or update or delete on route_blends
  for each row execute function svc_route_blends_notify();
create trigger route_blend_members_notify after insert or update or delete on route_blend_members
  for each row execute function svc_route_blends_notify();
