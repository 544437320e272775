-- Issue 26: ledger_charge without two per-call costs of its PL/pgSQL. Same rules, rows, stored
-- results, errors and signature as 340.
--
-- - The posting key's lock (pg_advisory_xact_lock) is taken by an assignment instead of PERFORM:
--   PERFORM runs a statement (a plan, an executor started and ended in each call); an assignment of
--   a call without FROM is a simple expression, evaluated directly. Same lock, same key, same time.
-- - The platform shard is read once per call from the session setting ledger_shard() keeps
--   (migration 268), the function itself running only when the setting is empty (a session's first
--   posting, or its first after a rollback undid the setting): one PL/pgSQL call less per charge.
--
-- Measured with bench/ledger/charge-callgrind.bench.ts's method (the backend serving src/ledger's
-- charge, one connection, the same accounts in the same order, 600 less 100 charges, twice each):
-- 1,039.4k and 1,039.1k instructions per charge before, 1,026.8k and 1,026.6k after (-1.2%).
-- Where the rest goes (same counts): PL/pgSQL statements' plans started and ended (ExecutorStart
-- 183k, the entries and posting insert's ExecutorFinish 154k, the FOR loop's cursor 172k), the
-- simple expressions built anew in each transaction (ExecInitExprWithParams 113k), the balance
-- CHECK's expression read and planned for each update of ledger_accounts (ExecConstraints 56k,
-- kept on purpose), index inserts 62k, the result's jsonb_build_object 52k.

create or replace function ledger_charge(
  p_key text, p_buyer uuid, p_seller uuid, p_amount numeric, p_fee numeric, p_test boolean,
  p_reference text, p_related_type text, p_related_id text, p_call_id text, p_at timestamptz,
  p_threshold numeric default null, p_strict boolean default false
) returns jsonb
language plpgsql set enable_bitmapscan = off as $$
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
  v_spend numeric;
  v_cap_reached boolean;
  v_to bigint;
  v_fee_acct bigint;
  v_us bigint;
  v_posting uuid;
  v_result jsonb;
  v_line numeric;
  v_crossed boolean := false;
  v_capped boolean := false;
  -- One random tail for the posting and its entries (see the ids below).
  v_rand bytea := substring(uuid_send(gen_random_uuid()) from 9);
  v_locked boolean;
  v_shard integer;
