-- The lengths of an account's do-not-call prefixes, read by a skip scan of at most 16 probes: a
-- batch check looks each number up whole and cut at those lengths only, not at every length.
create index dnc_entries_prefix_len_idx on dnc_entries (account_id, length(value)) where kind = 'prefix';
