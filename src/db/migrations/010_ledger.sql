-- The double-entry ledger (ARCHITECTURE "Money rules"). Every balance change happens in the
-- functions below; TypeScript only calls them (src/ledger/).
--
-- Sign convention: an entry's amount is signed from the point of view of the ledger account it
-- lands on; every posting's entries sum to zero, so all entries together sum to zero. Customer,
-- test-credit and seller-payable accounts read like a customer sees them (positive = money they
-- hold); the platform side (top-up clearing, pools) carries the opposite sign.
--
-- Errors: SVC01 insufficient balance (message starts "Insufficient balance"), SVC02 invalid amount
-- or state, SVC03 unknown account or hold.

-- Time-ordered ids made in SQL (PostgreSQL 15 has no uuidv7()): RFC 9562 version 7 with the
-- 48-bit millisecond clock and a 12-bit sub-millisecond fraction (method 3), so entries of one
-- account, which its row lock serialises, come out in order. Lists page by id.
create function ledger_uuid_v7() returns uuid
language plpgsql volatile as $$
declare
  us bigint := (extract(epoch from clock_timestamp()) * 1000000)::bigint;
  frac integer := ((us % 1000) * 4096 / 1000)::integer;
  b bytea := uuid_send(gen_random_uuid());
begin
  b := overlay(b placing substring(int8send(us / 1000) from 3) from 1 for 6);
  b := set_byte(b, 6, 112 | (frac >> 8));
  b := set_byte(b, 7, frac & 255);
  return encode(b, 'hex')::uuid;
end $$;

create table ledger_accounts (
  -- bigint so every function locks the accounts it touches in one fixed order: ascending id.
  id bigint generated always as identity primary key,
  owner_id uuid references accounts (id),
  kind text not null check (kind in (
    'customer', 'test_credit', 'seller_payable',
    'platform_revenue', 'platform_fee', 'topup_clearing', 'test_credit_pool', 'chargebacks')),
  -- Platform accounts are spread over ledger_account_shards: no charge updates one shared row.
  sharded boolean not null default false,
  balance numeric(20, 6) not null default 0,
  held numeric(20, 6) not null default 0 check (held >= 0),
  credit_limit numeric(20, 6) not null default 0 check (credit_limit >= 0),
  -- Daily spend cap (null or 0: none) and the spend of the current UTC day.
  daily_spend_cap numeric(20, 6) check (daily_spend_cap >= 0),
  spend_day date,
  spend_today numeric(20, 6) not null default 0,
  -- The UTC day on which the cap suspended this account; lifts itself on the next day.
  cap_suspended_day date,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique nulls not distinct (owner_id, kind),
  check ((owner_id is null) = (kind in ('platform_revenue', 'platform_fee', 'topup_clearing', 'test_credit_pool', 'chargebacks'))),
  -- The last line of defence; the functions refuse with SVC01 before this can fire.
  check (sharded or balance + credit_limit - held >= 0)
);

create table ledger_account_shards (
  account_id bigint not null references ledger_accounts (id),
  shard smallint not null,
  balance numeric(20, 6) not null default 0,
  primary key (account_id, shard)
);

insert into ledger_accounts (owner_id, kind, sharded)
select null, k, true from unnest(array['platform_revenue', 'platform_fee', 'topup_clearing', 'test_credit_pool', 'chargebacks']) as k;
insert into ledger_account_shards (account_id, shard)
select a.id, s from ledger_accounts a cross join generate_series(0, 15) as s where a.sharded;

create table postings (
  id uuid primary key,
  posting_key text not null unique,
  type text not null,
  -- A refund names the charge it reverses; a charge is refunded at most once.
  refund_of uuid,
  created_at timestamptz not null default now(),
  -- What the first call returned; a replay with the same key returns it again.
  result jsonb
);

-- No primary-key index: ids are made unique by ledger_uuid_v7 and the hot path pays for every
-- index; lists reach entries through entries_owner_idx, refunds through entries_posting_idx.
create unique index postings_refund_of_key on postings (refund_of) where refund_of is not null;

