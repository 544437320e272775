-- Revenue share earnings in the ledger (docs/revenue-share.md "Money").
--
-- Two new ledger account kinds:
-- * `revshare_held` (one per holder): earnings credited per answered minute and not yet released;
--   read like a customer account (positive = owed to the holder).
-- * `revshare_receivable` (platform, sharded like the other platform accounts): what suppliers owe
--   the platform for the traffic of their ranges; platform-side sign (negative = owed to us).
--
-- A call:       receivable -charge, holder's held +payout, platform revenue +(charge - payout).
-- A release:    held -amount, holder's seller payable +amount (type transfer: Payouts withdraw it
--               without a second hold period, the revenue share hold already ran).
-- A clawback:   the call's posting reversed (fraud confirmed: the supplier will not pay for it).
-- A supplier payment: receivable +amount, top-up clearing -amount (cash in).

-- The kinds are added to whatever list the domain holds when this runs, so a kind another migration
-- added is kept.
do $$
declare
  v_def text;
  v_kinds text[];
begin
  select pg_get_constraintdef(c.oid) into v_def
  from pg_constraint c join pg_type t on t.oid = c.contypid
  where t.typname = 'ledger_account_kind' and c.contype = 'c';
  v_kinds := string_to_array((regexp_match(v_def, '''\{([^}]*)\}'''))[1], ',');
  if v_kinds is null then
    raise exception 'ledger_account_kind: unexpected constraint %', v_def;
  end if;
  if not 'revshare_held' = any (v_kinds) then v_kinds := array_append(v_kinds, 'revshare_held'); end if;
  if not 'revshare_receivable' = any (v_kinds) then v_kinds := array_append(v_kinds, 'revshare_receivable'); end if;
  execute 'alter domain ledger_account_kind drop constraint ledger_account_kind_check';
  execute format('alter domain ledger_account_kind add constraint ledger_account_kind_check check (value = any (%L::text[]))',
                 '{' || array_to_string(v_kinds, ',') || '}');
end $$;

-- 018's owner rule with the new platform kind.
create or replace function ledger_accounts_owner_rule() returns trigger
language plpgsql as $$
begin
  if (new.owner_id is null) is distinct from (new.kind = any ('{platform_revenue,platform_fee,topup_clearing,test_credit_pool,chargebacks,revshare_receivable}'::text[])) then
    raise exception using errcode = 'check_violation', table = 'ledger_accounts', constraint = 'ledger_accounts_owner_rule',
      message = format('ledger account of kind %s: platform accounts have no owner, all others one', new.kind);
  end if;
  return new;
end $$;

insert into ledger_accounts (owner_id, kind, sharded) values (null, 'revshare_receivable', true);

-- ledger_platform() holds the older platform accounts' ids as constants (013); the receivable is
-- found by its kind (a revenue share posting is one per call, off the charge hot path).
create function ledger_revshare_receivable() returns bigint
language plpgsql stable as $$
begin
  return (select id from ledger_accounts where owner_id is null and kind = 'revshare_receivable');
end $$;
insert into ledger_account_shards (account_id, shard)
select a.id, s from ledger_accounts a cross join generate_series(0, 15) as s where a.kind = 'revshare_receivable';

-- One answered call's earnings: the supplier owes `p_charge`, the holder earns `p_payout` (held),
-- the platform keeps the spread. Idempotent on the key.
create function ledger_revshare_credit(
  p_key text, p_holder uuid, p_charge numeric, p_payout numeric, p_call_id text, p_reference text, p_at timestamptz
) returns jsonb
language plpgsql as $$
declare
  c record;
  v_held bigint;
  v_after numeric;
  v_spread numeric;
begin
  perform ledger_amount(p_charge, 'charge');
  perform ledger_amount(p_payout, 'payout', true);
  v_spread := p_charge - p_payout;
  if v_spread < 0 then
    raise exception using errcode = 'SVC02', message = 'Invalid payout: more than the charge';
  end if;
  select * into c from ledger_claim(p_key, 'credit');
  if c.o_result is not null then return c.o_result; end if;
  perform ledger_entry(c.o_id, ledger_revshare_receivable(), 'credit', -p_charge, p_at, p_reference,
                       'revshare_call', p_call_id, p_call_id);
  if p_payout > 0 then
    v_held := ledger_acct(p_holder, 'revshare_held');
    perform ledger_lock(array[v_held]);
    v_after := ledger_entry(c.o_id, v_held, 'credit', p_payout, p_at, p_reference, 'revshare_call', p_call_id, p_call_id);
  end if;
  if v_spread > 0 then
    perform ledger_entry(c.o_id, ledger_platform('platform_revenue'), 'credit', v_spread, p_at, p_reference,
                         'revshare_call', p_call_id, p_call_id);
  end if;
  return ledger_finish(c.o_id, p_key, jsonb_build_object('type', 'credit', 'accountId', p_holder,
    'charge', ledger_money(p_charge), 'payout', ledger_money(p_payout), 'heldAfter', ledger_money(coalesce(v_after, 0))));
