-- Issue 26: ledger_charge_many (223) without a subtransaction per item where the outcome is
-- known before posting (owned by src/ledger). Same signature, results, errors and rules.
--
-- 223 posted every item in its own exception block, so that an item that fails rolls back
-- alone. Each block is a subtransaction with an xid of its own, and the bench's grouped charges
-- spent more server CPU per charge on them than grouping saved (ledger bench: 775 us per charge
-- grouped against 653 us one by one). Most items cannot fail: the batch has locked every row
-- they touch, so whether an item can pay is known before it posts. Such an item is posted by
-- ledger_charge directly; an item whose outcome this function does not decide for itself goes
-- through 223's exception block, so it fails alone exactly as before.
--
-- An item is posted directly ("safe") when all of these hold, each read from the rows locked
-- below and kept current as the batch posts:
--   - its key and amounts pass ledger_charge's checks (the amounts as plain decimal text, so a
--     cast cannot fail);
--   - its buyer's row (and its seller's, for a live charge with a seller) already exists, and no
--     item of this batch for that buyer went through the exception block;
--   - the buyer has no daily cap and is not suspended by one (the cap's rules stay ledger_charge's);
--   - balance + credit limit − held covers amount + fee, with the balance after this batch's
--     earlier charges of the buyer.
-- With p_threshold given, a safe item whose debit would cross its account's low-balance line
-- (ledger_debit_signal's rule, read once for all buyers) is refused with SVC90 and posts
-- nothing, as 223 refused it after rolling it back; the caller posts it alone with its events.
-- Any other error raised in the batch (an invalid account id, say) fails the whole call, as an
-- invalid id failed 223's locking statement; nothing of the call is then posted.
create or replace function ledger_charge_many(p_items jsonb, p_at timestamptz, p_threshold numeric)
returns jsonb language plpgsql as $$
declare
  x record;
  r jsonb;
  v_out jsonb[] := '{}';
  -- The locked rows, one element each, keyed 'owner:kind': a buyer's balance, slack (credit
  -- limit − held), capped (a daily cap set, or suspended by one) and line (its low-balance
  -- threshold, null without events). A key set to null: not safe for the rest of the batch.
  v_keys text[];
  v_balance numeric[];
  v_slack numeric[];
  v_capped boolean[];
  v_line numeric[];
  v_key text;
  i integer;
  v_amount numeric;
  v_fee numeric;
  v_total numeric;
begin
  -- Every account row the items debit or credit, locked at once in ascending id (ledger_lock's
  -- order, as 223), with what the checks below read of each buyer.
  select array_agg(l.owner_id || ':' || l.kind), array_agg(l.balance), array_agg(l.credit_limit - l.held),
         array_agg(l.cap_suspended_day is not null or coalesce(l.daily_spend_cap > 0.0, false)),
         array_agg(case when p_threshold is null or l.kind <> 'customer' then null
                        when acc.parent_id is null then coalesce(pr.low_balance_threshold, p_threshold)
                        else coalesce(st.sub_low_balance_threshold, 5) end)
    into v_keys, v_balance, v_slack, v_capped, v_line
    from (select a.owner_id, a.kind, a.balance, a.credit_limit, a.held, a.cap_suspended_day, a.daily_spend_cap
            from ledger_accounts a
           where a.owner_id = any(array(
                   select (e->>'accountId')::uuid from jsonb_array_elements(p_items) e
                   union
                   select (e->>'sellerId')::uuid from jsonb_array_elements(p_items) e
                    where e->>'sellerId' is not null and not coalesce((e->>'test')::boolean, false)))
             and a.kind in ('customer', 'test_credit', 'seller_payable')
           order by a.id
             for update) l
    left join accounts acc on acc.id = l.owner_id and p_threshold is not null and l.kind = 'customer'
    left join account_profiles pr on pr.account_id = acc.id and acc.parent_id is null
    left join application_settings st on st.operator_id = acc.parent_id;

  -- The amounts as text: a cast that fails is an item's error, raised in its own block below.
  for x in
    select e.key, e."accountId" as buyer, e."sellerId" as seller, e.amount, e.fee, coalesce(e.test, false) as test,
           e.reference, e."relatedEntityType" as rtype, e."relatedEntityId" as rid, e."callId" as call_id
      from jsonb_to_recordset(p_items) as e(key text, "accountId" uuid, "sellerId" uuid, amount text, fee text, test boolean,
                                            reference text, "relatedEntityType" text, "relatedEntityId" text, "callId" text)
  loop
    v_key := x.buyer || case when x.test then ':test_credit' else ':customer' end;
    i := array_position(v_keys, v_key);
    v_total := null;
    if i is not null and not v_capped[i]
       and length(x.key) between 1 and 255
       and x.amount ~ '^[0-9]{1,14}(\.[0-9]{1,6})?$'
       and coalesce(x.fee, '0') ~ '^[0-9]{1,14}(\.[0-9]{1,6})?$'
       and (x.test or x.seller is null or array_position(v_keys, x.seller || ':seller_payable') is not null) then
      v_amount := x.amount::numeric;
      v_fee := coalesce(x.fee::numeric, 0);
      if v_amount + v_fee > 0 and v_balance[i] + v_slack[i] >= v_amount + v_fee then
        v_total := v_amount + v_fee;
      end if;
    end if;

    if v_total is not null then
      if not x.test and v_line[i] > 0 and v_balance[i] >= v_line[i] and v_balance[i] - v_total < v_line[i] then
        -- ledger_debit_signal's refusal (283), before anything is posted.
        v_out := v_out || jsonb_build_object('error', jsonb_build_object(
                   'code', 'SVC90', 'message', 'this posting has balance events to emit; post it in a transaction'));
        continue;
      end if;
      r := ledger_charge(x.key, x.buyer, x.seller, v_amount, v_fee, x.test, x.reference, x.rtype, x.rid, x.call_id, p_at);
      if not coalesce((r->>'replayed')::boolean, false) then
        v_balance[i] := v_balance[i] - v_total;
      end if;
      v_out := v_out || r;
      continue;
    end if;

    -- 223's path: the item in its own subtransaction, failing alone.
    begin
      r := ledger_charge(x.key, x.buyer, x.seller, x.amount::numeric, coalesce(x.fee::numeric, 0), x.test,
                         x.reference, x.rtype, x.rid, x.call_id, p_at);
      if p_threshold is not null then
        perform ledger_debit_signal(r, p_threshold, true);
      end if;
      v_out := v_out || r;
    exception when others then
      v_out := v_out || jsonb_build_object('error', jsonb_build_object('code', sqlstate, 'message', sqlerrm));
    end;
    -- What it changed of its buyer (a first row, a cap reached) is not tracked: the buyer's
    -- later items take this path too.
    if i is not null then
      v_keys[i] := null;
    end if;
  end loop;
  return to_jsonb(v_out);
end $$;