create table entries (
  id uuid not null,
  -- Insertion order; an account's entries are serialised by its row lock, so this is its history order.
  seq bigint generated always as identity,
  -- No foreign keys: rows come only from these functions, and FK checks would share-lock the
  -- platform account rows on every posting.
  posting_id uuid not null,
  account_id bigint not null,
  owner_id uuid,
  account_kind text not null,
  type text not null check (type in (
    'topup', 'charge', 'credit', 'payout', 'platform_fee', 'test_credit', 'chargeback', 'refund_reversal', 'refund', 'transfer')),
  amount numeric(20, 6) not null check (amount <> 0),
  -- null on sharded platform accounts, whose balance is the sum of their shards.
  balance_after numeric(20, 6),
  reference text,
  related_entity_type text,
  related_entity_id text,
  call_id text,
  source text,
  created_at timestamptz not null
);
create index entries_owner_idx on entries (owner_id, id desc) where owner_id is not null;
create index entries_posting_idx on entries (posting_id);

create function ledger_entries_append_only() returns trigger
language plpgsql as $$
begin
  raise exception 'ledger entries are append-only' using errcode = 'SVC02';
end $$;
create trigger entries_append_only before update or delete on entries
for each row execute function ledger_entries_append_only();

create table holds (
  id uuid primary key,
  posting_key text not null unique,
  account_id bigint not null,
  owner_id uuid not null,
  amount numeric(20, 6) not null check (amount > 0),
  status text not null default 'open' check (status in ('open', 'settled', 'released', 'expired')),
  expires_at timestamptz not null,
  reference text,
  related_entity_type text,
  related_entity_id text,
  call_id text,
  created_at timestamptz not null,
  closed_at timestamptz,
  settled_amount numeric(20, 6)
);
create index holds_open_expiry_idx on holds (expires_at) where status = 'open';

-- Amount checks in SQL, not only in TypeScript.
create function ledger_amount(p numeric, p_what text, p_allow_zero boolean default false) returns numeric
language plpgsql immutable as $$
begin
  if p is null then
    raise exception using errcode = 'SVC02', message = format('Invalid %s: missing', p_what);
  end if;
  if p <> round(p, 6) then
    raise exception using errcode = 'SVC02', message = format('Invalid %s: more than 6 decimal places', p_what);
  end if;
  if p < 0 or (p = 0 and not p_allow_zero) then
    raise exception using errcode = 'SVC02', message = format('Invalid %s: must be greater than zero', p_what);
  end if;
  if p >= 100000000000000 then
    raise exception using errcode = 'SVC02', message = format('Invalid %s: too large', p_what);
  end if;
  return p;
end $$;

-- Claims a posting key: a transaction-scoped advisory lock on the key makes a concurrent first
-- call with the same key wait; o_result is the first call's result when the key was used before.
-- The posting row is written once, at the end, with its result (ledger_finish).
create function ledger_claim(p_key text, p_type text, out o_id uuid, out o_result jsonb)
language plpgsql as $$
begin
  if p_key is null or length(p_key) = 0 or length(p_key) > 255 then
    raise exception using errcode = 'SVC02', message = 'Invalid posting key: 1 to 255 characters';
  end if;
  perform pg_advisory_xact_lock(hashtextextended(p_key, 7261903));
  select p.id, coalesce(p.result, '{}'::jsonb) || jsonb_build_object('replayed', true)
    into o_id, o_result from postings p where p.posting_key = p_key;
  if o_id is null then o_id := ledger_uuid_v7(); end if;
end $$;

create function ledger_finish(p_posting uuid, p_key text, p_result jsonb) returns jsonb
language plpgsql as $$
declare v jsonb := p_result || jsonb_build_object('postingId', p_posting);
begin
  insert into postings (id, posting_key, type, refund_of, created_at, result)
  values (p_posting, p_key, p_result ->> 'type', (p_result ->> 'refundOf')::uuid, now(), v);
  return v || jsonb_build_object('replayed', false);
end $$;

-- PL/pgSQL rather than SQL for the small helpers: called from PL/pgSQL, a SQL function is planned
-- again on every call, a PL/pgSQL one keeps its plan (measured: the charge path doubled).
create function ledger_platform(p_kind text) returns bigint
language plpgsql stable as $$
begin
  return (select id from ledger_accounts where owner_id is null and kind = p_kind);
end $$;

-- The ledger account of an owner; created on first use when p_create. SVC03 for an unknown owner.
create function ledger_acct(p_owner uuid, p_kind text, p_create boolean default true) returns bigint
language plpgsql as $$
declare v bigint;
begin
  if p_owner is null then
    raise exception using errcode = 'SVC03', message = 'Unknown account: none given';
  end if;
  select id into v from ledger_accounts where owner_id = p_owner and kind = p_kind;
  if found then return v; end if;
  if not exists (select 1 from accounts where id = p_owner) then
    raise exception using errcode = 'SVC03', message = format('Unknown account %s', p_owner);
  end if;
  if not p_create then return null; end if;
  insert into ledger_accounts (owner_id, kind) values (p_owner, p_kind) on conflict do nothing;
  select id into v from ledger_accounts where owner_id = p_owner and kind = p_kind;
  return v;
