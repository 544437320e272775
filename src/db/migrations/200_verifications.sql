-- Verify (issue 21, spec "Verify"): one row per code sent. Only a hash of the code is kept; the
-- SMS or call that carried it is billed (and recorded) by the sms or api-calls module, and is
-- named here by id only, since those tables belong to other modules.
create domain verification_status as text
  check (value in ('pending', 'approved', 'expired', 'max_attempts', 'canceled', 'failed'));
create domain verification_channel as text check (value in ('sms', 'voice'));

create table verifications (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  to_number text not null,
  channel verification_channel not null,
  language text not null,
  brand text,
  code_length integer not null,
  code_hash text not null,
  status verification_status not null,
  attempts integer not null default 0,
  max_attempts integer not null,
  expires_at timestamptz not null,
  simulated boolean not null,
  message_id uuid,
  call_id uuid,
  failure text,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  approved_at timestamptz
);
-- GET /verify pages newest first; the per-number send limits look back an hour.
create index verifications_account_idx on verifications (account_id, id desc);
create index verifications_number_idx on verifications (account_id, to_number, created_at desc);

-- The codes sent to each number of an account in the last hour, newest first (at most the hourly
-- limit): one row per number, so the spacing and hourly limits are checked and taken in one
-- statement, the row lock serialising concurrent starts for the same number.
create table verification_sends (
  account_id uuid not null references accounts (id),
  to_number text not null,
  sent_at timestamptz[] not null,
  primary key (account_id, to_number)
);
