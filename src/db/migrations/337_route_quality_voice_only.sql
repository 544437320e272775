-- Route quality counts voice legs only (route_quality_legs keeps kind = 'voice', not probes, not
-- simulated, with a route), but its statement trigger built an array of every inserted CDR and
-- ran the two upserts for each batch of SMS CDRs too, where they had nothing to count: about
-- 15 us of backend time per message in bench/sms/rest-e2e (pg_stat_statements). A batch with no
-- such leg now leaves after one scan of its transition table. Same counts for every batch.
-- The transition tables are scanned inside the tg_op branches: one that the statement lacks
-- cannot even be named.
create or replace function route_quality_on_cdrs() returns trigger language plpgsql as $$
begin
  if tg_op in ('UPDATE', 'DELETE') then
    if exists (select 1 from old_cdrs o
               where o.kind = 'voice' and not o.is_probe and not o.simulated and o.route_id is not null) then
      perform route_quality_legs(array(select o::cdrs from old_cdrs o), -1);
    end if;
  end if;
  if tg_op in ('INSERT', 'UPDATE') then
    if exists (select 1 from new_cdrs n
               where n.kind = 'voice' and not n.is_probe and not n.simulated and n.route_id is not null) then
      perform route_quality_legs(array(select n::cdrs from new_cdrs n), 1);
    end if;
  end if;
  return null;
end $$;