end $$;

-- Row locks in ascending id: two postings over the same accounts never wait on each other crosswise.
create function ledger_lock(p_ids bigint[]) returns void
language plpgsql as $$
begin
  perform 1 from ledger_accounts where id = any(p_ids) and not sharded order by id for update;
end $$;

-- Appends one entry and moves its account: the account row when unsharded (returns balance
-- after), else this backend's shard (returns null).
create function ledger_entry(
  p_posting uuid, p_acct bigint, p_type text, p_amount numeric, p_at timestamptz,
  p_reference text default null, p_related_type text default null, p_related_id text default null,
  p_call_id text default null, p_source text default null
) returns numeric
language plpgsql as $$
declare
  a record;
  v_after numeric;
begin
  select owner_id, kind, sharded into a from ledger_accounts where id = p_acct;
  if a.sharded then
    update ledger_account_shards set balance = balance + p_amount
    where account_id = p_acct and shard = pg_backend_pid() % 16;
  else
    update ledger_accounts set balance = balance + p_amount, updated_at = p_at
    where id = p_acct returning balance into v_after;
  end if;
  insert into entries (id, posting_id, account_id, owner_id, account_kind, type, amount, balance_after,
                       reference, related_entity_type, related_entity_id, call_id, source, created_at)
  values (ledger_uuid_v7(), p_posting, p_acct, a.owner_id, a.kind, p_type, p_amount, v_after,
          p_reference, p_related_type, p_related_id, p_call_id, p_source, p_at);
  return v_after;
end $$;

create function ledger_available(a ledger_accounts) returns numeric
language plpgsql immutable as $$
begin
  return a.balance + a.credit_limit - a.held;
end $$;

create function ledger_insufficient(a ledger_accounts, p_needed numeric) returns void
language plpgsql as $$
begin
  raise exception using errcode = 'SVC01',
    message = format('Insufficient balance: %s available, %s needed',
                     to_char(ledger_available(a), 'FM999999999999990.000000'), to_char(p_needed, 'FM999999999999990.000000'));
end $$;

-- A daily cap suspends new spending for the rest of the UTC day once reached.
create function ledger_cap_check(a ledger_accounts, p_at timestamptz) returns void
language plpgsql as $$
begin
  if a.cap_suspended_day is not null and a.cap_suspended_day = (p_at at time zone 'UTC')::date then
    raise exception using errcode = 'SVC01',
      message = 'Insufficient balance: the daily spend cap of this account is reached until the next UTC day';
  end if;
end $$;

create function ledger_money(p numeric) returns jsonb
language plpgsql immutable as $$
begin
  return to_jsonb(p::numeric(20, 6)::text);
end $$;

-- Top-up: customer +amount, top-up clearing -amount. Minimums per source (spec "Accounting facts").
create function ledger_topup(p_key text, p_owner uuid, p_amount numeric, p_source text, p_reference text, p_at timestamptz)
returns jsonb
language plpgsql as $$
declare
  c record;
  v_acct bigint;
  v_after numeric;
  v_min numeric;
begin
  perform ledger_amount(p_amount, 'amount');
  v_min := case p_source when 'card' then 5 when 'crypto' then 5 when 'wire' then 100 when 'x402' then 0 else null end;
  if v_min is null then
    raise exception using errcode = 'SVC02', message = format('Invalid top-up source %s: card, crypto, wire or x402', coalesce(p_source, 'null'));
  end if;
  if p_amount < v_min then
    raise exception using errcode = 'SVC02', message = format('Invalid amount: the minimum %s top-up is %s USD', p_source, v_min);
  end if;
  select * into c from ledger_claim(p_key, 'topup');
  if c.o_result is not null then return c.o_result; end if;
  v_acct := ledger_acct(p_owner, 'customer');
  perform ledger_lock(array[v_acct]);
  v_after := ledger_entry(c.o_id, v_acct, 'topup', p_amount, p_at, p_reference, 'topup', null, null, p_source);
  perform ledger_entry(c.o_id, ledger_platform('topup_clearing'), 'topup', -p_amount, p_at, p_reference, 'topup', null, null, p_source);
  return ledger_finish(c.o_id, p_key, jsonb_build_object('type', 'topup', 'accountId', p_owner, 'amount', ledger_money(p_amount),
    'balanceAfter', ledger_money(v_after), 'source', p_source));
