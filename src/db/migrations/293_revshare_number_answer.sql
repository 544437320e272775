-- What the caller of a revenue share number hears (docs/revenue-share.md "What the caller hears"):
-- `silence` (the exchange answers and keeps the call up), `announcement` (a prompt looped until the
-- end: an https audio URL or a text read by the TTS) or `forward` (a B leg placed through the trunk
-- B2BUA to a SIP URI or an E.164 number; its `announcement` is what plays when the holder's balance
-- cannot pay the forward). Shapes are checked by the module; the table keeps only the mode honest.
alter table revshare_numbers
  add column answer jsonb not null default '{"mode": "silence"}'::jsonb
    check (answer ->> 'mode' in ('silence', 'announcement', 'forward'));
