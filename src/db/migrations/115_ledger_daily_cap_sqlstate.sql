-- The daily spend cap refuses with its own SQLSTATE, SVC04, instead of sharing SVC01 with a
-- balance too small. Callers told the two apart by the message's text ("daily spend cap"), so a
-- reworded message would have turned a cap into a balance refusal (a SIP 402 and a retry from the
-- exact balance instead of a 403). The message is unchanged: the spec answers both with
-- 400 VALIDATION_ERROR and a message starting "Insufficient balance".
--
-- Only the errcode changes; the bodies are those of 010 (ledger_cap_check, which every single-item
-- function calls) and 016 (ledger_hold_many, whose refusal element carries the code).

create or replace function ledger_cap_check(a ledger_accounts, p_at timestamptz) returns void
language plpgsql as $$
begin
  if a.cap_suspended_day is not null and a.cap_suspended_day = (p_at at time zone 'UTC')::date then
    raise exception using errcode = 'SVC04',
      message = 'Insufficient balance: the daily spend cap of this account is reached until the next UTC day';
  end if;
end $$;

-- p: [{key, accountId, amount, test, expiresAt, reference, relatedEntityType, relatedEntityId, callId}].
-- Returns one element per item, in order: ledger_hold's result, or a refusal.
create or replace function ledger_hold_many(p jsonb, p_at timestamptz) returns jsonb
language plpgsql set enable_seqscan = off as $$
declare
  d date := (p_at at time zone 'UTC')::date;
  it record;
  r ledger_accounts;
  v_done jsonb;
  -- Results and posted keys in arrays: a jsonb value appended to item by item is copied whole each time.
  v_out jsonb[] := '{}';
  k_i integer;
  v_ids bigint[];
  v_res jsonb;
  v_kind text;
  v_avail numeric;
  k integer;
  q integer;
  v_posting uuid;
  v_hold uuid;
  -- The locked accounts and their running state.
  a_id bigint[] := '{}';
  a_owner uuid[] := '{}';
  a_kind text[] := '{}';
  a_balance numeric[] := '{}';
  a_limit numeric[] := '{}';
  a_held numeric[] := '{}';
  a_cap_day date[] := '{}';
  a_moved boolean[] := '{}';
  -- What the batch writes.
  p_ids uuid[] := '{}';
  p_keys text[] := '{}';
  p_results jsonb[] := '{}';
  h_ids uuid[] := '{}';
  h_keys text[] := '{}';
  h_accts bigint[] := '{}';
  h_owners uuid[] := '{}';
  h_amounts numeric[] := '{}';
  h_expires timestamptz[] := '{}';
  h_refs text[] := '{}';
  h_rtypes text[] := '{}';
  h_rids text[] := '{}';
  h_calls text[] := '{}';
begin
  if p is null or jsonb_typeof(p) <> 'array' then
    raise exception using errcode = 'SVC02', message = 'Invalid batch: an array of items';
  end if;
  for it in select * from jsonb_to_recordset(p) as x(key text, "accountId" uuid, amount numeric, test boolean, "expiresAt" timestamptz) loop
    perform ledger_amount(it.amount, 'amount');
    if it."expiresAt" is null or it."expiresAt" <= p_at then
      raise exception using errcode = 'SVC02', message = 'Invalid hold: it must expire in the future';
    end if;
  end loop;
  v_done := ledger_claim_many(array(select x.key from jsonb_to_recordset(p) as x(key text)));
  -- The payers' rows (made on first use; SVC03 for an unknown owner), then locked once, ascending.
  v_ids := array(select ledger_acct(x.owner, x.kind)
                   from (select distinct x."accountId" as owner, case when coalesce(x.test, false) then 'test_credit' else 'customer' end as kind
                           from jsonb_to_recordset(p) as x(key text, "accountId" uuid, test boolean)
                          where not v_done ? x.key) x);
  for r in select * from ledger_accounts a where a.id = any(v_ids) order by a.id for update
  loop
    a_id := a_id || r.id; a_owner := a_owner || r.owner_id; a_kind := a_kind || r.kind;
    a_balance := a_balance || r.balance; a_limit := a_limit || r.credit_limit; a_held := a_held || r.held;
    a_cap_day := a_cap_day || r.cap_suspended_day; a_moved := a_moved || false;
  end loop;

  for it in
    select * from rows from (jsonb_to_recordset(p) as (
             key text, "accountId" uuid, amount numeric, test boolean, "expiresAt" timestamptz, reference text,
             "relatedEntityType" text, "relatedEntityId" text, "callId" text)) with ordinality
           as x(key, owner, amount, test, expires, reference, rtype, rid, call_id, i)
     order by x.i
  loop
    if v_done ? it.key then
      v_out := v_out || (v_done -> it.key);
      continue;
    end if;
    k_i := array_position(p_keys, it.key);
    if k_i is not null then
      v_out := v_out || (p_results[k_i] || jsonb_build_object('replayed', true));
      continue;
    end if;
    v_kind := case when coalesce(it.test, false) then 'test_credit' else 'customer' end;
    k := null;
    for q in 1 .. coalesce(array_length(a_id, 1), 0) loop
      if a_owner[q] = it.owner and a_kind[q] = v_kind then k := q; exit; end if;
    end loop;
    v_avail := a_balance[k] + a_limit[k] - a_held[k];
    if not coalesce(it.test, false) and a_cap_day[k] is not null and a_cap_day[k] = d then
      v_out := v_out || jsonb_build_object('refused', true, 'code', 'SVC04',
        'message', 'Insufficient balance: the daily spend cap of this account is reached until the next UTC day');
      continue;
    end if;
    if v_avail < it.amount then
      v_out := v_out || ledger_refusal(v_avail, it.amount);
      continue;
    end if;
    a_held[k] := a_held[k] + it.amount;
    a_moved[k] := true;
    v_hold := ledger_uuid_v7();
    v_posting := ledger_uuid_v7();
    v_res := jsonb_build_object('type', 'hold', 'holdId', v_hold, 'accountId', it.owner,
      'mode', case when coalesce(it.test, false) then 'test' else 'live' end, 'amount', ledger_money(it.amount),
      'available', ledger_money(v_avail - it.amount), 'postingId', v_posting);
    p_ids := p_ids || v_posting; p_keys := p_keys || it.key; p_results := p_results || v_res;
    h_ids := h_ids || v_hold; h_keys := h_keys || it.key; h_accts := h_accts || a_id[k]; h_owners := h_owners || it.owner;
    h_amounts := h_amounts || it.amount; h_expires := h_expires || it.expires; h_refs := h_refs || it.reference;
    h_rtypes := h_rtypes || it.rtype; h_rids := h_rids || it.rid; h_calls := h_calls || it.call_id;
    v_out := v_out || (v_res || jsonb_build_object('replayed', false));
  end loop;

  if coalesce(array_length(p_ids, 1), 0) > 0 then
    update ledger_accounts a set held = x.held, updated_at = p_at
      from unnest(a_id, a_held, a_moved) as x(id, held, moved)
     where a.id = x.id and x.moved;
    insert into holds (id, posting_key, account_id, owner_id, amount, expires_at, reference, related_entity_type, related_entity_id, call_id, created_at)
    select * , p_at from unnest(h_ids, h_keys, h_accts, h_owners, h_amounts, h_expires, h_refs, h_rtypes, h_rids, h_calls);
    insert into postings (id, posting_key, type, created_at, result)
    select x.id, x.key, 'hold', now(), x.result from unnest(p_ids, p_keys, p_results) as x(id, key, result);
  end if;
  return to_jsonb(v_out);
end $$;