end $$;

-- Held earnings become the holder's payable balance (withdrawable through Payouts).
create function ledger_revshare_release(p_key text, p_holder uuid, p_amount numeric, p_reference text, p_at timestamptz)
returns jsonb
language plpgsql as $$
declare
  c record;
  v_held bigint;
  v_payable bigint;
  v_bal numeric;
  v_after numeric;
begin
  perform ledger_amount(p_amount, 'amount');
  select * into c from ledger_claim(p_key, 'transfer');
  if c.o_result is not null then return c.o_result; end if;
  v_held := ledger_acct(p_holder, 'revshare_held');
  v_payable := ledger_acct(p_holder, 'seller_payable');
  perform ledger_lock(array[v_held, v_payable]);
  select balance into v_bal from ledger_accounts where id = v_held;
  if v_bal < p_amount then
    raise exception using errcode = 'SVC01',
      message = format('Insufficient balance: %s held, %s to release', v_bal::numeric(20, 6), p_amount::numeric(20, 6));
  end if;
  perform ledger_entry(c.o_id, v_held, 'transfer', -p_amount, p_at, p_reference, 'revshare_release');
  v_after := ledger_entry(c.o_id, v_payable, 'transfer', p_amount, p_at, p_reference, 'revshare_release');
  return ledger_finish(c.o_id, p_key, jsonb_build_object('type', 'transfer', 'accountId', p_holder,
    'amount', ledger_money(p_amount), 'balanceAfter', ledger_money(v_after)));
end $$;

-- Fraud confirmed: the calls' postings reversed in one (charge and payout summed over the calls).
create function ledger_revshare_clawback(
  p_key text, p_holder uuid, p_charge numeric, p_payout numeric, p_reference text, p_at timestamptz
) returns jsonb
language plpgsql as $$
declare
  c record;
  v_held bigint;
  v_bal numeric;
  v_spread numeric;
begin
  perform ledger_amount(p_charge, 'charge');
  perform ledger_amount(p_payout, 'payout', true);
  v_spread := p_charge - p_payout;
  if v_spread < 0 then
    raise exception using errcode = 'SVC02', message = 'Invalid payout: more than the charge';
  end if;
  select * into c from ledger_claim(p_key, 'chargeback');
  if c.o_result is not null then return c.o_result; end if;
  if p_payout > 0 then
    v_held := ledger_acct(p_holder, 'revshare_held');
    perform ledger_lock(array[v_held]);
    select balance into v_bal from ledger_accounts where id = v_held;
    if v_bal < p_payout then
      raise exception using errcode = 'SVC01',
        message = format('Insufficient balance: %s held, %s to claw back', v_bal::numeric(20, 6), p_payout::numeric(20, 6));
    end if;
    perform ledger_entry(c.o_id, v_held, 'chargeback', -p_payout, p_at, p_reference, 'revshare_fraud_flag');
  end if;
  if v_spread > 0 then
    perform ledger_entry(c.o_id, ledger_platform('platform_revenue'), 'chargeback', -v_spread, p_at, p_reference, 'revshare_fraud_flag');
  end if;
  perform ledger_entry(c.o_id, ledger_revshare_receivable(), 'chargeback', p_charge, p_at, p_reference, 'revshare_fraud_flag');
  return ledger_finish(c.o_id, p_key, jsonb_build_object('type', 'chargeback', 'accountId', p_holder,
    'charge', ledger_money(p_charge), 'payout', ledger_money(p_payout)));
end $$;

-- A supplier paid for its ranges' traffic: the receivable is settled in cash.
create function ledger_revshare_supplier_payment(p_key text, p_supplier uuid, p_amount numeric, p_reference text, p_at timestamptz)
returns jsonb
language plpgsql as $$
declare c record;
begin
  perform ledger_amount(p_amount, 'amount');
  select * into c from ledger_claim(p_key, 'topup');
  if c.o_result is not null then return c.o_result; end if;
  perform ledger_entry(c.o_id, ledger_revshare_receivable(), 'topup', p_amount, p_at, p_reference,
                       'revshare_supplier_payment', p_supplier::text);
  perform ledger_entry(c.o_id, ledger_platform('topup_clearing'), 'topup', -p_amount, p_at, p_reference,
                       'revshare_supplier_payment', p_supplier::text);
  return ledger_finish(c.o_id, p_key, jsonb_build_object('type', 'topup', 'accountId', p_supplier, 'amount', ledger_money(p_amount)));
end $$;
