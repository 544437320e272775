-- A sub-account's credit limit is backed by its operator: the limit is held on the operator's
-- balance (a hold that never expires), so what a sub-account may owe is always money the
-- operator has and cannot spend elsewhere. An operator and its sub-accounts together never go
-- below zero, and a seller's earnings from a sub-account below zero are paid for.
--
-- Without it a credit limit was free credit: an operator with nothing could give a sub-account
-- any limit up to 10,000,000, the sub-account's traffic went below zero, and the sellers of that
-- traffic (the operator itself, on its own route) were credited earnings nobody paid.
--
-- A sub-account made with a test key is a test sub-account: only test keys, simulated traffic;
-- its credit limit is on test credit and backed by the operator's test credit.

alter table sub_accounts add column test boolean not null default false;

drop function ledger_set_limits(uuid, numeric, numeric, timestamptz);

-- Credit limit and daily spend cap (null or 0: none) of an owner's customer (or, p_kind
-- 'test_credit', test-credit) account. A limit is never lowered below what is spent. A
-- sub-account's limit is held on its operator's account of the same kind: raising it needs the
-- operator's own money (balance − holds; the operator's own credit limit does not back a
-- sub-account), lowering it releases the difference.
create function ledger_set_limits(p_owner uuid, p_credit_limit numeric, p_daily_cap numeric, p_at timestamptz,
                                  p_kind text default 'customer') returns void
language plpgsql as $$
declare
  v_acct bigint;
  v_parent uuid;
  v_parent_acct bigint;
  a ledger_accounts;
  p ledger_accounts;
  v_hold holds;
  v_backed numeric := 0;
  v_new numeric;
begin
  perform ledger_amount(p_credit_limit, 'creditLimit', true);
  if p_daily_cap is not null then perform ledger_amount(p_daily_cap, 'dailySpendCap', true); end if;
  if p_kind is null or p_kind not in ('customer', 'test_credit') then
    raise exception using errcode = 'SVC02', message = 'Invalid limits kind: customer or test_credit';
  end if;
  select parent_id into v_parent from accounts where id = p_owner;
  v_acct := ledger_acct(p_owner, p_kind);
  if v_parent is null then
    perform ledger_lock(array[v_acct]);
  else
    v_parent_acct := ledger_acct(v_parent, p_kind);
    perform ledger_lock(array[v_acct, v_parent_acct]);
  end if;
  select * into a from ledger_accounts where id = v_acct;
  if a.balance + p_credit_limit - a.held < 0 then
    raise exception using errcode = 'SVC01',
      message = 'Insufficient balance: the account already uses more than this credit limit';
  end if;

  if v_parent is not null then
    -- The backing hold: found through the open-hold expiry index (never-expiring holds sort last).
    select * into v_hold from holds
     where status = 'open' and expires_at = 'infinity' and account_id = v_parent_acct
       and related_entity_type = 'sub_account_credit_limit' and related_entity_id = p_owner::text
     for update;
    v_backed := coalesce(v_hold.amount, 0);
    -- A raise is held in full; an unchanged or lower limit keeps its backing up to the limit (a
    -- limit from before this migration may be backed only in part, 114, and stays as it is).
    v_new := case when p_credit_limit > a.credit_limit then p_credit_limit else least(p_credit_limit, v_backed) end;
    if v_new > v_backed then
      select * into p from ledger_accounts where id = v_parent_acct;
      if p.balance - p.held < v_new - v_backed then
        raise exception using errcode = 'SVC01',
          message = format('Insufficient balance: a sub-account''s credit limit is held on the operator''s balance; %s available, %s needed',
                           to_char(greatest(p.balance - p.held, 0), 'FM999999999999990.000000'),
                           to_char(v_new - v_backed, 'FM999999999999990.000000'));
      end if;
    end if;
    if v_new <> v_backed then
      if v_hold.id is not null then
        update holds set status = 'released', closed_at = p_at where id = v_hold.id;
      end if;
      if v_new > 0 then
        insert into holds (id, posting_key, account_id, owner_id, amount, status, expires_at,
                           reference, related_entity_type, related_entity_id, created_at)
        values (ledger_uuid_v7(), 'sub-credit-limit:' || p_owner::text || ':' || gen_random_uuid()::text, v_parent_acct, v_parent,
                v_new, 'open', 'infinity', 'sub-account credit limit', 'sub_account_credit_limit', p_owner::text, p_at);
      end if;
      update ledger_accounts set held = held - v_backed + v_new, updated_at = p_at where id = v_parent_acct;
    end if;
  end if;

  update ledger_accounts set credit_limit = p_credit_limit, daily_spend_cap = nullif(p_daily_cap, 0),
         -- a raised or removed cap lifts today's suspension at once
         cap_suspended_day = case when coalesce(nullif(p_daily_cap, 0), 0) = 0
                                     or (spend_day = cap_suspended_day and spend_today < p_daily_cap)
                                  then null else cap_suspended_day end,
         updated_at = p_at
   where id = v_acct;
end $$;
