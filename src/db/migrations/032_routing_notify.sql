-- Every daemon caches each buyer's usable routes and each route's SMS delivery details
-- (src/modules/routes/routing-cache.ts); these triggers tell all of them on commit whatever wrote
-- the change (API, admin, hand-run SQL). Identical payloads in one transaction are sent once.

create function svc_routing_notify_account() returns trigger language plpgsql as $$
begin
  if tg_op <> 'INSERT' then perform pg_notify('svc_routing', 'a:' || old.account_id::text); end if;
  if tg_op <> 'DELETE' then perform pg_notify('svc_routing', 'a:' || new.account_id::text); end if;
  return null;
end $$;

create function svc_routing_notify_route() returns trigger language plpgsql as $$
begin
  if tg_op <> 'INSERT' then perform pg_notify('svc_routing', 'r:' || old.id::text); end if;
  if tg_op <> 'DELETE' then perform pg_notify('svc_routing', 'r:' || new.id::text); end if;
  return null;
end $$;

create trigger purchases_routing_notify after insert or update or delete on purchases
  for each row execute function svc_routing_notify_account();
create trigger routing_orders_routing_notify after insert or update or delete on routing_orders
  for each row execute function svc_routing_notify_account();
create trigger routes_routing_notify after insert or update or delete on routes
  for each row execute function svc_routing_notify_route();
