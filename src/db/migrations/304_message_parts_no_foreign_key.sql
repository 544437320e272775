-- message_parts without its foreign key to messages (issue 26, as 267 did for messages, cdrs and
-- events): the check was a statement of its own per part written on the SMS send path, share-
-- locking the message row just inserted (a WAL record each). Parts are written only by the sms
-- module, in the statement batch that inserts their message, with that message's id; nothing
-- deletes messages (accounts close, their traffic stays), so the cascade never ran.
alter table message_parts drop constraint if exists message_parts_message_id_fkey;
