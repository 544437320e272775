-- The single-column CHECKs of the tables every call and message writes become domains (issue 26).
-- A table CHECK is read from its stored text and planned again by every INSERT and UPDATE
-- statement on its table, all of the table's CHECKs each time; a domain's check is planned once
-- per backend and kept by the type cache. Measured with pgbench (one-row insert, commit without
-- waiting for the disk): a table with five such CHECKs cost 63 us per statement, the same rules as
-- domains 47 us, no rules 45 us. calls and cdrs take several statements per call, messages per
-- message batch. Same rules, same values; only where they are kept changes (334 did it for
-- webhook deliveries).
create domain call_mode as text check (value in ('sync', 'async', 'trunk'));
create domain call_source as text check (value in ('api', 'trunk', 'check', 'campaign'));
create domain call_status as text
  check (value in ('queued', 'ringing', 'answered', 'completed', 'no_answer', 'busy', 'failed'));
create domain cdr_direction as text check (value in ('outbound', 'inbound'));
create domain cdr_kind as text check (value in ('voice', 'sms'));
create domain cdr_media_mode as text check (value in ('direct', 'proxy'));
create domain message_encoding as text check (value in ('gsm7', 'ucs2'));
create domain message_error_code as text
  check (value in ('SELLER_REJECTED', 'NO_ENDPOINT', 'UNDELIVERABLE', 'EXPIRED', 'REJECTED'));
create domain message_segments as integer check (value > 0);
create domain message_source as text check (value in ('api', 'smpp'));
create domain message_status as text check (value in ('queued', 'sent', 'delivered', 'failed'));

alter table calls
  drop constraint calls_mode_check,
  drop constraint calls_source_check,
  drop constraint calls_status_check,
  alter column mode type call_mode,
  alter column source type call_source,
  alter column status type call_status;

alter table cdrs
  drop constraint cdrs_direction_check,
  drop constraint cdrs_kind_check,
  drop constraint cdrs_media_mode_check,
  alter column direction type cdr_direction,
  alter column kind type cdr_kind,
  alter column media_mode type cdr_media_mode;

-- 282's trigger reads status in its WHEN: dropped for the change of type, then made again as it was.
drop trigger messages_did_message_receipt on messages;

alter table messages
  drop constraint messages_encoding_check,
  drop constraint messages_error_code_check,
  drop constraint messages_segments_check,
  drop constraint messages_source_check,
  drop constraint messages_status_check,
  alter column encoding type message_encoding,
  alter column error_code type message_error_code,
  alter column segments type message_segments,
  alter column source type message_source,
  alter column status type message_status;

create trigger messages_did_message_receipt
  after update of status on messages
  for each row when (new.status in ('delivered', 'failed') and old.status is distinct from new.status)
  execute function did_message_follow_receipt();
