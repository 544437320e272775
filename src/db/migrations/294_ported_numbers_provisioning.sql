-- Ported numbers become DIDs, and CNAM and emergency addresses are provisioned with a provider
-- (issue 22, docs/numbers.md "Ported numbers" and "Provisioning").
--
-- This migration runs before the port-in tables (297) on a new database, so `port_in_id` names
-- its order without a foreign key: the numbers module writes it from the order it completes.

-- A ported number is a DID without seller, group or SKU: the buyer's own, charged only the
-- platform's monthly fee ([numbers] ported_monthly_fee) by the renewal job.
alter table dids
  alter column group_id drop not null,
  alter column sku_id drop not null,
  alter column seller_id drop not null,
  add column origin text not null default 'rented' check (origin in ('rented', 'ported')),
  add column port_in_id uuid,
  -- The catalogue country the ported digits dial (longest prefix), when the catalogue has it.
  add column country_id text references did_countries (id),
  -- The account whose SIP trunk brings the ported number's calls in; null: [numbers] ported_inbound_trunk.
  add column inbound_carrier_id uuid references accounts (id),
  add constraint dids_origin_shape check (
    (origin = 'rented' and group_id is not null and sku_id is not null and seller_id is not null)
    or (origin = 'ported' and group_id is null and sku_id is null and seller_id is null and port_in_id is not null
        and number is not null));
-- A ported number is one live DID at a time (a rented one is kept unique by its inventory row).
create unique index dids_ported_live_key on dids (number) where origin = 'ported' and status in ('pending', 'active', 'suspended');

alter table did_events drop constraint did_events_kind_check;
alter table did_events add constraint did_events_kind_check
  check (kind in ('ordered', 'activated', 'renewed', 'renewal_failed', 'suspended', 'reactivated', 'released',
                  'routing_changed', 'auto_renew_changed', 'failed', 'release_scheduled', 'release_cancelled',
                  'settings_changed', 'ported_in', 'provisioning_changed'));

-- What the provider holds for a number's caller name (CNAM listing) and emergency address: one
-- row per number and kind, kept in step with the owner's setting by the provisioning job.
create table did_provisioning (
  did_id uuid not null references dids (id),
  kind text not null check (kind in ('cnam', 'emergency')),
  -- not_provisioned: no provider is configured (`error` says so), never reported as done.
  status text not null check (status in ('not_provisioned', 'pending', 'provisioned', 'failed')),
  -- What the owner set (caller name, or the address; null: clear it at the provider).
  desired jsonb,
  -- The provider's ids (phone number id, address id) once known.
  provider_ref jsonb not null default '{}',
  error text check (length(error) <= 1000),
  attempts integer not null default 0,
  next_attempt_at timestamptz,
  provisioned_at timestamptz,
  updated_at timestamptz not null,
  primary key (did_id, kind)
);
create index did_provisioning_due_idx on did_provisioning (next_attempt_at) where status = 'pending';
