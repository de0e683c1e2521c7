package model

// SyncTx holds the transaction methods of the sync batches (POST /v1/sync/batch, GET /v1/sync/status).
type SyncTx interface {
	// SyncBatch returns a batch record of a tenant (KindNotFound when the tenant has no
	// batch with that id).
	SyncBatch(tenantID, id string) (*Batch, error)
	// PutSyncBatch stores a batch record under its id.
	PutSyncBatch(tenantID string, b *Batch) error
}
