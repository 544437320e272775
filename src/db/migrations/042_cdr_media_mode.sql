-- How a trunk call leg's audio flowed (the route's mediaMode when the call was set up): `direct`
-- or `proxy` (relayed by the exchange). Null for SMS and for calls the platform placed itself.
alter table cdrs add column media_mode text check (media_mode in ('direct', 'proxy'));
