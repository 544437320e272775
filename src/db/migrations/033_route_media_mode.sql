-- How a voice route's audio flows (spec: trunk mediaMode). direct: the SDP of the two ends passes
-- through and RTP goes end to end; proxy: the exchange rewrites the SDP and relays the RTP
-- through its media plane (the supplier sees only the exchange's address; dead media is detected).
alter table routes add column media_mode text not null default 'direct' check (media_mode in ('direct', 'proxy'));
