-- Voicemail on rented numbers (issue 22, "Calls and messages on numbers"): how a number answers
-- with the media plane, and the messages callers left. Owned by src/modules/numbers/voice.
alter table dids
  -- off: never; always: every inbound call; fallback: when the number's own targets fail.
  add column voicemail_mode text not null default 'off' check (voicemail_mode in ('off', 'always', 'fallback')),
  -- Spoken with the built-in voices when no greeting URL is set (a default text when both are null).
  add column voicemail_greeting_text text,
  -- An https MP3, fetched through the outbound guard's downloader at answer time.
  add column voicemail_greeting_url text,
  add column voicemail_language text not null default 'en',
  add column voicemail_max_seconds integer not null default 120 check (voicemail_max_seconds between 5 and 600),
  add column voicemail_silence_seconds integer not null default 5 check (voicemail_silence_seconds between 1 and 30);

create table did_voicemails (
  id uuid primary key,
  did_id uuid not null references dids (id),
  -- The renter when the message was left (numbers change hands after release).
  account_id uuid not null references accounts (id),
  -- The trunk call (calls.id, cdrs.call_group_id) that recorded it: billed as that inbound call.
  call_id uuid not null unique,
  from_number text not null,
  to_number text not null,
  duration_ms integer not null,
  bytes integer not null,
  -- Relative to the daemon's state directory.
  file text not null,
  read_at timestamptz,
  created_at timestamptz not null
);
create index did_voicemails_did_idx on did_voicemails (did_id, created_at desc, id desc);
