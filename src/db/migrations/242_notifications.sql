-- The in-app notification feed, fed by the webhook outbox (`events`): a consumer reads the events
-- named by `notification_event` and writes a notification per the account's preferences.

-- Keep in step with src/modules/notifications/kinds.ts. Inlined into the index predicate, so an
-- insert into `events` of any other event costs one array test and no index entry.
create function notification_event(name text) returns boolean
  language sql immutable parallel safe
  as $$ select name = any (array['balance.low', 'topup.confirmed', 'sub_account.balance_low', 'sub_account.suspended', 'sub_account.resumed', 'sub_account.topup_requested', 'sub_account.margin_below_floor', 'offer.received', 'route.purchased', 'sell_rate.changed', 'cost_rate.scheduled', 'invoice.issued', 'invoice.payment', 'campaign.completed', 'payout.requested', 'payout.approved', 'payout.rejected', 'payout.paid', 'kyc.verified', 'kyc.rejected', 'support_ticket.replied']) $$;

create index events_notification_idx on events (created_at) where notification_event(event);

-- The event a notification came from: written once per event, whichever daemon reads it first.
alter table notifications add column event_id uuid;
create unique index notifications_event_idx on notifications (event_id) where event_id is not null;
create index notifications_unread_idx on notifications (account_id) where read_at is null;

-- Events the consumer has handled (whether or not they became a notification), pruned after the
-- late-commit window.
create table notification_feed_seen (
  event_id uuid primary key,
  seen_at timestamptz not null
);

create table notification_preferences (
  account_id uuid not null references accounts (id),
  kind text not null,
  in_app boolean not null,
  email boolean not null,
  updated_at timestamptz not null,
  primary key (account_id, kind)
);
