-- Check constraints the hot path no longer parses on every statement, and a cheaper charge.
--
-- PostgreSQL 15 rebuilds a table's CHECK constraints from their stored text (stringToNode) for
-- every statement that writes the table: each charge's account update parsed ledger_accounts'
-- six checks (4.8 kB of node text) and its entry insert the two of entries, a fifth of the
-- charge's instructions (callgrind, single-user backend, 600 charges: ExecConstraints 288k of
-- 1.40M instructions per charge). A domain's check is parsed once per backend (the type cache)
-- and runs only when a value of the column is written, so:
-- 1. The single-column rules become domains: an account's kind, a non-negative amount (held,
--    credit limit, daily cap), an entry's type and non-zero amount, a hold's status and positive
--    amount. Same predicates, still enforced by the database on every write of those columns.
--    entries and holds grow without bound, so their domains are attached without a constraint
--    (no table rewrite) and the constraint is added NOT VALID, then validated (one scan).
-- 2. The rule tying owner to kind (platform accounts have no owner, all others one) becomes a
--    trigger on insert and on updates that name owner_id or kind; no update does.
-- 3. ledger_charge as 017, with one random tail for a posting and its entries (pg_strong_random
--    was 8.5k instructions a call, five calls a charge) and its result built once: stored with
--    replayed false, which a replay's constant overrides. Same results, rows and errors.
-- The balance check (sharded or balance + credit_limit - held >= 0) stays a table check: it
-- spans columns and is the last line of defence.
-- Measured as above: 1.40M instructions per charge before, 1.14M after (domains 1.23M).

-- The views read the columns whose types change; they come back unchanged below.
drop view ledger_owner_balances;
drop view ledger_account_balances;

create domain ledger_account_kind as text check (value = any (
  '{customer,test_credit,seller_payable,platform_revenue,platform_fee,topup_clearing,test_credit_pool,chargebacks}'::text[]));
create domain ledger_nonneg_money as numeric(20, 6) check (value >= 0);

alter table ledger_accounts
  drop constraint ledger_accounts_kind_check,
  drop constraint ledger_accounts_held_check,
  drop constraint ledger_accounts_credit_limit_check,
  drop constraint ledger_accounts_daily_spend_cap_check,
  drop constraint ledger_accounts_check,
  alter column kind type ledger_account_kind,
  alter column held type ledger_nonneg_money,
  alter column credit_limit type ledger_nonneg_money,
  alter column daily_spend_cap type ledger_nonneg_money;

create function ledger_accounts_owner_rule() returns trigger
language plpgsql as $$
begin
  if (new.owner_id is null) is distinct from (new.kind = any ('{platform_revenue,platform_fee,topup_clearing,test_credit_pool,chargebacks}'::text[])) then
    raise exception using errcode = 'check_violation', table = 'ledger_accounts', constraint = 'ledger_accounts_owner_rule',
      message = format('ledger account of kind %s: platform accounts have no owner, all others one', new.kind);
  end if;
  return new;
end $$;
create trigger ledger_accounts_owner_rule before insert or update of owner_id, kind on ledger_accounts
for each row execute function ledger_accounts_owner_rule();

create domain ledger_entry_type as text;
create domain ledger_entry_amount as numeric(20, 6);
alter table entries
  drop constraint entries_type_check,
  drop constraint entries_amount_check,
  alter column type type ledger_entry_type,
  alter column amount type ledger_entry_amount;
alter domain ledger_entry_type add constraint ledger_entry_type_check check (value = any (
  '{topup,charge,credit,payout,platform_fee,test_credit,chargeback,refund_reversal,refund,transfer}'::text[])) not valid;
alter domain ledger_entry_type validate constraint ledger_entry_type_check;
alter domain ledger_entry_amount add constraint ledger_entry_amount_check check (value <> 0) not valid;
alter domain ledger_entry_amount validate constraint ledger_entry_amount_check;

create domain ledger_hold_status as text;
create domain ledger_hold_amount as numeric(20, 6);
alter table holds
  drop constraint holds_status_check,
  drop constraint holds_amount_check,
  alter column status type ledger_hold_status,
  alter column amount type ledger_hold_amount;
alter domain ledger_hold_status add constraint ledger_hold_status_check check (value = any (
  '{open,settled,released,expired}'::text[])) not valid;
alter domain ledger_hold_status validate constraint ledger_hold_status_check;
alter domain ledger_hold_amount add constraint ledger_hold_amount_check check (value > 0) not valid;
alter domain ledger_hold_amount validate constraint ledger_hold_amount_check;

-- 010's views, unchanged.
create view ledger_owner_balances as
select a.owner_id,
       coalesce(sum(a.balance) filter (where a.kind = 'customer'), 0) as balance,
       coalesce(sum(a.held) filter (where a.kind = 'customer'), 0) as held,
       coalesce(sum(a.credit_limit) filter (where a.kind = 'customer'), 0) as credit_limit,
       coalesce(sum(a.balance) filter (where a.kind = 'test_credit'), 0) as test_credit,
       coalesce(sum(a.held) filter (where a.kind = 'test_credit'), 0) as test_held,
       coalesce(sum(a.balance) filter (where a.kind = 'seller_payable'), 0) as payable
