-- An inbound kind of Switch sell rate (docs/switch.md "Inbound sell rates"): what a customer pays per
-- minute for calls to the numbers it rents, by prefix of the called number. Billing those minutes by
-- an outbound voice row would charge the wrong rate, so inbound rows are a kind of their own.
alter table switch_sell_rates drop constraint switch_sell_rates_kind_check;
alter table switch_sell_rates add constraint switch_sell_rates_kind_check check (kind in ('voice', 'sms', 'inbound'));
