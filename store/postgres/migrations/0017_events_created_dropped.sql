-- Event lists walk the primary key between the ids of their since and until
-- (docs/decisions/0256-event-lists-by-id.md): the index on created_at served nothing more
-- and cost every event an index entry.
DROP INDEX IF EXISTS events_created;
