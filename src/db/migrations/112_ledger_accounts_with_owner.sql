-- An account's ledger rows (customer, test credit, seller payable) are made with the account,
-- not on first use.
--
-- Made on first use (ledger_acct), a row was inserted by a posting that could already hold other
-- rows' locks, and a second posting needing the same owner waited on that uncommitted insert
-- while holding locks of its own: a wait outside the ascending-id order every function keeps.
-- test/ledger/randomized.test.ts deadlocked so, about one run in four: a transfer inserting a
-- sub-account's first row and then locking its parent, a charge holding the parent's row and
-- waiting on a seller's, a charge holding that seller's row and waiting on the sub-account's
-- insert; and two charges each inserting a row the other then inserted too.
--
-- A row made in the account's own transaction is there before anyone else can post to the
-- account (its owner is not visible until then), so postings only ever lock rows. ledger_acct's
-- insert stays for a row that is still missing, which no longer happens after this migration.

create function ledger_accounts_for_owner() returns trigger
language plpgsql as $$
begin
  insert into ledger_accounts (owner_id, kind)
  select new.id, k from unnest('{customer,test_credit,seller_payable}'::text[]) k
  on conflict do nothing;
  return null;
end $$;

create trigger accounts_ledger_rows after insert on accounts
  for each row execute function ledger_accounts_for_owner();

-- The accounts made before this migration.
insert into ledger_accounts (owner_id, kind)
select a.id, k.k
  from accounts a cross join unnest('{customer,test_credit,seller_payable}'::text[]) as k(k)
 order by a.id, k.k
on conflict do nothing;