from ledger_accounts a where a.owner_id is not null group by a.owner_id;

create view ledger_account_balances as
select a.id, a.owner_id, a.kind,
       case when a.sharded then (select coalesce(sum(s.balance), 0) from ledger_account_shards s where s.account_id = a.id)
            else a.balance end as balance
from ledger_accounts a;

create or replace function ledger_charge(
  p_key text, p_buyer uuid, p_seller uuid, p_amount numeric, p_fee numeric, p_test boolean,
  p_reference text, p_related_type text, p_related_id text, p_call_id text, p_at timestamptz
) returns jsonb
language plpgsql as $$
declare
  d date := (p_at at time zone 'UTC')::date;
  v_kind text := case when p_test then 'test_credit' else 'customer' end;
  v_seller_owner uuid := case when not p_test then p_seller end;
  v_fee numeric := coalesce(p_fee, 0);
  v_total numeric;
  r record;
  b ledger_accounts;
  v_seller bigint;
  v_after numeric;
  v_seller_after numeric;
  v_cap_day date;
  v_to bigint;
  v_fee_acct bigint;
  v_us bigint;
  v_posting uuid;
  v_result jsonb;
  -- One random tail for the posting and its entries (see the ids below).
  v_rand bytea := substring(uuid_send(gen_random_uuid()) from 9);