end $$;

-- Test credit (invite code redemption): test-credit account +amount, test-credit pool -amount.
create function ledger_grant_test_credit(p_key text, p_owner uuid, p_amount numeric, p_reference text, p_at timestamptz)
returns jsonb
language plpgsql as $$
declare
  c record;
  v_acct bigint;
  v_after numeric;
begin
  perform ledger_amount(p_amount, 'amount');
  select * into c from ledger_claim(p_key, 'test_credit');
  if c.o_result is not null then return c.o_result; end if;
  v_acct := ledger_acct(p_owner, 'test_credit');
  perform ledger_lock(array[v_acct]);
  v_after := ledger_entry(c.o_id, v_acct, 'test_credit', p_amount, p_at, p_reference, 'invite_code');
  perform ledger_entry(c.o_id, ledger_platform('test_credit_pool'), 'test_credit', -p_amount, p_at, p_reference, 'invite_code');
  return ledger_finish(c.o_id, p_key, jsonb_build_object('type', 'test_credit', 'accountId', p_owner, 'amount', ledger_money(p_amount),
    'balanceAfter', ledger_money(v_after)));
end $$;

-- Appends one entry row whose balance effect is already applied.
create function ledger_put(
  p_posting uuid, p_acct bigint, p_owner uuid, p_kind text, p_type text, p_amount numeric, p_after numeric, p_at timestamptz,
  p_reference text, p_related_type text, p_related_id text, p_call_id text
) returns void
language plpgsql as $$
begin
  insert into entries (id, posting_id, account_id, owner_id, account_kind, type, amount, balance_after,
                       reference, related_entity_type, related_entity_id, call_id, created_at)
  values (ledger_uuid_v7(), p_posting, p_acct, p_owner, p_kind, p_type, p_amount, p_after,
          p_reference, p_related_type, p_related_id, p_call_id, p_at);
end $$;

