-- Emergency addresses registered with the numbers' provisioning provider (docs/numbers.md
-- "Provisioning"): the provider keeps an address once per account and validates it once, so a
-- second number at the same address reuses the provider's address id instead of making another.
create table number_provider_addresses (
  account_id uuid not null references accounts (id),
  -- SHA-256 of the address as sent (canonical JSON), so an edited address is registered again.
  address_hash text not null check (address_hash ~ '^[0-9a-f]{64}$'),
  provider_address_id text not null check (length(provider_address_id) between 1 and 200),
  created_at timestamptz not null,
  primary key (account_id, address_hash)
);
