-- Origin-based rates (issue 23, "Rate sheets"): a row may price only calls (or messages) from some
-- callers: an A-number prefix, an ISO country, or the EU or EEA region (src/rating/origin.ts). ''
-- is the default row, as '' is for mcc_mnc, so a row is still identified by plain equality.
alter table rate_rows
  add column origin text not null default ''
    check (origin = '' or origin ~ '^(\d{1,15}|[A-Z]{2}|EU|EEA)$');
alter table rate_rows
  add constraint rate_rows_origin_country_only check (origin = '' or mcc_mnc = '');
alter table rate_changes add column origin text not null default '';

-- The live-row index now names the row by prefix, network and origin.
drop index rate_rows_live_idx;
create index rate_rows_live_idx on rate_rows (route_id, prefix, mcc_mnc, origin) where effective_to is null;
