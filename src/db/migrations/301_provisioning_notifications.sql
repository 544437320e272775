-- A number's CNAM listing or emergency address changing status at the provisioning provider becomes an
-- in-app notification: the whole list of migration 300 with `number.provisioning.updated` appended (a
-- list, not a delta, so that this migration alone says what the feed holds). Keep in step with
-- src/modules/notifications/kinds.ts. The function is inlined into the feed index's predicate, so the
-- index is made again with it.
drop index events_notification_idx;

create or replace function notification_event(name text) returns boolean
  language sql immutable parallel safe
  as $$ select name = any (array['balance.low', 'topup.confirmed', 'sub_account.balance_low', 'sub_account.suspended', 'sub_account.resumed', 'sub_account.topup_requested', 'sub_account.margin_below_floor', 'offer.received', 'route.purchased', 'sell_rate.changed', 'cost_rate.scheduled', 'invoice.issued', 'invoice.payment', 'campaign.completed', 'payout.requested', 'payout.approved', 'payout.rejected', 'payout.paid', 'kyc.verified', 'kyc.rejected', 'support_ticket.replied', 'offer.accepted', 'offer.declined', 'offer.expired', 'route.access_requested', 'route.access_decided', 'route.message_received', 'route.report_received', 'route.report_answered', 'route.report_resolved', 'route.suspended', 'route.rate_increase_scheduled', 'topup.failed', 'topup.chargeback', 'topup.chargeback_reversed', 'auto_recharge.failed', 'billing.spending_alert', 'billing.export_completed', 'number.purchased', 'number.activated', 'number.renewed', 'number.suspended', 'number.released', 'number.listing_request.reviewed', 'revenue_share.fraud_flagged', 'revenue_share.flag_resolved', 'revenue_share.earnings_released', 'interconnection.requested', 'interconnection.accepted', 'interconnection.declined', 'interconnection.suspended', 'interconnection.resumed', 'interconnection.ended', 'team.invitation_sent', 'team.member_joined', 'team.member_role_changed', 'team.member_removed', 'account.deletion_scheduled', 'account.deletion_cancelled', 'account.export_completed', 'interconnection.expired', 'interconnection.statement_ready', 'number.port_in.updated', 'interconnection.cap_reached', 'number.provisioning.updated']) $$;

create index events_notification_idx on events (created_at) where notification_event(event);
