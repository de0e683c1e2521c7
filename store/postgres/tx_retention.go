package postgres

import (
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/google/uuid"
)

// Retention deletes take the oldest rows by id (UUIDv7: time-ordered), at most limit per
// statement, as the bbolt store does.

func (t *tx) PruneSyncBatches(tenantID string, before time.Time, limit int) (int, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return 0, err
	}
	tag, err := t.exec(`DELETE FROM sync_batches WHERE tenant_id = $1 AND id IN (
		SELECT id FROM sync_batches WHERE tenant_id = $1 AND id < $2 ORDER BY id LIMIT $3)`,
		tn, uuid.UUID(model.IDFloor(before)).String(), limit)
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

func (t *tx) PruneDeliveryAttempts(tenantID string, before time.Time, limit int) (int, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return 0, err
	}
	tag, err := t.exec(`DELETE FROM delivery_attempts WHERE tenant_id = $1 AND (webhook_id, id) IN (
		SELECT webhook_id, id FROM delivery_attempts WHERE tenant_id = $1 AND id < $2 ORDER BY id LIMIT $3)`,
		tn, uuid.UUID(model.IDFloor(before)).String(), limit)
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

func (t *tx) PruneEvents(tenantID, after string, before time.Time, limit int, keep func(*model.Event) (bool, error)) (int, string, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return 0, "", err
	}
	drop, next, err := walkOld(t, "events", "event", tn, after, before, limit, keep,
		func(ev *model.Event) string { return ev.ID })
	if err != nil || len(drop) == 0 {
		return 0, next, err
	}
	var old, idem []string
	for _, ev := range drop {
		old = append(old, ev.ID)
		if ev.IdempotencyKey != "" {
			idem = append(idem, ev.IdempotencyKey)
		}
	}
	if _, err := t.exec(`DELETE FROM event_replies WHERE tenant_id = $1 AND key = ANY($2)`, tn, idem); err != nil {
		return 0, "", err
	}
	for _, k := range idem {
		t.replyWritten(tn, k, nil)
	}
	// The stream changes that name an event keep its document (feed_events.go).
	if _, err := t.exec(keepPublished("$2::uuid[]"), tn, old); err != nil {
		return 0, "", err
	}
	t.eventsDeleted(tn, old)
	n, err := t.deleteIDs("events", tn, old)
	return n, next, err
}

func (t *tx) PruneMissions(tenantID, after string, before time.Time, limit int, keep func(*model.Mission) (bool, error)) (int, string, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return 0, "", err
	}
	drop, next, err := walkOld(t, "missions", "mission", tn, after, before, limit, keep,
		func(m *model.Mission) string { return m.ID })
	if err != nil || len(drop) == 0 {
		return 0, next, err
	}
	old := make([]string, len(drop))
	for i, m := range drop {
		old[i] = m.ID
	}
	n, err := t.deleteIDs("missions", tn, old)
	return n, next, err
}

// walkOld reads the documents of a tenant's table (keyed by time-ordered id) after the id
// after ("": from the oldest) and older than before, at most limit of them, and returns
// those keep does not keep. next is the id of the last document read when limit stopped
// the read ("" when it reached the end of what is old), where the next call starts.
// table is one of this package's table names, never input.
func walkOld[T any](t *tx, table, what, tn, after string, before time.Time, limit int,
	keep func(*T) (bool, error), id func(*T) string) (drop []*T, next string, err error) {
	var from any // nil: from the oldest
	if after != "" {
		a, ok := uid(after)
		if !ok {
			return nil, "", model.Invalid("after", "not a %s id", what)
		}
		from = a
	}
	recs, err := docs[T](t, `SELECT doc FROM `+table+` WHERE tenant_id = $1 AND ($2::uuid IS NULL OR id > $2)
		AND id < $3 ORDER BY id LIMIT $4`, tn, from, uuid.UUID(model.IDFloor(before)).String(), limit)
	if err != nil {
		return nil, "", err
	}
	for i := range recs {
		r := &recs[i]
		next = id(r)
		kept, err := keep(r)
		if err != nil {
			return nil, "", err
		}
		if !kept {
			drop = append(drop, r)
		}
	}
	if len(recs) < limit {
		next = ""
	}
	return drop, next, nil
}

// deleteIDs deletes rows of a tenant's table by id; table is one of this package's table
// names, never input.
func (t *tx) deleteIDs(table, tn string, ids []string) (int, error) {
	tag, err := t.exec(`DELETE FROM `+table+` WHERE tenant_id = $1 AND id = ANY($2::uuid[])`, tn, ids)
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}
