-- A call's legs by call group (a rented number's usage: what each of its calls cost, forward legs
-- included). Owned by src/modules/cdrs.
create index if not exists cdrs_call_group_idx on cdrs (call_group_id) where call_group_id is not null;
