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
	var from any // nil: from the oldest
	if after != "" {
		a, ok := uid(after)
		if !ok {
			return 0, "", model.Invalid("after", "not an event id")
		}
		from = a
	}
	events, err := docs[model.Event](t, `SELECT doc FROM events WHERE tenant_id = $1 AND ($2::uuid IS NULL OR id > $2)
		AND id < $3 ORDER BY id LIMIT $4`, tn, from, uuid.UUID(model.IDFloor(before)).String(), limit)
	if err != nil {
		return 0, "", err
	}
	var old, idem []string
	next := ""
	for i := range events {
		ev := &events[i]
		next = ev.ID
		kept, err := keep(ev)
		if err != nil {
			return 0, "", err
		}
		if kept {
			continue
		}
		old = append(old, ev.ID)
		if ev.IdempotencyKey != "" {
			idem = append(idem, ev.IdempotencyKey)
		}
	}
	if len(events) < limit {
		next = ""
	}
	if len(old) == 0 {
		return 0, next, nil
	}
	if _, err := t.exec(`DELETE FROM event_replies WHERE tenant_id = $1 AND key = ANY($2)`, tn, idem); err != nil {
		return 0, "", err
	}
	tag, err := t.exec(`DELETE FROM events WHERE tenant_id = $1 AND id = ANY($2::uuid[])`, tn, old)
	if err != nil {
		return 0, "", err
	}
	return int(tag.RowsAffected()), next, nil
}

func (t *tx) PruneMissions(tenantID, after string, before time.Time, limit int, keep func(*model.Mission) (bool, error)) (int, string, error) {
	tn, err := t.tenantOf(tenantID)
	if err != nil {
		return 0, "", err
	}
	var from any // nil: from the oldest
	if after != "" {
		a, ok := uid(after)
		if !ok {
			return 0, "", model.Invalid("after", "not a mission id")
		}
		from = a
	}
	missions, err := docs[model.Mission](t, `SELECT doc FROM missions WHERE tenant_id = $1 AND ($2::uuid IS NULL OR id > $2)
		AND id < $3 ORDER BY id LIMIT $4`, tn, from, uuid.UUID(model.IDFloor(before)).String(), limit)
	if err != nil {
		return 0, "", err
	}
	var old []string
	next := ""
	for i := range missions {
		m := &missions[i]
		next = m.ID
		kept, err := keep(m)
		if err != nil {
			return 0, "", err
		}
		if !kept {
			old = append(old, m.ID)
		}
	}
	if len(missions) < limit {
		next = ""
	}
	if len(old) == 0 {
		return 0, next, nil
	}
	tag, err := t.exec(`DELETE FROM missions WHERE tenant_id = $1 AND id = ANY($2::uuid[])`, tn, old)
	if err != nil {
		return 0, "", err
	}
	return int(tag.RowsAffected()), next, nil
}
