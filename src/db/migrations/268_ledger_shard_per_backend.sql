-- Platform account shards owned by one backend each (issue 26). Since 010 a posting to a sharded
-- platform account updated shard pg_backend_pid() % 16: two backends whose ids share a remainder
-- (with 8 connections, more likely than not) took turns on one shard row, each holding its lock
-- until commit, and the ledger bench showed that wait on the platform-fee update of every charge.
--
-- ledger_shard() gives a backend a shard no other backend holds, for the life of the session: a
-- session advisory lock (key pair 7261905, shard) claims it, starting from the old remainder and
-- moving up; the choice is kept in the session setting ledger.shard. A setting made in a
-- transaction that rolls back is undone, so on a miss the backend first looks for the shard it
-- already holds (pg_locks) before claiming another. With more than 16 backends the ones left over
-- share their remainder's shard as before: correct, only slower. Which shard a posting lands on
-- never matters to the money (a platform balance is the sum of its shards).
-- Declared stable so a statement's comparison with it is an index condition evaluated once; it
-- returns the same value for the whole session.
create function ledger_shard() returns integer
language plpgsql stable as $$
declare
  v text := current_setting('ledger.shard', true);
  s integer;
  base integer;
begin
  if v is not null and v <> '' then
    return v::integer;
  end if;
  select l.objid::integer into s from pg_locks l
   where l.locktype = 'advisory' and l.pid = pg_backend_pid() and l.classid = 7261905 and l.objsubid = 2
   limit 1;
  if s is null then
    base := pg_backend_pid() % 16;
    for i in 0 .. 15 loop
      if pg_try_advisory_lock(7261905, (base + i) % 16) then
        s := (base + i) % 16;
        exit;
      end if;
    end loop;
    s := coalesce(s, base);
  end if;
  perform set_config('ledger.shard', s::text, false);
  return s;
end $$;

-- Every ledger function that picked its shard by remainder picks it with ledger_shard(), the rest
-- of each function unchanged: its definition as stored, with the one expression replaced.
do $$
declare
  f oid;
begin
  for f in
    select p.oid from pg_proc p
     where p.pronamespace = current_schema()::regnamespace and p.proname <> 'ledger_shard'
       and p.prosrc like '%pg_backend_pid() \% 16%'
  loop
    execute replace(pg_get_functiondef(f), 'pg_backend_pid() % 16', 'ledger_shard()');
  end loop;
end $$;
