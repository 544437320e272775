-- One shared step for the ledger's two-entry postings between two accounts. ledger_transfer (010)
-- and its copy ledger_transfer_back (252), and ledger_chargeback, ledger_payout,
-- ledger_grant_test_credit (010) with their copy ledger_card_chargeback_won (250), each spelt out
-- the same claim, lock, balance check and pair of entries; they are redefined here on
-- ledger_move (the two transfers on one function for both directions), with the same
-- signatures, results and refusals.

-- p_amount leaves ledger account p_from (an entry of type p_from_type) and enters p_to (p_to_type),
-- once per posting key. p_check is what p_from must cover: 'available' (balance + credit limit −
-- holds), 'own' (balance − holds: its own money, never its credit limit) or 'none'. When the key
-- was used before, o_replay is the first result and nothing is posted; else the caller finishes
-- posting o_id with its result (ledger_finish), using the balances after (null on a sharded account).
create function ledger_move(
  p_key text, p_type text, p_from bigint, p_to bigint, p_amount numeric, p_check text,
  p_at timestamptz, p_reference text,
  p_from_type text, p_from_rel_type text, p_from_rel_id text,
  p_to_type text, p_to_rel_type text, p_to_rel_id text,
  out o_id uuid, out o_replay jsonb, out o_from_after numeric, out o_to_after numeric
)
language plpgsql as $$
declare
  c record;
  a ledger_accounts;
begin
  perform ledger_amount(p_amount, 'amount');
  if p_check is null or p_check not in ('available', 'own', 'none') then
    raise exception using errcode = 'SVC02', message = 'Invalid balance check: available, own or none';
  end if;
  select * into c from ledger_claim(p_key, p_type);
  o_id := c.o_id;
  if c.o_result is not null then
    o_replay := c.o_result;
    return;
  end if;
  perform ledger_lock(array[p_from, p_to]);
  if p_check <> 'none' then
    select * into a from ledger_accounts where id = p_from;
    if (case p_check when 'own' then a.balance - a.held else ledger_available(a) end) < p_amount then
      perform ledger_insufficient(a, p_amount);
    end if;
  end if;
  o_from_after := ledger_entry(o_id, p_from, p_from_type, -p_amount, p_at, p_reference, p_from_rel_type, p_from_rel_id);
  o_to_after := ledger_entry(o_id, p_to, p_to_type, p_amount, p_at, p_reference, p_to_rel_type, p_to_rel_id);
end $$;

-- Money between an operator and one of its sub-accounts, either way: the payer's entry is a
-- `transfer` naming the payee, the payee's a `credit` naming the payer. From the operator
-- (p_back false) its available balance pays; back from the sub-account, only its own money:
-- its credit limit is the operator's, not something to move.
create function ledger_sub_transfer(p_key text, p_operator uuid, p_sub uuid, p_back boolean, p_amount numeric,
                                    p_reference text, p_at timestamptz)
returns jsonb
language plpgsql as $$
declare
  m record;
  v_from uuid := case when p_back then p_sub else p_operator end;
  v_to uuid := case when p_back then p_operator else p_sub end;
begin
  if not exists (select 1 from accounts where id = p_sub and parent_id = p_operator) then
    raise exception using errcode = 'SVC03', message = case when p_back
      then 'Unknown sub-account: transfers back go from a sub-account to its own operator'
      else 'Unknown sub-account: transfers go from an operator to its own sub-account' end;
  end if;
  select * into m from ledger_move(p_key, 'transfer', ledger_acct(v_from, 'customer'), ledger_acct(v_to, 'customer'), p_amount,
    case when p_back then 'own' else 'available' end, p_at, p_reference,
    'transfer', case when p_back then 'account' else 'sub_account' end, v_to::text,
    'credit', case when p_back then 'sub_account' else 'account' end, v_from::text);
  if m.o_replay is not null then return m.o_replay; end if;
  return ledger_finish(m.o_id, p_key, jsonb_build_object('type', 'transfer', 'accountId', v_from, 'toAccountId', v_to,
    'amount', ledger_money(p_amount), 'balanceAfter', ledger_money(m.o_from_after), 'toBalanceAfter', ledger_money(m.o_to_after)));
