-- A daily spend cap reached by a call's settlement no longer refuses the same call's markup
-- charge (posted right after it, in the same transaction): the whole settlement was rolled back and
-- the call left unbilled. Same signature and body as in 010 apart from the cap check.

create or replace function ledger_charge(
  p_key text, p_buyer uuid, p_seller uuid, p_amount numeric, p_fee numeric, p_test boolean,
  p_reference text, p_related_type text, p_related_id text, p_call_id text, p_at timestamptz
) returns jsonb
language plpgsql as $$
declare
  c record;
  v_buyer bigint;
  v_seller bigint;
  b ledger_accounts;
  v_total numeric;
  v_after numeric;
  v_capped boolean := false;
begin
  perform ledger_amount(p_amount, 'amount', true);
  perform ledger_amount(coalesce(p_fee, 0), 'fee', true);
  v_total := p_amount + coalesce(p_fee, 0);
  if v_total <= 0 then
    raise exception using errcode = 'SVC02', message = 'Invalid amount: a charge must be greater than zero';
  end if;
  select * into c from ledger_claim(p_key, 'charge');
  if c.o_result is not null then return c.o_result; end if;
  v_buyer := ledger_acct(p_buyer, case when p_test then 'test_credit' else 'customer' end);
  if not p_test and p_seller is not null then
    v_seller := ledger_acct(p_seller, 'seller_payable');
  end if;
  perform ledger_lock(array[v_buyer, v_seller]);
  select * into b from ledger_accounts where id = v_buyer;
  -- The rest of a call admitted before the cap was reached (a reseller's markup after the settle
  -- that reached it) is still owed: the cap stops new spending, not the billing of that call.
  if not p_test and not (p_call_id is not null and exists (
        select 1 from holds h where h.account_id = v_buyer and h.call_id = p_call_id and h.status = 'settled')) then
    perform ledger_cap_check(b, p_at);
  end if;
  if ledger_available(b) < v_total then perform ledger_insufficient(b, v_total); end if;
  b := ledger_post_charge(c.o_id, v_buyer, v_seller, p_test, p_amount, coalesce(p_fee, 0), p_at,
                          p_reference, p_related_type, p_related_id, p_call_id);
  v_after := b.balance;
  if not p_test then v_capped := ledger_cap_reached(b, p_at); end if;
  return ledger_finish(c.o_id, p_key, jsonb_build_object('type', 'charge', 'accountId', p_buyer, 'mode', case when p_test then 'test' else 'live' end,
    'amount', ledger_money(p_amount), 'fee', ledger_money(coalesce(p_fee, 0)), 'total', ledger_money(v_total),
    'balanceAfter', ledger_money(v_after), 'balanceBefore', ledger_money(v_after + v_total), 'capReached', v_capped));
end $$;


