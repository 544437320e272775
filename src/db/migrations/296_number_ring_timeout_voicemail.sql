-- Calls on rented numbers (issue 22): ring-no-answer, uploaded greetings, deleting messages.
-- Owned by src/modules/numbers (and its voice part).
alter table dids
  -- A target (or a forward route when voicemail follows) ringing this long is cancelled: the call goes
  -- to voicemail when it is on, else ends unanswered.
  add column ring_timeout_seconds integer not null default 25 check (ring_timeout_seconds between 5 and 120),
  -- An uploaded greeting (MP3), relative to the daemon's state directory; played before greetingUrl.
  add column voicemail_greeting_file text;

-- A message being deleted: hidden at once, its recording removed, then the row. A daemon stopped
-- between the steps leaves the mark, and the release sweep finishes the deletion.
alter table did_voicemails add column deleted_at timestamptz;
create index did_voicemails_deleted_idx on did_voicemails (deleted_at) where deleted_at is not null;