begin
  -- ledger_amount's checks on both amounts and the key's length in one expression; on a failure
  -- the helpers raise their own errors, in 018's order.
  if p_amount is null or p_amount <> round(p_amount, 6) or p_amount < 0 or p_amount >= 100000000000000
     or v_fee <> round(v_fee, 6) or v_fee < 0 or v_fee >= 100000000000000 or p_amount + v_fee <= 0
     or p_key is null or length(p_key) = 0 or length(p_key) > 255 then
    perform ledger_amount(p_amount, 'amount', true);
    perform ledger_amount(v_fee, 'fee', true);
    if p_amount + v_fee <= 0 then
      raise exception using errcode = 'SVC02', message = 'Invalid amount: a charge must be greater than zero';
    end if;
    raise exception using errcode = 'SVC02', message = 'Invalid posting key: 1 to 255 characters';
  end if;
  v_total := p_amount + v_fee;
  -- ledger_claim: the key's lock first, so the look-up below sees a concurrent first call's posting.
  -- An assignment, not PERFORM: a simple expression, evaluated without a statement's executor.
  v_locked := pg_advisory_xact_lock(hashtextextended(p_key, 7261903)) is null;
  -- Finds and locks buyer and seller in one statement, in ascending id (ledger_lock's order), and
  -- looks up a replay of the key in the same statement. Only the buyer columns the checks and the
  -- update below read (a whole row cost 9 us a charge); the error paths below read the whole row.
  -- One index scan over both owners (enable_bitmapscan off, above) where an OR of the two
  -- (owner, kind) pairs made a bitmap scan.
  for r in
    select a.id, a.kind, a.balance, a.credit_limit, a.held, a.cap_suspended_day, a.spend_today, a.spend_day, a.daily_spend_cap,
           a.low_line, a.owner_parent_id,
           (select coalesce(p.result, '{}'::jsonb) || '{"replayed": true}'::jsonb
              from postings p where p.posting_key = p_key) as replay
      from ledger_accounts a
     where a.owner_id = any(array[p_buyer, v_seller_owner])
       and ((a.owner_id = p_buyer and a.kind = v_kind) or (a.owner_id = v_seller_owner and a.kind = 'seller_payable'))
     order by a.id
       for update
  loop
    if r.replay is not null then return r.replay; end if;
    if r.kind = v_kind then
      b.id := r.id; b.balance := r.balance; b.credit_limit := r.credit_limit; b.held := r.held;
      b.cap_suspended_day := r.cap_suspended_day; b.spend_today := r.spend_today; b.spend_day := r.spend_day;
      b.daily_spend_cap := r.daily_spend_cap; b.low_line := r.low_line; b.owner_parent_id := r.owner_parent_id;
    else
      v_seller := r.id; v_seller_after := r.balance + p_amount;
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
    select balance + p_amount into v_seller_after from ledger_accounts where id = v_seller;
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
  -- suspension once the spend reaches it (as ledger_cap_reached did); the seller's credit. The rows
  -- are locked, so their new values follow from the values read above, and the update returns
  -- nothing (018 read them back through a cursor).
  v_spend := case when b.spend_day = d then b.spend_today + v_total else v_total end;
  -- is true: no cap (null) is not reached.
  v_cap_reached := (not p_test and b.daily_spend_cap > 0 and b.cap_suspended_day is distinct from d
                    and v_spend >= b.daily_spend_cap) is true;
  v_after := b.balance - v_total;
  -- ledger_debit_signal's rule (283) on the line kept on the buyer's row: decided before anything
  -- is written, so a strict caller's refusal costs no writes.
  if p_threshold is not null and not p_test then
    v_line := case when b.owner_parent_id is null then coalesce(b.low_line, p_threshold) else b.low_line end;
    v_crossed := (v_line > 0 and b.balance >= v_line and v_after < v_line) is true;
    v_capped := v_cap_reached and b.owner_parent_id is not null;
    if p_strict and (v_crossed or v_capped) then
      raise exception 'this posting has balance events to emit; post it in a transaction' using errcode = 'SVC90';
    end if;
  end if;
  update ledger_accounts
     set balance = balance + case when id = b.id then -v_total else p_amount end,
         updated_at = p_at,
         spend_today = case when id = b.id and not p_test then v_spend else spend_today end,
         spend_day = case when id = b.id and not p_test then d else spend_day end,
         cap_suspended_day = case when id = b.id and v_cap_reached then d else cap_suspended_day end
   where id = any(array[b.id, v_seller]);
  -- Platform revenue (no seller) and the platform fee on this backend's shard (013's logic);
  -- ledger_platform of a constant is folded into the plan.
  if v_seller is null and p_amount > 0 then
    v_to := case when p_test then ledger_platform('test_credit_pool') else ledger_platform('platform_revenue') end;
  end if;
  if v_fee > 0 then
    v_fee_acct := case when p_test then ledger_platform('test_credit_pool') else ledger_platform('platform_fee') end;
  end if;
  -- ledger_shard()'s own first step inline: the backend's shard is in the session setting after
  -- its first posting, so the function (a PL/pgSQL call) runs once per session, not per charge.
  if v_to is not null or v_fee_acct is not null then
    v_shard := coalesce(nullif(current_setting('ledger.shard', true), '')::integer, ledger_shard());
  end if;
  if v_to = v_fee_acct then
    update ledger_account_shards set balance = balance + v_total where account_id = v_to and shard = v_shard;
  else
    if v_to is not null then
      update ledger_account_shards set balance = balance + p_amount where account_id = v_to and shard = v_shard;
    end if;
    if v_fee_acct is not null then
      update ledger_account_shards set balance = balance + v_fee where account_id = v_fee_acct and shard = v_shard;
    end if;
  end if;
  -- ledger_uuid_v7 inline (48-bit milliseconds, version 7, 12-bit sub-millisecond fraction, then
  -- random): the posting's id, then its entries' at the next microseconds, so that the entries of
  -- a posting are in order by id as well. They share one random tail: the time parts already tell
  -- a posting's ids apart, and the tail tells postings apart.
  v_us := (extract(epoch from clock_timestamp()) * 1000000)::bigint;
  v_posting := encode(int8send(((v_us / 1000) << 16) | 28672 | ((v_us % 1000) * 4096 / 1000))
                      || v_rand, 'hex')::uuid;
  -- ledger_finish inline; ledger_money(x) is x::numeric(20, 6)::text, which jsonb_build_object
  -- takes as a string. Stored with replayed false, which a replay's constant overrides.
  v_result := jsonb_build_object('type', 'charge', 'accountId', p_buyer, 'mode', case when p_test then 'test' else 'live' end,
    'amount', p_amount::numeric(20, 6)::text, 'fee', v_fee::numeric(20, 6)::text,
    'total', v_total::numeric(20, 6)::text, 'balanceAfter', v_after::numeric(20, 6)::text,
    'balanceBefore', (v_after + v_total)::numeric(20, 6)::text,
    'capReached', v_cap_reached,
    'postingId', v_posting, 'replayed', false);
  -- The posting's entries, in this order (seq): buyer charge, seller credit or platform, buyer
  -- fee, platform fee; the posting row in the same statement.
  with e as (
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
     where x.amount <> 0
  )
  insert into postings (id, posting_key, type, created_at, result) values (v_posting, p_key, 'charge', now(), v_result);
  -- Not stored: a replay has no events to emit. Only a posting with events carries it: the caller
  -- reads an absent signal as none, and most charges cross no line.
  if p_threshold is null or not (v_crossed or v_capped) then return v_result; end if;
  return v_result || jsonb_build_object('signal', jsonb_build_object(
    'parentId', b.owner_parent_id, 'crossed', v_crossed, 'capped', v_capped));
end $$;
