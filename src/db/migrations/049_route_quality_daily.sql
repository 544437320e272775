-- Measured route quality at volume (issue 4): per-route, per-UTC-day aggregates of real buyer
-- voice legs, kept by triggers on cdrs in the same transaction as the CDR write, so quality reads
-- and the `measured_*` listing sorts read a few rows per route-day instead of scanning CDRs.
-- Numbered after 040 (not in the marketplace's 030-039 range) because it attaches to cdrs,
-- which 040_calls.sql creates: a 03x migration runs before that table exists on a new database.
-- 049, the end of the calls range, so the calls work keeps 041 onwards free.

-- One row per route, day and buyer: distinct buyers over a window need the buyer kept apart.
create table route_quality_daily (
  route_id uuid not null,
  day date not null,
  account_id uuid not null,
  calls integer not null,
  answered integer not null,
  effective integer not null,
  answered_seconds bigint not null,
  primary key (route_id, day, account_id)
);

-- Post-dial delay counts per route, day and value, so a window's median stays exact
-- (percentile_cont over the union of the days' values).
create table route_pdd_daily (
  route_id uuid not null,
  day date not null,
  pdd_ms integer not null,
  calls integer not null,
  primary key (route_id, day, pdd_ms)
);

-- Which legs count and how, exactly as the CDR quality query in src/modules/routes/quality.ts:
-- answered is a 2xx final answer; network-effective adds busy, no answer and declined.
create function route_quality_legs(rows_in cdrs[], sign integer)
returns void language plpgsql as $$
begin
  with legs as (
    select c.route_id, (c.created_at at time zone 'UTC')::date as day, c.account_id, c.pdd_ms,
      coalesce(c.status in ('answered', 'completed') or c.sip_code between 200 and 299, false) as answered,
      coalesce(c.status in ('answered', 'completed', 'busy', 'no_answer', 'declined')
        or c.sip_code between 200 and 299 or c.sip_code in (486, 487, 600, 603), false) as effective,
      coalesce(c.duration_seconds, 0) as seconds
    from unnest(rows_in) as c
    where c.kind = 'voice' and not c.is_probe and not c.simulated and c.route_id is not null
  ), q as (
    insert into route_quality_daily as t (route_id, day, account_id, calls, answered, effective, answered_seconds)
    select route_id, day, account_id, sign * count(*), sign * count(*) filter (where answered),
      sign * count(*) filter (where effective), sign * coalesce(sum(seconds) filter (where answered), 0)
    from legs group by route_id, day, account_id
    -- One order for every writer, so concurrent CDR batches lock the same rows in the same order.
    order by route_id, day, account_id
    on conflict (route_id, day, account_id) do update set
      calls = t.calls + excluded.calls, answered = t.answered + excluded.answered,
      effective = t.effective + excluded.effective, answered_seconds = t.answered_seconds + excluded.answered_seconds
    returning 1
  )
  insert into route_pdd_daily as t (route_id, day, pdd_ms, calls)
  select route_id, day, pdd_ms, sign * count(*)
  from legs where pdd_ms is not null
  group by route_id, day, pdd_ms
  order by route_id, day, pdd_ms
  on conflict (route_id, day, pdd_ms) do update set calls = t.calls + excluded.calls;
  if sign < 0 then
    delete from route_quality_daily t using (select distinct c.route_id, (c.created_at at time zone 'UTC')::date as day from unnest(rows_in) c) k
      where t.route_id = k.route_id and t.day = k.day and t.calls <= 0;
    delete from route_pdd_daily t using (select distinct c.route_id, (c.created_at at time zone 'UTC')::date as day from unnest(rows_in) c) k
      where t.route_id = k.route_id and t.day = k.day and t.calls <= 0;
  end if;
end $$;

create function route_quality_on_cdrs() returns trigger language plpgsql as $$
begin
  if tg_op in ('UPDATE', 'DELETE') then
    perform route_quality_legs(array(select o::cdrs from old_cdrs o), -1);
  end if;
  if tg_op in ('INSERT', 'UPDATE') then
    perform route_quality_legs(array(select n::cdrs from new_cdrs n), 1);
  end if;
  return null;
end $$;

create trigger cdrs_route_quality_insert after insert on cdrs
  referencing new table as new_cdrs for each statement execute function route_quality_on_cdrs();
create trigger cdrs_route_quality_update after update on cdrs
  referencing old table as old_cdrs new table as new_cdrs for each statement execute function route_quality_on_cdrs();
create trigger cdrs_route_quality_delete after delete on cdrs
  referencing old table as old_cdrs for each statement execute function route_quality_on_cdrs();

create function route_quality_on_cdrs_truncate() returns trigger language plpgsql as $$
begin
  truncate route_quality_daily, route_pdd_daily;
  return null;
end $$;
create trigger cdrs_route_quality_truncate after truncate on cdrs
  for each statement execute function route_quality_on_cdrs_truncate();

-- CDRs written before this migration.
select route_quality_legs(array(select c from cdrs c), 1);
