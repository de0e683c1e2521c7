package engine

// SyncTx holds the transaction methods of the sync batches (POST /v1/sync/batch, GET /v1/sync/status).
type SyncTx interface {
}
