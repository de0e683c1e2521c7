package store

import "github.com/fieldrelay/fieldrelay/engine/model"

// Sync batch records live in the tenant's batches bucket: batch id (UUIDv7) → Batch.

func (t *tx) SyncBatch(tenantID, id string) (*model.Batch, error) {
	b, err := t.tbucket(tenantID, tbBatches)
	if err != nil {
		return nil, err
	}
	k, err := idKey(id)
	if err != nil {
		return nil, model.NotFound("sync batch")
	}
	var out model.Batch
	if ok, err := getJSON(b, k, &out); !ok || err != nil {
		if err == nil {
			err = model.NotFound("sync batch")
		}
		return nil, err
	}
	return &out, nil
}

func (t *tx) PutSyncBatch(tenantID string, sb *model.Batch) error {
	b, err := t.tbucket(tenantID, tbBatches)
	if err != nil {
		return err
	}
	k, err := idKey(sb.ID)
	if err != nil {
		return err
	}
	b.FillPercent = appendFill
	return putJSON(b, k, sb)
}