begin
  -- ledger_amount's checks on both amounts in one expression; on a failure it raises its own error.
  if p_amount is null or p_amount <> round(p_amount, 6) or p_amount < 0 or p_amount >= 100000000000000
     or v_fee <> round(v_fee, 6) or v_fee < 0 or v_fee >= 100000000000000 then
    perform ledger_amount(p_amount, 'amount', true);
    perform ledger_amount(v_fee, 'fee', true);
  end if;
  v_total := p_amount + v_fee;
  if v_total <= 0 then
    raise exception using errcode = 'SVC02', message = 'Invalid amount: a charge must be greater than zero';
  end if;
  -- ledger_claim: the key's lock first, so the look-up below sees a concurrent first call's posting.
  if p_key is null or length(p_key) = 0 or length(p_key) > 255 then
    raise exception using errcode = 'SVC02', message = 'Invalid posting key: 1 to 255 characters';
  end if;
  perform pg_advisory_xact_lock(hashtextextended(p_key, 7261903));
  -- Finds and locks buyer and seller in one statement, in ascending id (ledger_lock's order), and
  -- looks up a replay of the key in the same statement. Only the buyer columns the checks read
  -- (a whole row cost 9 us a charge); the error paths below read the whole row.
  for r in
    select a.id, a.kind, a.balance, a.credit_limit, a.held, a.cap_suspended_day,
           (select coalesce(p.result, '{}'::jsonb) || '{"replayed": true}'::jsonb
              from postings p where p.posting_key = p_key) as replay
      from ledger_accounts a
     where (a.owner_id = p_buyer and a.kind = v_kind) or (a.owner_id = v_seller_owner and a.kind = 'seller_payable')
     order by a.id
       for update
  loop
    if r.replay is not null then return r.replay; end if;
    if r.kind = v_kind then
      b.id := r.id; b.balance := r.balance; b.credit_limit := r.credit_limit; b.held := r.held;
      b.cap_suspended_day := r.cap_suspended_day;
    else
      v_seller := r.id;
    end if;
  end loop;
  -- First charge of an owner (an account row to create) or an unknown owner (SVC03, from
  -- ledger_acct); a replay first, as no row above carried it. A row made now has a higher id
  -- than any row already locked above.
  if b.id is null or (v_seller_owner is not null and v_seller is null) then
    select coalesce(p.result, '{}'::jsonb) || '{"replayed": true}'::jsonb into v_result
      from postings p where p.posting_key = p_key;
    if v_result is not null then return v_result; end if;
    b.id := ledger_acct(p_buyer, v_kind);
    if v_seller_owner is not null then v_seller := ledger_acct(v_seller_owner, 'seller_payable'); end if;
    perform ledger_lock(array[b.id, v_seller]);
    select * into b from ledger_accounts where id = b.id;
  end if;
  -- 012: the rest of a call admitted before the cap was reached (a reseller's markup after the
  -- settle that reached it) is still owed: the cap stops new spending, not the billing of that call.
  if not p_test and b.cap_suspended_day is not null then
    if not (p_call_id is not null and exists (
          select 1 from holds h where h.account_id = b.id and h.call_id = p_call_id and h.status = 'settled')) then
      select * into b from ledger_accounts where id = b.id;
      perform ledger_cap_check(b, p_at);
    end if;
  end if;
  if b.balance + b.credit_limit - b.held < v_total then
    select * into b from ledger_accounts where id = b.id;
    perform ledger_insufficient(b, v_total);
  end if;
  if p_amount = 0 or p_test then v_seller := null; end if;

  -- Buyer and seller rows in one update: the buyer's debit and day's spend, and the cap's
  -- suspension once the spend reaches it (as ledger_cap_reached did); the seller's credit.
  for r in
    update ledger_accounts
       set balance = balance + case when id = b.id then -v_total else p_amount end,
           updated_at = p_at,
           spend_today = case when id <> b.id or p_test then spend_today
                              when spend_day = d then spend_today + v_total else v_total end,
           spend_day = case when id <> b.id or p_test then spend_day else d end,
           cap_suspended_day = case when id = b.id and not p_test and daily_spend_cap > 0
                                         and cap_suspended_day is distinct from d
                                         and case when spend_day = d then spend_today + v_total else v_total end >= daily_spend_cap
                                    then d else cap_suspended_day end
     where id = any(array[b.id, v_seller])
    returning id, balance, cap_suspended_day
  loop
    if r.id = b.id then v_after := r.balance; v_cap_day := r.cap_suspended_day; else v_seller_after := r.balance; end if;
  end loop;
  -- Platform revenue (no seller) and the platform fee on this backend's shard (013's logic);
  -- ledger_platform of a constant is folded into the plan.
  if v_seller is null and p_amount > 0 then
    v_to := case when p_test then ledger_platform('test_credit_pool') else ledger_platform('platform_revenue') end;
  end if;
  if v_fee > 0 then
    v_fee_acct := case when p_test then ledger_platform('test_credit_pool') else ledger_platform('platform_fee') end;
  end if;
  if v_to = v_fee_acct then
    update ledger_account_shards set balance = balance + v_total where account_id = v_to and shard = pg_backend_pid() % 16;
  else
    if v_to is not null then
      update ledger_account_shards set balance = balance + p_amount where account_id = v_to and shard = pg_backend_pid() % 16;
    end if;
    if v_fee_acct is not null then
      update ledger_account_shards set balance = balance + v_fee where account_id = v_fee_acct and shard = pg_backend_pid() % 16;
    end if;
  end if;
  -- ledger_uuid_v7 inline (48-bit milliseconds, version 7, 12-bit sub-millisecond fraction, then
  -- random): the posting's id, then its entries' at the next microseconds, so that the entries of
  -- a posting are in order by id as well. They share one random tail: the time parts already tell
  -- a posting's ids apart, and the tail tells postings apart.
  v_us := (extract(epoch from clock_timestamp()) * 1000000)::bigint;
  v_posting := encode(int8send(((v_us / 1000) << 16) | 28672 | ((v_us % 1000) * 4096 / 1000))
                      || v_rand, 'hex')::uuid;
  -- Rows in this order (seq): buyer charge, seller credit or platform, buyer fee, platform fee.
  insert into entries (id, posting_id, account_id, owner_id, account_kind, type, amount, balance_after,
                       reference, related_entity_type, related_entity_id, call_id, created_at)
  select encode(int8send((((v_us + x.n) / 1000) << 16) | 28672 | (((v_us + x.n) % 1000) * 4096 / 1000))
                || v_rand, 'hex')::uuid,
         v_posting, x.acct, x.owner, x.kind, x.type, x.amount, x.after,
         p_reference, p_related_type, p_related_id, p_call_id, p_at
    from (values
      (1, b.id, p_buyer, v_kind, 'charge', -p_amount, v_after + v_fee),
      (2, coalesce(v_seller, v_to), case when v_seller is not null then p_seller end,
          case when v_seller is not null then 'seller_payable' when p_test then 'test_credit_pool' else 'platform_revenue' end,
          case when v_seller is null then 'charge' else 'credit' end, p_amount, v_seller_after),
      (3, b.id, p_buyer, v_kind, 'platform_fee', -v_fee, v_after),
      (4, v_fee_acct, null::uuid, case when p_test then 'test_credit_pool' else 'platform_fee' end, 'platform_fee', v_fee, null::numeric)
    ) as x(n, acct, owner, kind, type, amount, after)
   where x.amount <> 0;
  -- ledger_finish inline; ledger_money(x) is to_jsonb(x::numeric(20, 6)::text). Stored with
  -- replayed false, which a replay's constant overrides.
  v_result := jsonb_build_object('type', 'charge', 'accountId', p_buyer, 'mode', case when p_test then 'test' else 'live' end,
    'amount', to_jsonb(p_amount::numeric(20, 6)::text), 'fee', to_jsonb(v_fee::numeric(20, 6)::text),
    'total', to_jsonb(v_total::numeric(20, 6)::text), 'balanceAfter', to_jsonb(v_after::numeric(20, 6)::text),
    'balanceBefore', to_jsonb((v_after + v_total)::numeric(20, 6)::text),
    'capReached', v_cap_day is not distinct from d and b.cap_suspended_day is distinct from d,
    'postingId', v_posting, 'replayed', false);
  insert into postings (id, posting_key, type, created_at, result) values (v_posting, p_key, 'charge', now(), v_result);
  return v_result;
end $$;
