-- The interconnection cap event becomes an in-app notification: the list of migration 298 with
-- `interconnection.cap_reached` appended (numbered after 299, which another change may take for its own
-- kinds: a merge keeps both lists in this one). Keep in step with src/modules/notifications/kinds.ts.
-- The function is inlined into the feed index's predicate, so the index is made again with it.
-- Also here, being after migration 290: its usage trigger records each cap crossing in migration
-- 265's table (the interconnections module's job tells both sides of it).
drop index events_notification_idx;

create or replace function notification_event(name text) returns boolean
  language sql immutable parallel safe
  as $$ select name = any (array['balance.low', 'topup.confirmed', 'sub_account.balance_low', 'sub_account.suspended', 'sub_account.resumed', 'sub_account.topup_requested', 'sub_account.margin_below_floor', 'offer.received', 'route.purchased', 'sell_rate.changed', 'cost_rate.scheduled', 'invoice.issued', 'invoice.payment', 'campaign.completed', 'payout.requested', 'payout.approved', 'payout.rejected', 'payout.paid', 'kyc.verified', 'kyc.rejected', 'support_ticket.replied', 'offer.accepted', 'offer.declined', 'offer.expired', 'route.access_requested', 'route.access_decided', 'route.message_received', 'route.report_received', 'route.report_answered', 'route.report_resolved', 'route.suspended', 'route.rate_increase_scheduled', 'topup.failed', 'topup.chargeback', 'topup.chargeback_reversed', 'auto_recharge.failed', 'billing.spending_alert', 'billing.export_completed', 'number.purchased', 'number.activated', 'number.renewed', 'number.suspended', 'number.released', 'number.listing_request.reviewed', 'revenue_share.fraud_flagged', 'revenue_share.flag_resolved', 'revenue_share.earnings_released', 'interconnection.requested', 'interconnection.accepted', 'interconnection.declined', 'interconnection.suspended', 'interconnection.resumed', 'interconnection.ended', 'team.invitation_sent', 'team.member_joined', 'team.member_role_changed', 'team.member_removed', 'account.deletion_scheduled', 'account.deletion_cancelled', 'account.export_completed', 'interconnection.expired', 'interconnection.statement_ready', 'number.port_in.updated', 'interconnection.cap_reached']) $$;

create index events_notification_idx on events (created_at) where notification_event(event);

-- Migration 290's usage count, which also records the crossings it sees (once each by the key).
create or replace function svc_interconnection_usage() returns trigger language plpgsql as $$
declare
  ic interconnections%rowtype;
  side text;
  d_seconds bigint := case when new.kind = 'voice' then coalesce(new.billed_seconds, 0) else 0 end;
  d_messages bigint := case when new.kind = 'sms' then coalesce(new.segments, 0) else 0 end;
  d_amount numeric(20, 6) := coalesce(new.seller_credit, 0);
  u interconnection_usage%rowtype;
  crossed text[] := '{}';
begin
  select * into ic from interconnections where id = new.interconnection_id;
  if not found or (d_seconds = 0 and d_messages = 0 and d_amount = 0) then
    return null;
  end if;
  side := case when new.seller_id = ic.requester_id then 'peer' else 'requester' end;
  insert into interconnection_usage as x (interconnection_id, payer, period_start, seconds, messages, amount)
  values (ic.id, side, svc_interconnection_period_start(ic.period, new.created_at), d_seconds, d_messages, d_amount)
  on conflict (interconnection_id, payer, period_start) do update
    set seconds = x.seconds + excluded.seconds, messages = x.messages + excluded.messages,
        amount = x.amount + excluded.amount
  returning * into u;
  -- Concurrent settlements queue on the usage row above, so exactly one CDR crosses each cap.
  if ic.cap_minutes is not null and u.seconds >= ic.cap_minutes * 60 and u.seconds - d_seconds < ic.cap_minutes * 60 then
    crossed := crossed || 'minutes'::text;
  end if;
  if ic.cap_messages is not null and u.messages >= ic.cap_messages and u.messages - d_messages < ic.cap_messages then
    crossed := crossed || 'messages'::text;
  end if;
  if ic.cap_amount is not null and u.amount >= ic.cap_amount and u.amount - d_amount < ic.cap_amount then
    crossed := crossed || 'amount'::text;
  end if;
  if cardinality(crossed) > 0 then
    insert into interconnection_cap_crossings
      (interconnection_id, payer, period_start, cap, crossed_at, seconds, messages, amount)
    select ic.id, side, u.period_start, c, new.created_at, u.seconds, u.messages, u.amount from unnest(crossed) c
    on conflict do nothing;
    perform pg_notify('svc_interconnections', (case when side = 'requester' then ic.requester_id else ic.peer_id end)::text);
  end if;
  return null;
end $$;
