-- An event stored once (docs/decisions/0227-event-stored-once.md): the change that
-- announces an event (event.created) names it by event_id instead of carrying a copy of its
-- document, as long as the event's row holds the very bytes published. Before the row
-- changes or goes, the store copies its document into the change (data), which then names
-- no event: a change always reads as it was published. Exactly one of the two is set.
ALTER TABLE stream_changes ADD COLUMN event_id uuid;
ALTER TABLE stream_changes ALTER COLUMN data DROP NOT NULL;
ALTER TABLE stream_changes ADD CONSTRAINT stream_changes_data_check CHECK ((data IS NULL) = (event_id IS NOT NULL));
ALTER TABLE stream_changes ADD CONSTRAINT stream_changes_event_fkey FOREIGN KEY (tenant_id, event_id)
    REFERENCES events (tenant_id, id);
CREATE INDEX stream_changes_event ON stream_changes (tenant_id, event_id) WHERE event_id IS NOT NULL;