-- The debit side of a charge or settlement, on already locked rows: buyer -amount (charge) and
-- -fee (platform_fee, its own entry); seller payable +amount (credit) or platform revenue; the
-- fee to the platform fee account. Test mode: everything goes to the test-credit pool.
-- The buyer row is updated once (balance and the day's spend). Returns the buyer row after.
create function ledger_post_charge(
  p_posting uuid, p_buyer_acct bigint, p_seller_acct bigint, p_test boolean, p_amount numeric, p_fee numeric,
  p_at timestamptz, p_reference text, p_related_type text, p_related_id text, p_call_id text
) returns ledger_accounts
language plpgsql as $$
declare
  d date := (p_at at time zone 'UTC')::date;
  v_total numeric := p_amount + p_fee;
  b ledger_accounts;
  v_seller_after numeric;
  v_shard integer := pg_backend_pid() % 16;
  v_kind text;
  v_platform bigint;
begin
  update ledger_accounts
     set balance = balance - v_total, updated_at = p_at,
         spend_today = case when p_test then spend_today when spend_day = d then spend_today + v_total else v_total end,
         spend_day = case when p_test then spend_day else d end
   where id = p_buyer_acct returning * into b;
  if p_amount > 0 then
    perform ledger_put(p_posting, p_buyer_acct, b.owner_id, b.kind, 'charge', -p_amount, b.balance + p_fee, p_at,
                       p_reference, p_related_type, p_related_id, p_call_id);
    if p_test or p_seller_acct is null then
      v_kind := case when p_test then 'test_credit_pool' else 'platform_revenue' end;
      v_platform := ledger_platform(v_kind);
      update ledger_account_shards set balance = balance + p_amount where account_id = v_platform and shard = v_shard;
      perform ledger_put(p_posting, v_platform, null, v_kind, 'charge', p_amount, null, p_at,
                         p_reference, p_related_type, p_related_id, p_call_id);
    else
      update ledger_accounts set balance = balance + p_amount, updated_at = p_at where id = p_seller_acct
      returning balance into v_seller_after;
      perform ledger_put(p_posting, p_seller_acct, (select owner_id from ledger_accounts where id = p_seller_acct), 'seller_payable',
                         'credit', p_amount, v_seller_after, p_at, p_reference, p_related_type, p_related_id, p_call_id);
    end if;
  end if;
  if p_fee > 0 then
    perform ledger_put(p_posting, p_buyer_acct, b.owner_id, b.kind, 'platform_fee', -p_fee, b.balance, p_at,
                       p_reference, p_related_type, p_related_id, p_call_id);
    v_kind := case when p_test then 'test_credit_pool' else 'platform_fee' end;
    v_platform := ledger_platform(v_kind);
    update ledger_account_shards set balance = balance + p_fee where account_id = v_platform and shard = v_shard;
    perform ledger_put(p_posting, v_platform, null, v_kind, 'platform_fee', p_fee, null, p_at,
                       p_reference, p_related_type, p_related_id, p_call_id);
  end if;
  return b;
end $$;

-- After a live debit: true when the day's spend just reached the cap (suspended until the next UTC day).
create function ledger_cap_reached(b ledger_accounts, p_at timestamptz) returns boolean
language plpgsql as $$
begin
  if coalesce(b.daily_spend_cap, 0) > 0 and b.spend_today >= b.daily_spend_cap
     and b.cap_suspended_day is distinct from (p_at at time zone 'UTC')::date then
    update ledger_accounts set cap_suspended_day = (p_at at time zone 'UTC')::date where id = b.id;
    return true;
  end if;
  return false;
end $$;

create function ledger_charge(
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
  if not p_test then perform ledger_cap_check(b, p_at); end if;
  if ledger_available(b) < v_total then perform ledger_insufficient(b, v_total); end if;
  b := ledger_post_charge(c.o_id, v_buyer, v_seller, p_test, p_amount, coalesce(p_fee, 0), p_at,
                          p_reference, p_related_type, p_related_id, p_call_id);
  v_after := b.balance;
  if not p_test then v_capped := ledger_cap_reached(b, p_at); end if;
  return ledger_finish(c.o_id, p_key, jsonb_build_object('type', 'charge', 'accountId', p_buyer, 'mode', case when p_test then 'test' else 'live' end,
    'amount', ledger_money(p_amount), 'fee', ledger_money(coalesce(p_fee, 0)), 'total', ledger_money(v_total),
    'balanceAfter', ledger_money(v_after), 'balanceBefore', ledger_money(v_after + v_total), 'capReached', v_capped));
end $$;

-- Reverses a whole charge (or settlement) once: buyer entries come back as refund, seller and
-- platform sides as refund_reversal.
create function ledger_refund(p_key text, p_charge_posting uuid, p_reference text, p_at timestamptz) returns jsonb
language plpgsql as $$
declare
  c record;
  o record;
  e record;
  a ledger_accounts;
  v_buyer_acct bigint;
  v_owner uuid;
  v_total numeric := 0;
  v_after numeric;
begin
  select * into c from ledger_claim(p_key, 'refund');
  if c.o_result is not null then return c.o_result; end if;
  select * into o from postings where id = p_charge_posting;
  if not found or o.type not in ('charge', 'settle') then
    raise exception using errcode = 'SVC03', message = format('Unknown charge %s', p_charge_posting);
  end if;
  perform ledger_lock(array(select distinct account_id from entries where posting_id = p_charge_posting));
  -- After the locks: a concurrent refund of the same charge has committed by now.
  if exists (select 1 from postings where refund_of = p_charge_posting) then
    raise exception using errcode = 'SVC02', message = 'Invalid refund: this charge is already refunded';
  end if;
  -- Seller payables must still hold what is taken back.
  for e in select account_id, sum(amount) as amount from entries where posting_id = p_charge_posting
            and account_kind = 'seller_payable' group by account_id loop
    select * into a from ledger_accounts where id = e.account_id;
    if ledger_available(a) < e.amount then perform ledger_insufficient(a, e.amount); end if;
  end loop;
  for e in select * from entries where posting_id = p_charge_posting order by id loop
    if e.account_kind in ('customer', 'test_credit') then
      v_after := ledger_entry(c.o_id, e.account_id, 'refund', -e.amount, p_at, p_reference, e.related_entity_type, e.related_entity_id, e.call_id);
      v_total := v_total - e.amount;
      v_buyer_acct := e.account_id;
      v_owner := e.owner_id;
    else
      perform ledger_entry(c.o_id, e.account_id, 'refund_reversal', -e.amount, p_at, p_reference, e.related_entity_type, e.related_entity_id, e.call_id);
    end if;
  end loop;
  if v_buyer_acct is null then
    raise exception using errcode = 'SVC02', message = 'Invalid refund: the posting charged nothing';
  end if;
  return ledger_finish(c.o_id, p_key, jsonb_build_object('type', 'refund', 'accountId', v_owner, 'refundOf', p_charge_posting,
    'amount', ledger_money(v_total), 'balanceAfter', ledger_money(v_after)));
end $$;

-- Operator to one of its sub-accounts: operator -amount (transfer), sub-account +amount (credit).
create function ledger_transfer(p_key text, p_from uuid, p_to uuid, p_amount numeric, p_reference text, p_at timestamptz)
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
  if not exists (select 1 from accounts where id = p_to and parent_id = p_from) then
    raise exception using errcode = 'SVC03', message = 'Unknown sub-account: transfers go from an operator to its own sub-account';
  end if;
  v_from := ledger_acct(p_from, 'customer');
  v_to := ledger_acct(p_to, 'customer');
  perform ledger_lock(array[v_from, v_to]);
  select * into a from ledger_accounts where id = v_from;
  if ledger_available(a) < p_amount then perform ledger_insufficient(a, p_amount); end if;
  v_after := ledger_entry(c.o_id, v_from, 'transfer', -p_amount, p_at, p_reference, 'sub_account', p_to::text);
  v_to_after := ledger_entry(c.o_id, v_to, 'credit', p_amount, p_at, p_reference, 'account', p_from::text);
  return ledger_finish(c.o_id, p_key, jsonb_build_object('type', 'transfer', 'accountId', p_from, 'toAccountId', p_to,
    'amount', ledger_money(p_amount), 'balanceAfter', ledger_money(v_after), 'toBalanceAfter', ledger_money(v_to_after)));
end $$;

-- Card chargeback: customer -amount, chargebacks account +amount (owed back to the card network).
create function ledger_chargeback(p_key text, p_owner uuid, p_amount numeric, p_reference text, p_at timestamptz)
returns jsonb
language plpgsql as $$
declare
  c record;
  v_acct bigint;
  a ledger_accounts;
  v_after numeric;
begin
  perform ledger_amount(p_amount, 'amount');
  select * into c from ledger_claim(p_key, 'chargeback');
  if c.o_result is not null then return c.o_result; end if;
  v_acct := ledger_acct(p_owner, 'customer');
  perform ledger_lock(array[v_acct]);
  select * into a from ledger_accounts where id = v_acct;
  if ledger_available(a) < p_amount then perform ledger_insufficient(a, p_amount); end if;
  v_after := ledger_entry(c.o_id, v_acct, 'chargeback', -p_amount, p_at, p_reference, 'topup');
  perform ledger_entry(c.o_id, ledger_platform('chargebacks'), 'chargeback', p_amount, p_at, p_reference, 'topup');
  return ledger_finish(c.o_id, p_key, jsonb_build_object('type', 'chargeback', 'accountId', p_owner,
    'amount', ledger_money(p_amount), 'balanceAfter', ledger_money(v_after)));
end $$;

-- Payout of seller earnings: seller payable -amount, top-up clearing +amount (money leaving).
create function ledger_payout(p_key text, p_seller uuid, p_amount numeric, p_reference text, p_at timestamptz)
returns jsonb
language plpgsql as $$
declare
  c record;
  v_acct bigint;
  a ledger_accounts;
  v_after numeric;
begin
  perform ledger_amount(p_amount, 'amount');
  select * into c from ledger_claim(p_key, 'payout');
  if c.o_result is not null then return c.o_result; end if;
  v_acct := ledger_acct(p_seller, 'seller_payable');
  perform ledger_lock(array[v_acct]);
  select * into a from ledger_accounts where id = v_acct;
  if ledger_available(a) < p_amount then perform ledger_insufficient(a, p_amount); end if;
  v_after := ledger_entry(c.o_id, v_acct, 'payout', -p_amount, p_at, p_reference, 'payout');
  perform ledger_entry(c.o_id, ledger_platform('topup_clearing'), 'payout', p_amount, p_at, p_reference, 'payout');
  return ledger_finish(c.o_id, p_key, jsonb_build_object('type', 'payout', 'accountId', p_seller,
    'amount', ledger_money(p_amount), 'balanceAfter', ledger_money(v_after)));
end $$;

-- Two-phase: reserve an amount of the available balance until settled, released or expired.
create function ledger_hold(
  p_key text, p_owner uuid, p_amount numeric, p_test boolean, p_expires_at timestamptz,
  p_reference text, p_related_type text, p_related_id text, p_call_id text, p_at timestamptz
) returns jsonb
language plpgsql as $$
declare
  c record;
  v_acct bigint;
  a ledger_accounts;
  v_hold uuid := ledger_uuid_v7();
begin
  perform ledger_amount(p_amount, 'amount');
  if p_expires_at is null or p_expires_at <= p_at then
    raise exception using errcode = 'SVC02', message = 'Invalid hold: it must expire in the future';
  end if;
  select * into c from ledger_claim(p_key, 'hold');
  if c.o_result is not null then return c.o_result; end if;
  v_acct := ledger_acct(p_owner, case when p_test then 'test_credit' else 'customer' end);
  perform ledger_lock(array[v_acct]);
  select * into a from ledger_accounts where id = v_acct;
  if not p_test then perform ledger_cap_check(a, p_at); end if;
  if ledger_available(a) < p_amount then perform ledger_insufficient(a, p_amount); end if;
  update ledger_accounts set held = held + p_amount, updated_at = p_at where id = v_acct returning * into a;
  insert into holds (id, posting_key, account_id, owner_id, amount, expires_at, reference, related_entity_type, related_entity_id, call_id, created_at)
  values (v_hold, p_key, v_acct, p_owner, p_amount, p_expires_at, p_reference, p_related_type, p_related_id, p_call_id, p_at);
  return ledger_finish(c.o_id, p_key, jsonb_build_object('type', 'hold', 'holdId', v_hold, 'accountId', p_owner,
    'mode', case when p_test then 'test' else 'live' end, 'amount', ledger_money(p_amount),
    'available', ledger_money(ledger_available(a))));
end $$;

-- Closes an open hold (already locked) and gives its amount back to the available balance.
create function ledger_unhold(p_hold holds, p_status text, p_settled numeric, p_at timestamptz) returns void
language plpgsql as $$
begin
  perform ledger_lock(array[p_hold.account_id]);
  update ledger_accounts set held = held - p_hold.amount, updated_at = p_at where id = p_hold.account_id;
  update holds set status = p_status, closed_at = p_at, settled_amount = p_settled where id = p_hold.id;
end $$;

create function ledger_open_hold(p_hold uuid) returns holds
language plpgsql as $$
declare h holds;
begin
  -- Hold row first, then accounts: the same order in settle, release and the sweeper.
  select * into h from holds where id = p_hold for update;
  if not found then
    raise exception using errcode = 'SVC03', message = format('Unknown hold %s', p_hold);
  end if;
  if h.status <> 'open' then
    raise exception using errcode = 'SVC02', message = format('Invalid hold %s: already %s', p_hold, h.status);
  end if;
  return h;
end $$;

-- Posts the final amount of a hold (amount to the seller or platform, fee to the platform) and
-- releases the rest. A final amount above the hold is posted only when the balance covers it.
create function ledger_settle(
  p_key text, p_hold uuid, p_seller uuid, p_amount numeric, p_fee numeric,
  p_reference text, p_related_type text, p_related_id text, p_call_id text, p_at timestamptz
) returns jsonb
language plpgsql as $$
declare
  c record;
  h holds;
  a ledger_accounts;
  v_seller bigint;
  v_test boolean;
  v_total numeric;
  v_after numeric;
  v_capped boolean := false;
begin
  perform ledger_amount(p_amount, 'amount', true);
  perform ledger_amount(coalesce(p_fee, 0), 'fee', true);
  v_total := p_amount + coalesce(p_fee, 0);
  select * into c from ledger_claim(p_key, 'settle');
  if c.o_result is not null then return c.o_result; end if;
  h := ledger_open_hold(p_hold);
  select * into a from ledger_accounts where id = h.account_id;
  v_test := a.kind = 'test_credit';
  if not v_test and p_seller is not null and v_total > 0 then
    v_seller := ledger_acct(p_seller, 'seller_payable');
  end if;
  perform ledger_lock(array[h.account_id, v_seller]);
  update ledger_accounts set held = held - h.amount where id = h.account_id returning * into a;
  update holds set status = 'settled', closed_at = p_at, settled_amount = v_total where id = h.id;
  if v_total > 0 then
    if ledger_available(a) < v_total then perform ledger_insufficient(a, v_total); end if;
    a := ledger_post_charge(c.o_id, h.account_id, v_seller, v_test, p_amount, coalesce(p_fee, 0), p_at,
                            coalesce(p_reference, h.reference), coalesce(p_related_type, h.related_entity_type),
                            coalesce(p_related_id, h.related_entity_id), coalesce(p_call_id, h.call_id));
    v_after := a.balance;
    if not v_test then v_capped := ledger_cap_reached(a, p_at); end if;
  else
    v_after := a.balance;
  end if;
  return ledger_finish(c.o_id, p_key, jsonb_build_object('type', 'settle', 'holdId', h.id, 'accountId', h.owner_id,
    'mode', case when v_test then 'test' else 'live' end, 'amount', ledger_money(p_amount), 'fee', ledger_money(coalesce(p_fee, 0)),
    'total', ledger_money(v_total), 'released', ledger_money(greatest(h.amount - v_total, 0)),
    'balanceAfter', ledger_money(v_after), 'balanceBefore', ledger_money(v_after + v_total), 'capReached', v_capped));
end $$;

create function ledger_release(p_key text, p_hold uuid, p_at timestamptz) returns jsonb
language plpgsql as $$
declare
  c record;
  h holds;
begin
  select * into c from ledger_claim(p_key, 'release');
  if c.o_result is not null then return c.o_result; end if;
  h := ledger_open_hold(p_hold);
  perform ledger_unhold(h, 'released', null, p_at);
  return ledger_finish(c.o_id, p_key, jsonb_build_object('type', 'release', 'holdId', h.id, 'accountId', h.owner_id,
    'released', ledger_money(h.amount)));
end $$;

-- Moves an open hold's expiry (a live call still running keeps its hold).
create function ledger_extend_hold(p_hold uuid, p_expires_at timestamptz) returns boolean
language sql as $$
  update holds set expires_at = p_expires_at where id = p_hold and status = 'open' returning true
$$;

-- Releases holds whose owner is gone: open past their expiry. Skips holds being settled now.
create function ledger_sweep_holds(p_now timestamptz, p_limit integer) returns integer
language plpgsql as $$
declare
  h holds;
  n integer := 0;
begin
  for h in select * from holds where status = 'open' and expires_at < p_now
           order by expires_at limit p_limit for update skip locked loop
    perform ledger_unhold(h, 'expired', null, p_now);
    n := n + 1;
  end loop;
  return n;
end $$;

-- Credit limit, daily spend cap (null or 0: none). A limit is never lowered below what is spent.
create function ledger_set_limits(p_owner uuid, p_credit_limit numeric, p_daily_cap numeric, p_at timestamptz) returns void
language plpgsql as $$
declare
  v_acct bigint;
  a ledger_accounts;
begin
  perform ledger_amount(p_credit_limit, 'creditLimit', true);
  if p_daily_cap is not null then perform ledger_amount(p_daily_cap, 'dailySpendCap', true); end if;
  v_acct := ledger_acct(p_owner, 'customer');
  perform ledger_lock(array[v_acct]);
  select * into a from ledger_accounts where id = v_acct;
  if a.balance + p_credit_limit - a.held < 0 then
    raise exception using errcode = 'SVC01',
      message = 'Insufficient balance: the account already uses more than this credit limit';
  end if;
  update ledger_accounts set credit_limit = p_credit_limit, daily_spend_cap = nullif(p_daily_cap, 0),
         -- a raised or removed cap lifts today's suspension at once
         cap_suspended_day = case when coalesce(nullif(p_daily_cap, 0), 0) = 0
                                     or (spend_day = cap_suspended_day and spend_today < p_daily_cap)
                                  then null else cap_suspended_day end,
         updated_at = p_at
   where id = v_acct;
end $$;

-- Balances of one owner: live balance, holds, credit limit, test credit.
create view ledger_owner_balances as
select a.owner_id,
       coalesce(sum(a.balance) filter (where a.kind = 'customer'), 0) as balance,
       coalesce(sum(a.held) filter (where a.kind = 'customer'), 0) as held,
       coalesce(sum(a.credit_limit) filter (where a.kind = 'customer'), 0) as credit_limit,
       coalesce(sum(a.balance) filter (where a.kind = 'test_credit'), 0) as test_credit,
       coalesce(sum(a.held) filter (where a.kind = 'test_credit'), 0) as test_held,
       coalesce(sum(a.balance) filter (where a.kind = 'seller_payable'), 0) as payable
from ledger_accounts a where a.owner_id is not null group by a.owner_id;

-- Every account's balance as stored (shards summed), for reconciliation and the invariant tests.
create view ledger_account_balances as
select a.id, a.owner_id, a.kind,
       case when a.sharded then (select coalesce(sum(s.balance), 0) from ledger_account_shards s where s.account_id = a.id)
            else a.balance end as balance
from ledger_accounts a;
