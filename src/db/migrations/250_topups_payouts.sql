-- Top-ups by card (Stripe PaymentIntents), bank wire (reference matched by the operator), x402 and
-- operator credits, in one history with receipts; auto-recharge; payouts of seller earnings.

create domain topup_method as text check (value in ('card', 'wire', 'crypto', 'x402'));
create domain topup_status as text
  check (value in ('pending', 'awaiting_funds', 'succeeded', 'failed', 'canceled', 'expired', 'disputed', 'charged_back'));

create sequence topup_receipt_seq;

create table topups (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  method topup_method not null,
  -- 'auto': started by auto-recharge; 'operator': credited by svcctl; 'customer' otherwise.
  origin text not null default 'customer' check (origin in ('customer', 'auto', 'operator')),
  amount numeric(20, 6) not null check (amount > 0.0),
  -- What was credited (a wire may arrive short or over); null until credited.
  credited_amount numeric(20, 6),
  status topup_status not null,
  reference text unique,
  stripe_payment_intent text unique,
  stripe_client_secret text,
  posting_id uuid,
  chargeback_posting_id uuid,
  -- What a chargeback could not take from the balance yet: taken from the account's next credits.
  chargeback_outstanding numeric(20, 6) not null default 0 check (chargeback_outstanding >= 0.0),
  failure_reason text,
  card_brand text,
  card_last4 text,
  receipt_number bigint unique,
  -- The account's billing identity frozen when the top-up was credited: a receipt never changes.
  billed_to jsonb,
  expires_at timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  completed_at timestamptz
);
create index topups_account_id on topups (account_id, id desc);
create index topups_awaiting_wire on topups (expires_at) where status = 'awaiting_funds';

-- A Stripe customer per account, made on the first card top-up that saves its card.
create table stripe_customers (
  account_id uuid primary key references accounts (id),
  customer_id text not null unique,
  payment_method text,
  card_brand text,
  card_last4 text,
  updated_at timestamptz not null
);

-- Each Stripe event id once: Stripe retries deliveries and may send one event more than once.
create table stripe_events (
  id text primary key,
  type text not null,
  received_at timestamptz not null
);

create table auto_recharge (
  account_id uuid primary key references accounts (id),
  enabled boolean not null default false,
  threshold numeric(20, 6) not null check (threshold >= 0.0),
  amount numeric(20, 6) not null check (amount >= 5.0),
  -- At most this much auto-recharged per UTC day (runaway spend guard).
  daily_limit numeric(20, 6) not null,
  last_attempt_at timestamptz,
  last_failure text,
  updated_at timestamptz not null
);

create domain payout_status as text check (value in ('pending_approval', 'paid', 'rejected', 'canceled'));

create table payouts (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  amount numeric(20, 6) not null check (amount > 0.0),
  status payout_status not null,
  method text not null check (method in ('wire')),
  -- Bank details as given; only the last 4 characters of the account number leave the API.
  destination jsonb not null,
  note text,
  posting_id uuid,
  review_note text,
  reviewed_by uuid references accounts (id),
  reviewed_at timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create index payouts_account_id on payouts (account_id, id desc);
create index payouts_pending on payouts (account_id) where status = 'pending_approval';

-- A card chargeback is taken by the card network whatever the balance holds. The balance never
-- goes below what its credit limit allows (ledger_accounts' check), so this takes what is
-- available now and reports the rest as outstanding, which the caller takes from later credits.
-- Unlike ledger_chargeback (an operator's reversal) it never refuses. Nothing to take: no posting.
create function ledger_card_chargeback(p_key text, p_owner uuid, p_amount numeric, p_reference text, p_at timestamptz)
returns jsonb
language plpgsql as $$
declare
  c record;
  v_acct bigint;
  a ledger_accounts;
  v_take numeric;
  v_after numeric;
begin
  perform ledger_amount(p_amount, 'amount');
  select * into c from ledger_claim(p_key, 'chargeback');
  if c.o_result is not null then return c.o_result; end if;
  v_acct := ledger_acct(p_owner, 'customer');
  perform ledger_lock(array[v_acct]);
  select * into a from ledger_accounts where id = v_acct;
  v_take := least(p_amount, greatest(ledger_available(a), 0));
  if v_take <= 0 then
    return jsonb_build_object('type', 'chargeback', 'accountId', p_owner, 'amount', ledger_money(0),
      'outstanding', ledger_money(p_amount), 'balanceAfter', ledger_money(a.balance), 'postingId', null, 'replayed', false);
  end if;
  v_after := ledger_entry(c.o_id, v_acct, 'chargeback', -v_take, p_at, p_reference, 'topup');
  perform ledger_entry(c.o_id, ledger_platform('chargebacks'), 'chargeback', v_take, p_at, p_reference, 'topup');
  return ledger_finish(c.o_id, p_key, jsonb_build_object('type', 'chargeback', 'accountId', p_owner,
    'amount', ledger_money(v_take), 'outstanding', ledger_money(p_amount - v_take), 'balanceAfter', ledger_money(v_after)));
end $$;

-- A dispute the merchant won: the card network returns the money taken by the chargeback.
create function ledger_card_chargeback_won(p_key text, p_owner uuid, p_amount numeric, p_reference text, p_at timestamptz)
returns jsonb
language plpgsql as $$
declare
  c record;
  v_acct bigint;
  v_after numeric;
begin
  perform ledger_amount(p_amount, 'amount');
  select * into c from ledger_claim(p_key, 'chargeback');
  if c.o_result is not null then return c.o_result; end if;
  v_acct := ledger_acct(p_owner, 'customer');
  perform ledger_lock(array[v_acct]);
  v_after := ledger_entry(c.o_id, v_acct, 'chargeback', p_amount, p_at, p_reference, 'topup');
  perform ledger_entry(c.o_id, ledger_platform('chargebacks'), 'chargeback', -p_amount, p_at, p_reference, 'topup');
  return ledger_finish(c.o_id, p_key, jsonb_build_object('type', 'chargeback', 'accountId', p_owner,
    'amount', ledger_money(p_amount), 'balanceAfter', ledger_money(v_after)));
end $$;
