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
