-- The entries' posting index (013's BRIN) kept summarized by the daemon, not by autovacuum's
-- work items.
--
-- A BRIN range that is not summarized matches every look-up, so each refund (three look-ups of a
-- charge's entries by posting) reads every page of every such range. With autosummarize,
-- autovacuum summarizes a filled range when it next visits the database (every naptime, a minute
-- by default), from a queue of 256 requests shared by the whole server. At 16 pages a range that
-- is about 3,400 entries a second; bench/ledger and bench/sms write more, and the server logged
-- "request for BRIN range summarization ... was not recorded" for every range past the queue.
-- Those ranges then stayed unsummarized until the next VACUUM of entries (autovacuum's insert
-- threshold: a fifth of the table), so a refund could read a fifth of all entries. Measured on
-- 200,000 entries: a look-up through unsummarized ranges 20.7 ms (3,831 pages), through
-- summarized ones 0.22 ms (16 pages).
--
-- ledger_summarize_entries is called every few seconds ([billing] summarize_seconds) and
-- summarizes the ranges from a block on, the last one too while it fills: the ranges written
-- since its last call. A filling range that is summarized has its summary widened by each later
-- insert into it, a small cost to inserts for the short time until the range is full. The ranges
-- written before this migration are summarized by it, once.

alter index entries_posting_brin set (autosummarize = off);
select brin_summarize_new_values('entries_posting_brin'::regclass);

-- p_from: the block the last call returned; null (a daemon starting) takes the last 64 ranges,
-- which covers what was written while no daemon summarized (the writers are the daemons; a
-- VACUUM of entries summarizes whatever else). Returns the table's size in blocks: the next
-- p_from. lock_timeout: a VACUUM or ANALYZE of entries (which take the same lock, and VACUUM
-- summarizes too) is not waited for; the caller tries again at its next tick from the same block.
create function ledger_summarize_entries(p_from bigint) returns bigint
language plpgsql set lock_timeout = '200ms' as $$
declare
  v_blocks bigint := pg_relation_size('entries') / current_setting('block_size')::bigint;
  v_per_range bigint := coalesce((
    select o.option_value::bigint
      from pg_class c, pg_options_to_table(c.reloptions) o
     where c.oid = 'entries_posting_brin'::regclass and o.option_name = 'pages_per_range'), 128);
  v_from bigint := coalesce(p_from, greatest(v_blocks - 64 * v_per_range, 0));
begin
  perform brin_summarize_range('entries_posting_brin'::regclass, b)
     from generate_series(v_from - v_from % v_per_range, v_blocks - 1, v_per_range) b;
  return v_blocks;
end $$;
