-- Settlement in fewer statements, as 013 did for charges: a settle ran about eleven statements and
-- moved the payer's row twice (the hold's release, then the charge), every SMS and call pays one,
-- and bench/ledger measured hold+settle pairs at a third of a charge's rate. Same entries, order,
-- balanceAfter, results and SQLSTATEs as 010's settle.

-- The charge's update also gives back the settled hold (`p_release`), so the payer's row moves
-- once. A default keeps 013's callers as they are; the old signature goes so calls stay unambiguous.
drop function ledger_post_charge(uuid, bigint, bigint, boolean, numeric, numeric, timestamptz, text, text, text, text);

create function ledger_post_charge(
  p_posting uuid, p_buyer_acct bigint, p_seller_acct bigint, p_test boolean, p_amount numeric, p_fee numeric,
  p_at timestamptz, p_reference text, p_related_type text, p_related_id text, p_call_id text,
  p_release numeric default 0
) returns ledger_accounts
language plpgsql as $$
declare
  d date := (p_at at time zone 'UTC')::date;
  v_total numeric := p_amount + p_fee;
  v_seller bigint := case when p_amount > 0 and not p_test then p_seller_acct end;
  v_to_kind text := case when p_test then 'test_credit_pool' else 'platform_revenue' end;
  v_fee_kind text := case when p_test then 'test_credit_pool' else 'platform_fee' end;
  v_to bigint;
  v_fee_acct bigint;
  v_shard integer := pg_backend_pid() % 16;
  b ledger_accounts;
  s ledger_accounts;
  r ledger_accounts;
begin
  for r in
    update ledger_accounts
       set balance = balance + case when id = p_buyer_acct then -v_total else p_amount end,
           held = held - case when id = p_buyer_acct then p_release else 0 end,
           updated_at = p_at,
           spend_today = case when id <> p_buyer_acct or p_test then spend_today
                              when spend_day = d then spend_today + v_total else v_total end,
           spend_day = case when id <> p_buyer_acct or p_test then spend_day else d end
     where id = any(array[p_buyer_acct, v_seller])
    returning *
  loop
    if r.id = p_buyer_acct then b := r; else s := r; end if;
  end loop;
  if p_amount > 0 and s.id is null then v_to := ledger_platform(v_to_kind); end if;
  if p_fee > 0 then v_fee_acct := ledger_platform(v_fee_kind); end if;
  if v_to = v_fee_acct then
    update ledger_account_shards set balance = balance + v_total where account_id = v_to and shard = v_shard;
  else
    if v_to is not null then
      update ledger_account_shards set balance = balance + p_amount where account_id = v_to and shard = v_shard;
    end if;
    if v_fee_acct is not null then
      update ledger_account_shards set balance = balance + p_fee where account_id = v_fee_acct and shard = v_shard;
    end if;
  end if;
  -- Rows in this order (seq): buyer charge, seller credit or platform, buyer fee, platform fee.
  insert into entries (id, posting_id, account_id, owner_id, account_kind, type, amount, balance_after,
                       reference, related_entity_type, related_entity_id, call_id, created_at)
  select ledger_uuid_v7(), p_posting, x.acct, x.owner, x.kind, x.type, x.amount, x.after,
         p_reference, p_related_type, p_related_id, p_call_id, p_at
  from (values
    (p_buyer_acct, b.owner_id, b.kind, 'charge', -p_amount, b.balance + p_fee),
    (coalesce(s.id, v_to), s.owner_id, coalesce(s.kind, v_to_kind), case when s.id is null then 'charge' else 'credit' end, p_amount, s.balance),
    (p_buyer_acct, b.owner_id, b.kind, 'platform_fee', -p_fee, b.balance),
    (v_fee_acct, null::uuid, v_fee_kind, 'platform_fee', p_fee, null::numeric)
  ) as x(acct, owner, kind, type, amount, after)
  where x.amount <> 0;
  return b;
end $$;

create or replace function ledger_settle(
  p_key text, p_hold uuid, p_seller uuid, p_amount numeric, p_fee numeric,
  p_reference text, p_related_type text, p_related_id text, p_call_id text, p_at timestamptz
) returns jsonb
language plpgsql as $$
declare
  c record;
  h holds;
  a ledger_accounts;
  r ledger_accounts;
  v_seller bigint;
  v_test boolean;
  v_fee numeric := coalesce(p_fee, 0);
  v_total numeric;
  v_capped boolean := false;
begin
  perform ledger_amount(p_amount, 'amount', true);
  perform ledger_amount(v_fee, 'fee', true);
  v_total := p_amount + v_fee;
  select * into c from ledger_claim(p_key, 'settle');
  if c.o_result is not null then return c.o_result; end if;
  h := ledger_open_hold(p_hold);
  -- Payer and seller found and locked in one statement, in ascending id (ledger_lock's order).
  -- A test payer pays no seller: its seller row, if locked here, is simply not used.
  for r in
    select * from ledger_accounts x
     where x.id = h.account_id or (v_total > 0 and x.owner_id = p_seller and x.kind = 'seller_payable')
     order by x.id
       for update
  loop
    if r.id = h.account_id then a := r; else v_seller := r.id; end if;
  end loop;
  v_test := a.kind = 'test_credit';
  if v_test or v_total = 0 then v_seller := null; end if;
  -- A seller's first sale (its payable row to create) or an unknown seller (SVC03 from ledger_acct).
  if not v_test and p_seller is not null and v_total > 0 and v_seller is null then
    v_seller := ledger_acct(p_seller, 'seller_payable');
    perform ledger_lock(array[v_seller]);
  end if;
  update holds set status = 'settled', closed_at = p_at, settled_amount = v_total where id = h.id;
  if v_total > 0 then
    a.held := a.held - h.amount;
    if ledger_available(a) < v_total then perform ledger_insufficient(a, v_total); end if;
    a := ledger_post_charge(c.o_id, h.account_id, v_seller, v_test, p_amount, v_fee, p_at,
                            coalesce(p_reference, h.reference), coalesce(p_related_type, h.related_entity_type),
                            coalesce(p_related_id, h.related_entity_id), coalesce(p_call_id, h.call_id), h.amount);
    if not v_test and a.daily_spend_cap > 0 then v_capped := ledger_cap_reached(a, p_at); end if;
  else
    update ledger_accounts set held = held - h.amount where id = h.account_id returning * into a;
  end if;
  return ledger_finish(c.o_id, p_key, jsonb_build_object('type', 'settle', 'holdId', h.id, 'accountId', h.owner_id,
    'mode', case when v_test then 'test' else 'live' end, 'amount', ledger_money(p_amount), 'fee', ledger_money(v_fee),
    'total', ledger_money(v_total), 'released', ledger_money(greatest(h.amount - v_total, 0)),
    'balanceAfter', ledger_money(a.balance), 'balanceBefore', ledger_money(a.balance + v_total), 'capReached', v_capped));
end $$;
