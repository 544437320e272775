-- Interconnection events become in-app notifications (issue 24): the list of migration 242 with the
-- eight interconnection events appended. Keep in step with src/modules/notifications/kinds.ts.
-- The function is inlined into the feed index's predicate, so the index is made again with it.
drop index events_notification_idx;

create or replace function notification_event(name text) returns boolean
  language sql immutable parallel safe
  as $$ select name = any (array['balance.low', 'topup.confirmed', 'sub_account.balance_low', 'sub_account.suspended', 'sub_account.resumed', 'sub_account.topup_requested', 'sub_account.margin_below_floor', 'offer.received', 'route.purchased', 'sell_rate.changed', 'cost_rate.scheduled', 'invoice.issued', 'invoice.payment', 'campaign.completed', 'payout.requested', 'payout.approved', 'payout.rejected', 'payout.paid', 'kyc.verified', 'kyc.rejected', 'support_ticket.replied', 'interconnection.requested', 'interconnection.accepted', 'interconnection.declined', 'interconnection.suspended', 'interconnection.resumed', 'interconnection.ended', 'interconnection.expired', 'interconnection.statement_ready']) $$;

create index events_notification_idx on events (created_at) where notification_event(event);
