-- Route quality summaries split into slots by writing backend. Every voice CDR of a route, day and
-- buyer added to one row of route_quality_daily (and one per PDD value of route_pdd_daily), so every
-- transaction writing such a CDR held that row's lock until its commit: a dialer campaign's calls,
-- which finish one transaction each on one route and account, queued behind each other on it (49-88 ms
-- of lock wait per call in bench/dialer). Each backend now adds to its own slot (its pid modulo 16),
-- so concurrent writers on different connections no longer wait on each other; readers sum the slots.
alter table route_quality_daily add column slot smallint not null default 0;
alter table route_quality_daily drop constraint route_quality_daily_pkey;
alter table route_quality_daily add primary key (route_id, day, account_id, slot);
alter table route_pdd_daily add column slot smallint not null default 0;
alter table route_pdd_daily drop constraint route_pdd_daily_pkey;
alter table route_pdd_daily add primary key (route_id, day, pdd_ms, slot);

-- Which legs count and how is unchanged (049). A slot's counts can go negative when a CDR counted in
-- another slot is updated or deleted here; only sums over slots mean anything. Removal keeps only
-- row-local conditions (all counts zero), which stay correct when a concurrent writer changes the row.
create or replace function route_quality_legs(rows_in cdrs[], sign integer)
returns void language plpgsql as $$
declare
  my_slot constant smallint := (pg_backend_pid() % 16)::smallint;
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
    insert into route_quality_daily as t (route_id, day, account_id, slot, calls, answered, effective, answered_seconds)
    select route_id, day, account_id, my_slot, sign * count(*), sign * count(*) filter (where answered),
      sign * count(*) filter (where effective), sign * coalesce(sum(seconds) filter (where answered), 0)
    from legs group by route_id, day, account_id
    -- One order for every writer, so concurrent CDR batches lock the same rows in the same order.
    order by route_id, day, account_id
    on conflict (route_id, day, account_id, slot) do update set
      calls = t.calls + excluded.calls, answered = t.answered + excluded.answered,
      effective = t.effective + excluded.effective, answered_seconds = t.answered_seconds + excluded.answered_seconds
    returning 1
  )
  insert into route_pdd_daily as t (route_id, day, pdd_ms, slot, calls)
  select route_id, day, pdd_ms, my_slot, sign * count(*)
  from legs where pdd_ms is not null
  group by route_id, day, pdd_ms
  order by route_id, day, pdd_ms
  on conflict (route_id, day, pdd_ms, slot) do update set calls = t.calls + excluded.calls;
  if sign < 0 then
    delete from route_quality_daily t using (select distinct c.route_id, (c.created_at at time zone 'UTC')::date as day from unnest(rows_in) c) k
      where t.route_id = k.route_id and t.day = k.day
        and t.calls = 0 and t.answered = 0 and t.effective = 0 and t.answered_seconds = 0;
    delete from route_pdd_daily t using (select distinct c.route_id, (c.created_at at time zone 'UTC')::date as day from unnest(rows_in) c) k
      where t.route_id = k.route_id and t.day = k.day and t.calls = 0;
  end if;
end $$;
