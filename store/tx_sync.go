package store

import (
	"encoding/json"
	"fmt"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// Sync batch records live in the tenant's batches bucket: batch id (UUIDv7) → Batch, its
// JSON packed (batchPacked then packJSON: about a third of its size, ids and times being
// most of a batch's items), or JSON as older files hold it.

// batchPacked is the first byte of a packed batch record (JSON starts with '{').
const batchPacked = 2

func (t *tx) SyncBatch(tenantID, id string) (*model.Batch, error) {
	b, err := t.tbucket(tenantID, tbBatches)
	if err != nil {
		return nil, err
	}
	k, err := idKey(id)
	if err != nil {
		return nil, model.NotFound("sync batch")
	}
	raw := b.Get(k)
	if raw == nil {
		return nil, model.NotFound("sync batch")
	}
	var out model.Batch
	text, err := unpackRecord(batchPacked, raw)
	if err == nil {
		err = json.Unmarshal(text, &out)
	}
	if err != nil {
		return nil, fmt.Errorf("decoding sync batch %s: %w", id, err)
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
	text, err := json.Marshal(sb)
	if err != nil {
		return err
	}
	b.FillPercent = appendFill
	return b.Put(k, packRecord(batchPacked, text))
}
