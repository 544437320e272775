-- Issue 26: many charges in one round trip (owned by src/ledger). The daemon's charges arrive
-- from many requests at once; each costs a round trip and a statement's fixed work on both sides
-- (parse, bind, protocol, JSON result), which is what keeps the Node-driven charge at half of
-- pgbench's rate while the server-side work alone is close to it. ledger_charge_many posts each
-- item through ledger_charge itself, so every rule and invariant stays in one function.
--
-- Each item runs in its own exception block (a subtransaction): an item that fails rolls back
-- alone and comes back as {"error": {"code", "message"}} with the SQLSTATE and message the single
-- call would have raised; the other items commit. With p_threshold given, an item with balance
-- events to emit is refused the same way (SVC90, ledger_debit_signal strict) so the caller posts it
-- again in a transaction with its outbox rows. Callers keep a batch at or under 32 items: more
-- than 64 subtransactions with xids in one transaction overflow the backend's subxid cache, and
-- every other backend's snapshot checks then go to pg_subtrans.
create function ledger_charge_many(p_items jsonb, p_at timestamptz, p_threshold numeric)
returns jsonb language plpgsql as $$
declare
  x jsonb;
  r jsonb;
  v_out jsonb := '[]';
begin
  -- Every account row the items debit or credit, locked at once in ascending id (ledger_lock's
  -- order). Each item then takes rows this transaction already holds, so two batches in flight
  -- never hold rows crosswise: item by item, two batches sharing a busy seller would deadlock
  -- (and wait deadlock_timeout before one item is retried alone).
  perform 1 from ledger_accounts a
   where a.owner_id = any(array(
           select (e->>'accountId')::uuid from jsonb_array_elements(p_items) e
           union
           select (e->>'sellerId')::uuid from jsonb_array_elements(p_items) e
            where e->>'sellerId' is not null and not coalesce((e->>'test')::boolean, false)))
     and a.kind in ('customer', 'test_credit', 'seller_payable')
   order by a.id
     for update;
  for x in select value from jsonb_array_elements(p_items) loop
    begin
      r := ledger_charge(x->>'key', (x->>'accountId')::uuid, (x->>'sellerId')::uuid, (x->>'amount')::numeric,
                         coalesce((x->>'fee')::numeric, 0), coalesce((x->>'test')::boolean, false), x->>'reference',
                         x->>'relatedEntityType', x->>'relatedEntityId', x->>'callId', p_at);
      if p_threshold is not null then
        perform ledger_debit_signal(r, p_threshold, true);
      end if;
      v_out := v_out || jsonb_build_array(r);
    exception when others then
      v_out := v_out || jsonb_build_array(jsonb_build_object('error',
                 jsonb_build_object('code', sqlstate, 'message', sqlerrm)));
    end;
  end loop;
  return v_out;
end $$;
