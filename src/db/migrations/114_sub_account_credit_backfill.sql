-- Credit limits given to sub-accounts before 113 were backed by nothing. Each is now held on its
-- operator's balance as far as the operator's own money (balance − holds) covers it, oldest
-- sub-account first, and lowered to what is held. A limit is never lowered below what the
-- sub-account already uses: a debt made before this migration keeps its limit, held as far as
-- the operator can, so the sub-account can spend nothing more on credit.
do $$
declare
  s record;
  p ledger_accounts;
  v_used numeric;
  v_backed numeric;
  v_limit numeric;
begin
  for s in
    select l.id, l.owner_id, l.kind, l.balance, l.held, l.credit_limit, a.parent_id
      from ledger_accounts l join accounts a on a.id = l.owner_id
     where a.parent_id is not null and l.kind in ('customer', 'test_credit') and l.credit_limit > 0.0
     order by l.id
  loop
    select * into p from ledger_accounts where owner_id = s.parent_id and kind = s.kind for update;
    v_used := greatest(s.held - s.balance, 0.0);
    v_backed := least(s.credit_limit, greatest(p.balance - p.held, 0.0));
    v_limit := greatest(v_backed, v_used);
    if v_backed > 0.0 then
      insert into holds (id, posting_key, account_id, owner_id, amount, status, expires_at,
                         reference, related_entity_type, related_entity_id, created_at)
      values (ledger_uuid_v7(), 'sub-credit-limit:' || s.owner_id::text || ':' || gen_random_uuid()::text, p.id, s.parent_id,
              v_backed, 'open', 'infinity', 'sub-account credit limit', 'sub_account_credit_limit', s.owner_id::text, now());
      update ledger_accounts set held = held + v_backed, updated_at = now() where id = p.id;
    end if;
    if v_limit <> s.credit_limit then
      update ledger_accounts set credit_limit = v_limit, updated_at = now() where id = s.id;
      if s.kind = 'customer' then
        update sub_accounts set credit_limit = v_limit, updated_at = now() where account_id = s.owner_id;
      end if;
    end if;
    if v_limit > v_backed then
      raise notice 'sub-account % owes % more than its operator can back', s.owner_id, v_limit - v_backed;
    end if;
  end loop;
end $$;