end $$;

-- Operator to one of its sub-accounts: operator -amount (transfer), sub-account +amount (credit).
create or replace function ledger_transfer(p_key text, p_from uuid, p_to uuid, p_amount numeric, p_reference text, p_at timestamptz)
returns jsonb
language plpgsql as $$
begin
  return ledger_sub_transfer(p_key, p_from, p_to, false, p_amount, p_reference, p_at);
end $$;

-- Money back from a sub-account to its operator (transfer back, closing a sub-account).
create or replace function ledger_transfer_back(p_key text, p_sub uuid, p_operator uuid, p_amount numeric, p_reference text, p_at timestamptz)
returns jsonb
language plpgsql as $$
begin
  return ledger_sub_transfer(p_key, p_operator, p_sub, true, p_amount, p_reference, p_at);
end $$;

-- A posting between an owner's account and a platform account, both entries of p_type and
-- related to p_related_type: the owner pays (p_owner_pays) or is paid; the result names the owner
-- and the owner's balance after.
create function ledger_owner_move(p_key text, p_type text, p_owner uuid, p_owner_acct bigint, p_platform_acct bigint,
                                  p_owner_pays boolean, p_amount numeric, p_check text, p_related_type text,
                                  p_reference text, p_at timestamptz)
returns jsonb
language plpgsql as $$
declare m record;
begin
  select * into m from ledger_move(p_key, p_type,
    case when p_owner_pays then p_owner_acct else p_platform_acct end,
    case when p_owner_pays then p_platform_acct else p_owner_acct end,
    p_amount, p_check, p_at, p_reference, p_type, p_related_type, null, p_type, p_related_type, null);
  if m.o_replay is not null then return m.o_replay; end if;
  return ledger_finish(m.o_id, p_key, jsonb_build_object('type', p_type, 'accountId', p_owner, 'amount', ledger_money(p_amount),
    'balanceAfter', ledger_money(case when p_owner_pays then m.o_from_after else m.o_to_after end)));
end $$;

-- Test credit (invite code redemption): test-credit account +amount, test-credit pool -amount.
create or replace function ledger_grant_test_credit(p_key text, p_owner uuid, p_amount numeric, p_reference text, p_at timestamptz)
returns jsonb
language plpgsql as $$
begin
  return ledger_owner_move(p_key, 'test_credit', p_owner, ledger_acct(p_owner, 'test_credit'), ledger_platform('test_credit_pool'),
    false, p_amount, 'none', 'invite_code', p_reference, p_at);
end $$;

-- Card chargeback by an operator: customer -amount, chargebacks account +amount (owed back to the card network).
create or replace function ledger_chargeback(p_key text, p_owner uuid, p_amount numeric, p_reference text, p_at timestamptz)
returns jsonb
language plpgsql as $$
begin
  return ledger_owner_move(p_key, 'chargeback', p_owner, ledger_acct(p_owner, 'customer'), ledger_platform('chargebacks'),
    true, p_amount, 'available', 'topup', p_reference, p_at);
end $$;

-- A dispute the merchant won: the card network returns the money taken by the chargeback.
create or replace function ledger_card_chargeback_won(p_key text, p_owner uuid, p_amount numeric, p_reference text, p_at timestamptz)
returns jsonb
language plpgsql as $$
begin
  return ledger_owner_move(p_key, 'chargeback', p_owner, ledger_acct(p_owner, 'customer'), ledger_platform('chargebacks'),
    false, p_amount, 'none', 'topup', p_reference, p_at);
end $$;

-- Payout of seller earnings: seller payable -amount, top-up clearing +amount (money leaving).
create or replace function ledger_payout(p_key text, p_seller uuid, p_amount numeric, p_reference text, p_at timestamptz)
returns jsonb
language plpgsql as $$
begin
  return ledger_owner_move(p_key, 'payout', p_seller, ledger_acct(p_seller, 'seller_payable'), ledger_platform('topup_clearing'),
    true, p_amount, 'available', 'payout', p_reference, p_at);
end $$;
