-- A history of listing changes (issue 23, "Marketplace routes"): every change of a listing's
-- fields, one row per field with its old and new value, whatever wrote it (an API operation, a
-- bulk change of 5,000 listings, an operator's suspension, hand-run SQL), so it is written by a
-- trigger in the transaction of the change. Who: the account a writer names for its transaction
-- (`set_config('svc.actor', <id>, true)`, the operator's suspensions do), else the listing's
-- seller, the only other account that can change a listing.
create table route_changes (
  id bigint generated always as identity primary key,
  route_id uuid not null references routes (id) on delete cascade,
  field text not null,
  old_value jsonb,
  new_value jsonb,
  actor_id uuid references accounts (id),
  changed_at timestamptz not null default now()
);
-- newest first per route (the seller's and buyers' page), and per field
create index route_changes_route_idx on route_changes (route_id, id desc);

create function svc_route_changes_record() returns trigger language plpgsql as $$
declare
  actor uuid := coalesce(nullif(current_setting('svc.actor', true), '')::uuid, new.seller_id);
  -- the writer's clock where it stamped the change, else the database's
  at timestamptz := case when new.updated_at is distinct from old.updated_at then new.updated_at else now() end;
  before jsonb := to_jsonb(old);
  after jsonb := to_jsonb(new);
  k text;
begin
  for k in select jsonb_object_keys(after) loop
    -- bookkeeping, not listing fields
    continue when k in ('id', 'seller_id', 'created_at', 'updated_at');
    continue when before -> k is not distinct from after -> k;
    if k = 'sms_delivery' then
      -- credentials inside are write-only: the history keeps the delivery's kind and target only
      insert into route_changes (route_id, field, old_value, new_value, actor_id, changed_at)
      values (new.id, k,
        case when old.sms_delivery is null then null
          else jsonb_strip_nulls(jsonb_build_object('kind', old.sms_delivery -> 'kind', 'host', old.sms_delivery -> 'host',
            'port', old.sms_delivery -> 'port')) end,
        case when new.sms_delivery is null then null
          else jsonb_strip_nulls(jsonb_build_object('kind', new.sms_delivery -> 'kind', 'host', new.sms_delivery -> 'host',
            'port', new.sms_delivery -> 'port')) end,
        actor, at);
    else
      insert into route_changes (route_id, field, old_value, new_value, actor_id, changed_at)
      values (new.id, k, before -> k, after -> k, actor, at);
    end if;
  end loop;
  return null;
end $$;

create trigger routes_change_history after update on routes
  for each row when (old is distinct from new) execute function svc_route_changes_record();
