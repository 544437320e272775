-- A whitelisted source address bills every unauthenticated call from it, so an address another
-- account already holds is not simply given to whoever asks first (nor refused so that the first
-- to ask keeps it): a second claim waits, pending, for the operator (svcctl trunk-ip approve |
-- reject). Only approved claims attribute calls; one approved claim per address.
alter table trunk_ips add column status text not null default 'approved'
  constraint trunk_ips_status_check check (status in ('approved', 'pending'));
alter table trunk_ips drop constraint trunk_ips_ip_key;
create unique index trunk_ips_approved_ip_idx on trunk_ips (ip) where status = 'approved';
create unique index trunk_ips_account_ip_idx on trunk_ips (account_id, ip);
create index trunk_ips_pending_idx on trunk_ips (id) where status = 'pending';
