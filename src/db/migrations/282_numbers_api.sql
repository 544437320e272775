-- Phone numbers API (issue 22): holds on numbers, per-number settings, scheduled release, inbound
-- SMS prices, delivery receipts on number messages and de-duplication of SMSC re-sends.

-- A number held for one account for a few minutes: out of the catalogue until bought, cancelled
-- or expired (the sweep puts expired holds back on sale).
alter table did_numbers drop constraint did_numbers_state_check;
alter table did_numbers add constraint did_numbers_state_check
  check (state in ('available', 'reserved', 'assigned', 'withdrawn'));

create table did_reservations (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  number_id uuid not null references did_numbers (id),
  group_id uuid not null references did_groups (id),
  status text not null default 'held' check (status in ('held', 'bought', 'cancelled', 'expired')),
  did_id uuid references dids (id),
  expires_at timestamptz not null,
  created_at timestamptz not null,
  closed_at timestamptz
);
-- A number is held by one reservation at a time.
create unique index did_reservations_held_key on did_reservations (number_id) where status = 'held';
create index did_reservations_account_idx on did_reservations (account_id, id desc) where status = 'held';
create index did_reservations_expiry_idx on did_reservations (expires_at) where status = 'held';

-- Per-number settings of the owner.
alter table dids
  add column tags text[] not null default '{}',
  add column caller_name text check (caller_name ~ '^[A-Za-z0-9 .,&''-]{1,15}$'),
  add column emergency_address jsonb,
  -- A release the owner scheduled; the release sweep gives the number up at that time.
  add column release_at timestamptz;
create index dids_tags_idx on dids using gin (tags);
create index dids_release_at_idx on dids (release_at) where release_at is not null and status in ('active', 'suspended');

alter table did_events drop constraint did_events_kind_check;
alter table did_events add constraint did_events_kind_check
  check (kind in ('ordered', 'activated', 'renewed', 'renewal_failed', 'suspended', 'reactivated', 'released',
                  'routing_changed', 'auto_renew_changed', 'failed', 'release_scheduled', 'release_cancelled',
                  'settings_changed'));

-- Price of one received SMS on the group's numbers (null: free), paid by the renter.
alter table did_groups add column inbound_sms_rate numeric(20, 6) check (inbound_sms_rate >= 0.0);

alter table did_messages
  add column delivered_at timestamptz,
  -- The ledger posting of a received message's price.
  add column posting_id uuid;
create index did_messages_provider_idx on did_messages (provider_message_id)
  where direction = 'out' and provider_message_id is not null;

-- A number message sent through the SMS path follows its message's carrier receipt in the
-- receipt's own transaction, whichever module applies the receipt.
create function did_message_follow_receipt() returns trigger language plpgsql as $$
begin
  update did_messages dm
     set status = new.status,
         delivered_at = new.delivered_at,
         error = coalesce(new.error_code, dm.error),
         cost = case when new.status = 'failed' and new.refund_posting_id is not null then 0 else dm.cost end
   where dm.direction = 'out' and dm.provider_message_id = new.id::text and dm.status <> new.status;
  return null;
end $$;
create trigger messages_did_message_receipt
  after update of status on messages
  for each row when (new.status in ('delivered', 'failed') and old.status is distinct from new.status)
  execute function did_message_follow_receipt();

-- Mobile-originated messages already kept, by de-duplication key, so an SMSC's re-send of the
-- same deliver_sm (its response lost) is answered but not kept, billed or forwarded again.
create table did_mo_seen (
  key text primary key,
  message_id uuid not null,
  seen_at timestamptz not null
);
create index did_mo_seen_at_idx on did_mo_seen (seen_at);
