package model

// BackfillTx lists a tenant's records in the order their history is sent upstream: the
// backfill of upstream sync walks them with it, a few hundred per transaction.
type BackfillTx interface {
	// RecordIDs returns at most limit ids of a tenant's records of a change kind
	// (ChangeEvent, ChangeDispatch or ChangeMission), in ascending byte order of the ids
	// (UUIDv7: oldest first), those above after only ("" from the first). KindNotFound
	// when the tenant does not exist; an error for an unknown kind.
	RecordIDs(tenantID, kind, after string, limit int) ([]string, error)
}
