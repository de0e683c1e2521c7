-- The index of open events (docs/decisions/0170-open-events.md): every event that is not
-- closed, in dispatcher order (priority rank, then oldest first by id), kept by PostgreSQL
-- in the transaction that writes the event. openRank in tx_events_open.go spells the same
-- expression, so that the planner uses this index.
CREATE INDEX events_open ON events (tenant_id,
    (CASE priority WHEN 'critical' THEN 0 WHEN 'high' THEN 1 WHEN 'normal' THEN 2 WHEN 'low' THEN 3 ELSE 4 END), id)
    WHERE status <> 'closed';
