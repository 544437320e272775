-- Which ledger account kinds are the platform's (no owner) is data, not a list inside the owner rule:
-- 018 wrote the list into `ledger_accounts_owner_rule()` and 227 had to redefine the function to add
-- `revshare_receivable`, so every later platform kind meant another copy of the whole list. Now a
-- migration adding a platform kind inserts its row here (beside extending `ledger_account_kind`),
-- before it creates the account. Seeded from 227's list and from every ownerless account that exists,
-- so no kind in use loses its standing.
create table ledger_platform_kinds (
  kind ledger_account_kind primary key
);

insert into ledger_platform_kinds (kind)
select k from unnest('{platform_revenue,platform_fee,topup_clearing,test_credit_pool,chargebacks,revshare_receivable}'::text[]) as k
union
select distinct kind from ledger_accounts where owner_id is null;

create or replace function ledger_accounts_owner_rule() returns trigger
language plpgsql as $$
begin
  if (new.owner_id is null) is distinct from exists (select 1 from ledger_platform_kinds p where p.kind = new.kind) then
    raise exception using errcode = 'check_violation', table = 'ledger_accounts', constraint = 'ledger_accounts_owner_rule',
      message = format('ledger account of kind %s: platform accounts have no owner, all others one', new.kind);
  end if;
  return new;
end $$;
