-- ledger_hold and ledger_settle with their helpers inline, as 017 did for ledger_charge. Every
-- trunk call pays one of each (the call path holds per call and settles calls one at a time
-- whenever its 5 ms window holds one), and each ran about a dozen nested PL/pgSQL calls
-- (ledger_amount, ledger_claim, ledger_open_hold, ledger_post_charge, ledger_uuid_v7 per row,
-- ledger_cap_reached, ledger_finish, ledger_money per field), each a function call and most an
-- executor start of their own.
--
-- Same rules as 010/015: the key's advisory lock, then a replay returns the first result; the hold
-- row locked before the accounts (the order of release and the sweeper); payer and seller locked
-- in ascending id; the same entries in the same order (seq) with the same balanceAfter; the same
-- result objects and the same errors and SQLSTATEs (the rare error paths call 010's helpers, so
-- their messages stay in one place). The replay look-up rides in the statement that locks the
-- hold (settle) or the account (hold); results are stored with replayed false, which a replay's
-- constant overrides; a posting's ids share one random tail (018). The daily cap's suspension
-- moves into the settle's account update (ledger_cap_reached was a second update of the payer).
-- test/ledger/batch.test.ts compares these with 016's batch functions item by item.
--
-- Measured as 018 (callgrind, single-user backend, each call committed, 500 iterations): a hold
-- 990k instructions before, 670k after; a settle 2.00M before, 1.39M after.

create or replace function ledger_hold(
  p_key text, p_owner uuid, p_amount numeric, p_test boolean, p_expires_at timestamptz,
  p_reference text, p_related_type text, p_related_id text, p_call_id text, p_at timestamptz
) returns jsonb
language plpgsql as $$
declare
  v_kind text := case when p_test then 'test_credit' else 'customer' end;
  r record;
  a ledger_accounts;
  v_available numeric;
  v_us bigint;
  v_rand bytea := substring(uuid_send(gen_random_uuid()) from 9);
  v_hold uuid;
  v_posting uuid;
  v_result jsonb;
begin
  if p_amount is null or p_amount <> round(p_amount, 6) or p_amount <= 0 or p_amount >= 100000000000000 then
    perform ledger_amount(p_amount, 'amount');
  end if;
  if p_expires_at is null or p_expires_at <= p_at then
    raise exception using errcode = 'SVC02', message = 'Invalid hold: it must expire in the future';
  end if;
  if p_key is null or length(p_key) = 0 or length(p_key) > 255 then
    raise exception using errcode = 'SVC02', message = 'Invalid posting key: 1 to 255 characters';
  end if;
  perform pg_advisory_xact_lock(hashtextextended(p_key, 7261903));
  -- The account found and locked, and a replay of the key looked up, in one statement.
  select x.id, x.balance, x.credit_limit, x.held, x.cap_suspended_day,
         (select coalesce(p.result, '{}'::jsonb) || '{"replayed": true}'::jsonb
            from postings p where p.posting_key = p_key) as replay
    into r
    from ledger_accounts x where x.owner_id = p_owner and x.kind = v_kind
     for update;
  if r.replay is not null then return r.replay; end if;
  if r.id is null then
    -- The owner's first hold (an account row to create) or an unknown owner (SVC03 from
    -- ledger_acct); a replay first, as no row above carried it.
    select coalesce(p.result, '{}'::jsonb) || '{"replayed": true}'::jsonb into v_result
      from postings p where p.posting_key = p_key;
    if v_result is not null then return v_result; end if;
    a.id := ledger_acct(p_owner, v_kind);
    perform ledger_lock(array[a.id]);
    select * into a from ledger_accounts where id = a.id;
  else
    a.id := r.id; a.balance := r.balance; a.credit_limit := r.credit_limit; a.held := r.held;
    a.cap_suspended_day := r.cap_suspended_day;
  end if;
  if not p_test and a.cap_suspended_day = (p_at at time zone 'UTC')::date then
    perform ledger_cap_check(a, p_at);
  end if;
  if a.balance + a.credit_limit - a.held < p_amount then
    perform ledger_insufficient(a, p_amount);
  end if;
  update ledger_accounts set held = held + p_amount, updated_at = p_at where id = a.id
  returning balance + credit_limit - held into v_available;
  -- The hold's id, then the posting's a microsecond on (010 made them in that order).
  v_us := (extract(epoch from clock_timestamp()) * 1000000)::bigint;
  v_hold := encode(int8send(((v_us / 1000) << 16) | 28672 | ((v_us % 1000) * 4096 / 1000)) || v_rand, 'hex')::uuid;
  v_posting := encode(int8send((((v_us + 1) / 1000) << 16) | 28672 | (((v_us + 1) % 1000) * 4096 / 1000)) || v_rand, 'hex')::uuid;
  insert into holds (id, posting_key, account_id, owner_id, amount, expires_at, reference, related_entity_type, related_entity_id, call_id, created_at)
  values (v_hold, p_key, a.id, p_owner, p_amount, p_expires_at, p_reference, p_related_type, p_related_id, p_call_id, p_at);
  v_result := jsonb_build_object('type', 'hold', 'holdId', v_hold, 'accountId', p_owner,
    'mode', case when p_test then 'test' else 'live' end, 'amount', to_jsonb(p_amount::numeric(20, 6)::text),
    'available', to_jsonb(v_available::numeric(20, 6)::text), 'postingId', v_posting, 'replayed', false);
  insert into postings (id, posting_key, type, created_at, result) values (v_posting, p_key, 'hold', now(), v_result);
  return v_result;
