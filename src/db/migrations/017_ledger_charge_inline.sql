-- The charge with its helpers inline, and cheaper check constraints. bench/ledger's spread charge
-- is bound by server CPU (8 clients on 2 cores), about half of it inside ledger_charge.
--
-- Measured in a scratch database: the backend's CPU per charge (perf stat task-clock) in a
-- server-side loop committing after each charge (synchronous_commit off, so no flush wait), best
-- of 6 runs of 1,000: 013's charge 180-188 us, this one 153-159 us (pgbench -N's transaction, for
-- scale, 19 us). bench/ledger, same machine and hour: pgbench-driven charge 0.54 x pgbench -N
-- before (twice), 0.68 after (twice); Node-driven 0.55-0.58 before, 0.59-0.64 after.
-- What the charge still spends (staged runs): the 4 entries about 60 us, finding and locking buyer
-- and seller 25 us, the account update with the transaction's first write 37 us, the posting 24 us.
-- Tried and not kept: one statement of data-modifying CTEs for all writes (10 us slower than
-- these simple statements); aggregates instead of FOR loops, entries and posting in one statement,
-- dropping postings' primary key (no difference); a one-expression ledger_uuid_v7 (0.3 us a call).
--
-- 1. ledger_charge: the amount and key checks, the posting key claim, the ids and the money
--    formatting inline (no nested PL/pgSQL call on the common path); the replay look-up in the
--    statement that locks buyer and seller; the daily cap's suspension in the account update
--    (ledger_cap_reached was a second update of the buyer row). Same rules as 010/012/013: the
--    posting key's advisory lock, then a replay returns the first result; buyer and seller rows
--    locked in ascending id; the same entries in the same order (seq) with the same balanceAfter;
--    the same result object; the same errors and SQLSTATEs (the rare error paths still call 010's
--    helpers, so their messages stay in one place). Compared with 013's function on 30 cases
--    (replays, test mode, no seller, a seller's first sale, fee or amount zero, each refusal,
--    daily cap reached and 012's call exception, credit limit): the same results, rows and errors.
-- 2. The IN lists of three check constraints become array constants: an IN list is stored as an
--    ARRAY[...] expression, which every statement writing the table reads back and folds into a
--    constant again (ExecConstraints: stringToNode, evaluate_expr in a perf profile); an array
--    constant is stored half the size and needs no folding. Same predicates. Measured: an account
--    update plus an entry insert per transaction, 39.6 us before, 34.5 us after; a hold and its
--    settle, 419-428 us before, 409-423 us after.

alter table ledger_accounts
  drop constraint ledger_accounts_kind_check,
  add constraint ledger_accounts_kind_check check (kind = any (
    '{customer,test_credit,seller_payable,platform_revenue,platform_fee,topup_clearing,test_credit_pool,chargebacks}'::text[])),
  drop constraint ledger_accounts_check,
  add constraint ledger_accounts_check check ((owner_id is null) = (kind = any (
    '{platform_revenue,platform_fee,topup_clearing,test_credit_pool,chargebacks}'::text[])));

alter table entries
  drop constraint entries_type_check,
  add constraint entries_type_check check (type = any (
    '{topup,charge,credit,payout,platform_fee,test_credit,chargeback,refund_reversal,refund,transfer}'::text[]));

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
           (select coalesce(p.result, '{}'::jsonb) || jsonb_build_object('replayed', true)
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
    select coalesce(p.result, '{}'::jsonb) || jsonb_build_object('replayed', true) into v_result
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
  -- a posting are in order by id as well.
  v_us := (extract(epoch from clock_timestamp()) * 1000000)::bigint;
  v_posting := encode(int8send(((v_us / 1000) << 16) | 28672 | ((v_us % 1000) * 4096 / 1000))
                      || substring(uuid_send(gen_random_uuid()) from 9), 'hex')::uuid;
  -- Rows in this order (seq): buyer charge, seller credit or platform, buyer fee, platform fee.
  insert into entries (id, posting_id, account_id, owner_id, account_kind, type, amount, balance_after,
                       reference, related_entity_type, related_entity_id, call_id, created_at)
  select encode(int8send((((v_us + x.n) / 1000) << 16) | 28672 | (((v_us + x.n) % 1000) * 4096 / 1000))
                || substring(uuid_send(gen_random_uuid()) from 9), 'hex')::uuid,
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
  -- ledger_finish inline; ledger_money(x) is to_jsonb(x::numeric(20, 6)::text).
  v_result := jsonb_build_object('type', 'charge', 'accountId', p_buyer, 'mode', case when p_test then 'test' else 'live' end,
    'amount', to_jsonb(p_amount::numeric(20, 6)::text), 'fee', to_jsonb(v_fee::numeric(20, 6)::text),
    'total', to_jsonb(v_total::numeric(20, 6)::text), 'balanceAfter', to_jsonb(v_after::numeric(20, 6)::text),
    'balanceBefore', to_jsonb((v_after + v_total)::numeric(20, 6)::text),
    'capReached', v_cap_day is not distinct from d and b.cap_suspended_day is distinct from d,
    'postingId', v_posting);
  insert into postings (id, posting_key, type, created_at, result) values (v_posting, p_key, 'charge', now(), v_result);
  return v_result || jsonb_build_object('replayed', false);
end $$;
