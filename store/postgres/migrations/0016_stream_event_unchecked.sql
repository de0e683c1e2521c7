-- A stream change names its event without a foreign key
-- (docs/decisions/0255-stream-event-reference-unchecked.md): the key's check locked the
-- event's row for every change that named one, the largest cost of an event's statements.
-- The store keeps what it protected: the changes that name an event get its document
-- before the event changes or goes (keepPublished, in the same transaction).
ALTER TABLE stream_changes DROP CONSTRAINT IF EXISTS stream_changes_event_fkey;
