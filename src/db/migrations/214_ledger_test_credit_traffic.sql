-- Real traffic paid with test credit (issue 21: route checks and test messages, spec "Route checks",
-- billing "test credit first, then balance").
--
-- Test credit is the platform's grant (ledger_grant_test_credit: test_credit_pool → the account's
-- test_credit). A test key's charge (ledger_charge with p_test) only hands it back to the pool: no
-- real call was carried. A route check's call is real: its seller carried it and is owed its rate.
-- Booking that part as a test-mode charge left the seller unpaid and counted nothing as the
-- platform's cost; booking it as a live charge would have made revenue out of the platform's own
-- grant. This posting does what happened:
--   1. the account's test credit pays the whole amount        (test_credit       −amount, 'charge')
--   2. the grant returns to the pool                           (test_credit_pool  +amount, 'charge')
--   3. the platform pays the seller's part out of its revenue  (platform_revenue  −seller, 'credit')
--   4. the seller is owed its part                             (seller_payable    +seller, 'credit')
-- so the entries sum to zero, the platform earns nothing from its own grant and bears the
-- carried traffic's cost. ledger_refund reverses it entry by entry like any charge.
create function ledger_charge_test_credit(
  p_key text, p_buyer uuid, p_seller uuid, p_amount numeric, p_seller_amount numeric,
  p_reference text, p_related_type text, p_related_id text, p_at timestamptz
) returns jsonb
language plpgsql as $$
declare
  c record;
  b ledger_accounts;
  v_buyer bigint;
  v_seller bigint;
  v_seller_amount numeric := coalesce(p_seller_amount, 0);
  v_after numeric;
begin
  perform ledger_amount(p_amount, 'amount');
  perform ledger_amount(v_seller_amount, 'sellerAmount', true);
  if v_seller_amount > p_amount then
    raise exception using errcode = 'SVC02', message = 'Invalid amount: the seller part exceeds the amount';
  end if;
  if v_seller_amount > 0 and p_seller is null then
    raise exception using errcode = 'SVC02', message = 'Invalid amount: a seller part needs a seller';
  end if;
  select * into c from ledger_claim(p_key, 'charge');
  if c.o_result is not null then return c.o_result; end if;
  v_buyer := ledger_acct(p_buyer, 'test_credit');
  if v_seller_amount > 0 then v_seller := ledger_acct(p_seller, 'seller_payable'); end if;
  perform ledger_lock(array[v_buyer, v_seller]);
  select * into b from ledger_accounts where id = v_buyer;
  if ledger_available(b) < p_amount then perform ledger_insufficient(b, p_amount); end if;
  v_after := ledger_entry(c.o_id, v_buyer, 'charge', -p_amount, p_at, p_reference, p_related_type, p_related_id);
  perform ledger_entry(c.o_id, ledger_platform('test_credit_pool'), 'charge', p_amount, p_at, p_reference,
                       p_related_type, p_related_id);
  if v_seller_amount > 0 then
    perform ledger_entry(c.o_id, ledger_platform('platform_revenue'), 'credit', -v_seller_amount, p_at, p_reference,
                         p_related_type, p_related_id);
    perform ledger_entry(c.o_id, v_seller, 'credit', v_seller_amount, p_at, p_reference, p_related_type, p_related_id);
  end if;
  return ledger_finish(c.o_id, p_key, jsonb_build_object('type', 'charge', 'accountId', p_buyer, 'mode', 'test',
    'amount', ledger_money(p_amount), 'fee', ledger_money(0), 'total', ledger_money(p_amount),
    'sellerAmount', ledger_money(v_seller_amount),
    'balanceAfter', ledger_money(v_after), 'balanceBefore', ledger_money(v_after + p_amount), 'capReached', false));
end $$;
