-- Voice one-time-code calls (issue 6, POST /comms/voice-otp): the call carries the outcome and
-- cost; only a hash of the code is kept here.
create table voice_otps (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  call_id uuid not null references calls (id),
  to_number text not null,
  language text not null,
  code_length integer not null,
  repeat integer not null,
  code_hash text not null,
  created_at timestamptz not null
);
create index voice_otps_account_idx on voice_otps (account_id, id desc);
