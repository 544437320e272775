-- Money back from a sub-account to its operator (transfer back, closing a sub-account): the
-- reverse of ledger_transfer, from the sub-account's available balance (open holds stay covered).
create function ledger_transfer_back(p_key text, p_sub uuid, p_operator uuid, p_amount numeric, p_reference text, p_at timestamptz)
returns jsonb
language plpgsql as $$
declare
  c record;
  v_from bigint;
  v_to bigint;
  a ledger_accounts;
  v_after numeric;
  v_to_after numeric;
begin
  perform ledger_amount(p_amount, 'amount');
  select * into c from ledger_claim(p_key, 'transfer');
  if c.o_result is not null then return c.o_result; end if;
  if not exists (select 1 from accounts where id = p_sub and parent_id = p_operator) then
    raise exception using errcode = 'SVC03', message = 'Unknown sub-account: transfers back go from a sub-account to its own operator';
  end if;
  v_from := ledger_acct(p_sub, 'customer');
  v_to := ledger_acct(p_operator, 'customer');
  perform ledger_lock(array[v_from, v_to]);
  select * into a from ledger_accounts where id = v_from;
  -- Only the sub-account's own money: its credit limit is the operator's, not something to move.
  if a.balance - a.held < p_amount then perform ledger_insufficient(a, p_amount); end if;
  v_after := ledger_entry(c.o_id, v_from, 'transfer', -p_amount, p_at, p_reference, 'account', p_operator::text);
  v_to_after := ledger_entry(c.o_id, v_to, 'credit', p_amount, p_at, p_reference, 'sub_account', p_sub::text);
  return ledger_finish(c.o_id, p_key, jsonb_build_object('type', 'transfer', 'accountId', p_sub, 'toAccountId', p_operator,
    'amount', ledger_money(p_amount), 'balanceAfter', ledger_money(v_after), 'toBalanceAfter', ledger_money(v_to_after)));
end $$;