end $$;

create or replace function ledger_settle(
  p_key text, p_hold uuid, p_seller uuid, p_amount numeric, p_fee numeric,
  p_reference text, p_related_type text, p_related_id text, p_call_id text, p_at timestamptz
) returns jsonb
language plpgsql as $$
declare
  d date := (p_at at time zone 'UTC')::date;
  v_fee numeric := coalesce(p_fee, 0);
  v_total numeric;
  h record;
  r record;
  a ledger_accounts;
  v_test boolean;
  v_seller bigint;
  v_after numeric;
  v_seller_after numeric;
  v_cap_day date;
  v_to bigint;
  v_fee_acct bigint;
  v_us bigint;
  v_rand bytea := substring(uuid_send(gen_random_uuid()) from 9);
  v_posting uuid;
  v_result jsonb;
begin
  -- ledger_amount's checks on both amounts (zero allowed) in one expression.
  if p_amount is null or p_amount <> round(p_amount, 6) or p_amount < 0 or p_amount >= 100000000000000
     or v_fee <> round(v_fee, 6) or v_fee < 0 or v_fee >= 100000000000000 then
    perform ledger_amount(p_amount, 'amount', true);
    perform ledger_amount(v_fee, 'fee', true);
  end if;
  v_total := p_amount + v_fee;
  if p_key is null or length(p_key) = 0 or length(p_key) > 255 then
    raise exception using errcode = 'SVC02', message = 'Invalid posting key: 1 to 255 characters';
  end if;
  perform pg_advisory_xact_lock(hashtextextended(p_key, 7261903));
  -- The hold locked (hold row first, then accounts) and a replay of the key looked up in one statement.
  select x.id, x.account_id, x.owner_id, x.amount, x.status, x.reference, x.related_entity_type, x.related_entity_id, x.call_id,
         (select coalesce(p.result, '{}'::jsonb) || '{"replayed": true}'::jsonb
            from postings p where p.posting_key = p_key) as replay
    into h
    from holds x where x.id = p_hold
     for update;
  if h.replay is not null then return h.replay; end if;
  if h.id is null then
    select coalesce(p.result, '{}'::jsonb) || '{"replayed": true}'::jsonb into v_result
      from postings p where p.posting_key = p_key;
    if v_result is not null then return v_result; end if;
  end if;
  if h.id is null or h.status <> 'open' then
    perform ledger_open_hold(p_hold);  -- raises SVC03 (unknown) or SVC02 (not open)
  end if;
  -- Payer and seller found and locked in one statement, in ascending id (ledger_lock's order).
  -- A test payer pays no seller: its seller row, if locked here, is simply not used.
  for r in
    select x.id, x.owner_id, x.kind, x.balance, x.credit_limit, x.held, x.cap_suspended_day
      from ledger_accounts x
     where x.id = h.account_id or (v_total > 0 and x.owner_id = p_seller and x.kind = 'seller_payable')
     order by x.id
       for update
  loop
    if r.id = h.account_id then
      a.id := r.id; a.owner_id := r.owner_id; a.kind := r.kind; a.balance := r.balance;
      a.credit_limit := r.credit_limit; a.held := r.held; a.cap_suspended_day := r.cap_suspended_day;
    else
      v_seller := r.id;
    end if;
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
    if a.balance + a.credit_limit - (a.held - h.amount) < v_total then
      a.held := a.held - h.amount;
      perform ledger_insufficient(a, v_total);
    end if;
    if p_amount = 0 then v_seller := null; end if;
    -- Payer and seller in one update (015's ledger_post_charge): the payer's debit, the hold given
    -- back, the day's spend and the cap's suspension once the spend reaches it; the seller's credit.
    for r in
      update ledger_accounts
         set balance = balance + case when id = a.id then -v_total else p_amount end,
             held = held - case when id = a.id then h.amount else 0 end,
             updated_at = p_at,
             spend_today = case when id <> a.id or v_test then spend_today
                                when spend_day = d then spend_today + v_total else v_total end,
             spend_day = case when id <> a.id or v_test then spend_day else d end,
             cap_suspended_day = case when id = a.id and not v_test and daily_spend_cap > 0
                                           and cap_suspended_day is distinct from d
                                           and case when spend_day = d then spend_today + v_total else v_total end >= daily_spend_cap
                                      then d else cap_suspended_day end
       where id = any(array[a.id, v_seller])
      returning id, balance, cap_suspended_day
    loop
      if r.id = a.id then v_after := r.balance; v_cap_day := r.cap_suspended_day; else v_seller_after := r.balance; end if;
    end loop;
    -- Platform revenue (no seller) and the platform fee on this backend's shard.
    if v_seller is null and p_amount > 0 then
      v_to := case when v_test then ledger_platform('test_credit_pool') else ledger_platform('platform_revenue') end;
    end if;
    if v_fee > 0 then
      v_fee_acct := case when v_test then ledger_platform('test_credit_pool') else ledger_platform('platform_fee') end;
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
  else
    update ledger_accounts set held = held - h.amount where id = a.id returning balance into v_after;
  end if;

  -- The posting's id, then its entries' at the next microseconds, one random tail (018).
  v_us := (extract(epoch from clock_timestamp()) * 1000000)::bigint;
  v_posting := encode(int8send(((v_us / 1000) << 16) | 28672 | ((v_us % 1000) * 4096 / 1000)) || v_rand, 'hex')::uuid;
  if v_total > 0 then
    -- Rows in this order (seq): payer charge, seller credit or platform, payer fee, platform fee.
    insert into entries (id, posting_id, account_id, owner_id, account_kind, type, amount, balance_after,
                         reference, related_entity_type, related_entity_id, call_id, created_at)
    select encode(int8send((((v_us + x.n) / 1000) << 16) | 28672 | (((v_us + x.n) % 1000) * 4096 / 1000)) || v_rand, 'hex')::uuid,
           v_posting, x.acct, x.owner, x.kind, x.type, x.amount, x.after,
           coalesce(p_reference, h.reference), coalesce(p_related_type, h.related_entity_type),
           coalesce(p_related_id, h.related_entity_id), coalesce(p_call_id, h.call_id), p_at
      from (values
        (1, a.id, a.owner_id, a.kind::text, 'charge', -p_amount, v_after + v_fee),
        (2, coalesce(v_seller, v_to), case when v_seller is not null then p_seller end,
            case when v_seller is not null then 'seller_payable' when v_test then 'test_credit_pool' else 'platform_revenue' end,
            case when v_seller is null then 'charge' else 'credit' end, p_amount, v_seller_after),
        (3, a.id, a.owner_id, a.kind::text, 'platform_fee', -v_fee, v_after),
        (4, v_fee_acct, null::uuid, case when v_test then 'test_credit_pool' else 'platform_fee' end, 'platform_fee', v_fee, null::numeric)
      ) as x(n, acct, owner, kind, type, amount, after)
     where x.amount <> 0;
  end if;
  v_result := jsonb_build_object('type', 'settle', 'holdId', h.id, 'accountId', h.owner_id,
    'mode', case when v_test then 'test' else 'live' end, 'amount', to_jsonb(p_amount::numeric(20, 6)::text),
    'fee', to_jsonb(v_fee::numeric(20, 6)::text), 'total', to_jsonb(v_total::numeric(20, 6)::text),
    'released', to_jsonb(greatest(h.amount - v_total, 0)::numeric(20, 6)::text),
    'balanceAfter', to_jsonb(v_after::numeric(20, 6)::text), 'balanceBefore', to_jsonb((v_after + v_total)::numeric(20, 6)::text),
    'capReached', v_total > 0 and v_cap_day is not distinct from d and a.cap_suspended_day is distinct from d,
    'postingId', v_posting, 'replayed', false);
  insert into postings (id, posting_key, type, created_at, result) values (v_posting, p_key, 'settle', now(), v_result);
  return v_result;
end $$;
