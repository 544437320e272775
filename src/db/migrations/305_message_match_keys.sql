-- Receipts find their message on the message row (issue 26): its supplier ids' match keys in
-- messages.match_keys, so a send writes no message_parts rows (a row, its key and its GIN entries
-- per part, on every message). message_parts keeps the receipt state of each part of a message of
-- several parts, written when that part's receipt comes; a message of one part keeps it on its row.
alter table messages add column match_keys text[];
-- Messages sent before this: the keys of their parts.
update messages m
   set match_keys = k.keys
  from (select p.message_id, array_agg(distinct x.key) as keys
          from message_parts p cross join unnest(p.match_keys) as x(key)
         group by p.message_id) k
 where m.id = k.message_id;
-- Partial: failed, simulated and test messages have no supplier id to match.
create index messages_match_keys_idx on messages using gin (match_keys) where match_keys is not null;
drop index if exists message_parts_keys_idx;

-- No query reads messages by account: the API's message list is the ledger's history
-- (GET /comms/sms, ledger/history.ts), a message is read by its id. The index cost an entry and a
-- WAL record on every send.
drop index if exists messages_account_idx;
