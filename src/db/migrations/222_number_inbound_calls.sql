-- Inbound calls on rented numbers (issue 22): every trunk INVITE asks whether its digits are a
-- number the calling seller rented out, so the look-up by number must be an index read.
create index dids_number_live_idx on dids (number) where status in ('active', 'suspended');
