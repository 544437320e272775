-- The in-app feed's events (src/modules/notifications/kinds.ts), grown by the newer events:
-- marketplace trades, reports and notices, card top-ups, billing alerts and exports, numbers,
-- revenue share, interconnections and the team. Keep in step with kinds.ts (a test compares them).
create or replace function notification_event(name text) returns boolean
  language sql immutable parallel safe
  as $$ select name = any (array['balance.low', 'topup.confirmed', 'sub_account.balance_low', 'sub_account.suspended', 'sub_account.resumed', 'sub_account.topup_requested', 'sub_account.margin_below_floor', 'offer.received', 'route.purchased', 'sell_rate.changed', 'cost_rate.scheduled', 'invoice.issued', 'invoice.payment', 'campaign.completed', 'payout.requested', 'payout.approved', 'payout.rejected', 'payout.paid', 'kyc.verified', 'kyc.rejected', 'support_ticket.replied', 'offer.accepted', 'offer.declined', 'offer.expired', 'route.access_requested', 'route.access_decided', 'route.message_received', 'route.report_received', 'route.report_answered', 'route.report_resolved', 'route.suspended', 'route.rate_increase_scheduled', 'topup.failed', 'topup.chargeback', 'topup.chargeback_reversed', 'auto_recharge.failed', 'billing.spending_alert', 'billing.export_completed', 'number.purchased', 'number.activated', 'number.renewed', 'number.suspended', 'number.released', 'number.listing_request.reviewed', 'revenue_share.fraud_flagged', 'revenue_share.flag_resolved', 'revenue_share.earnings_released', 'interconnection.requested', 'interconnection.accepted', 'interconnection.declined', 'interconnection.suspended', 'interconnection.resumed', 'interconnection.ended', 'team.invitation_sent', 'team.member_joined', 'team.member_role_changed', 'team.member_removed']) $$;

-- The partial index's predicate was evaluated with the old list: rebuild it so the feed's scan
-- finds the rows of the added events written before this migration.
reindex index events_notification_idx;
