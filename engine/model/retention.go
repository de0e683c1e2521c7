package model

import "time"

// Retention is how many days a tenant's records of each kind are kept before the
// retention sweep deletes them (docs/decisions/0114-retention.md). In a tenant's settings 0
// means the node's default; in the node's defaults 0 means kept for ever. Usage counters
// and the ledger (billing) are never deleted; events and missions are kept.
type Retention struct {
	// SyncBatchesDays keeps the records of POST /v1/sync/batch (GET /v1/sync/status).
	SyncBatchesDays int `json:"sync_batches_days"`
	// DeliveryLogDays keeps the webhook attempt log (GET /v1/webhooks/:id/deliveries).
	DeliveryLogDays int `json:"delivery_log_days"`
	// EventsDays keeps events (and their idempotency replies). An event is pruned only
	// once it is settled (delivered, failed or closed, nothing outstanding), has no
	// mission, and the tenant owes its upstream no change.
	EventsDays int `json:"events_days"`
	// MissionsDays keeps completed and failed missions: the audit trail, so never pruned
	// unless a tenant asks (the node's default is 0: kept for ever). Their ledger entries
	// stay, and their events may then go with the events' retention.
	MissionsDays int `json:"missions_days"`
}

// The node's default retention, and the longest a tenant may ask for.
const (
	DefaultSyncBatchesDays = 30
	DefaultDeliveryLogDays = 30
	DefaultEventsDays      = 400
	MaxRetentionDays       = 3650
)

// DefaultRetention is the node's retention unless its flags say otherwise.
var DefaultRetention = Retention{SyncBatchesDays: DefaultSyncBatchesDays, DeliveryLogDays: DefaultDeliveryLogDays,
	EventsDays: DefaultEventsDays}

// Over returns the retention of a tenant whose own settings are t (nil: none) on a node
// whose defaults are r.
func (r Retention) Over(t *Retention) Retention {
	if t == nil {
		return r
	}
	if t.SyncBatchesDays > 0 {
		r.SyncBatchesDays = t.SyncBatchesDays
	}
	if t.DeliveryLogDays > 0 {
		r.DeliveryLogDays = t.DeliveryLogDays
	}
	if t.EventsDays > 0 {
		r.EventsDays = t.EventsDays
	}
	if t.MissionsDays > 0 {
		r.MissionsDays = t.MissionsDays
	}
	return r
}

// RetentionInput is the body of PATCH /v1/tenant/retention: each field given sets the
// tenant's days (0: back to the node's default).
type RetentionInput struct {
	SyncBatchesDays *int `json:"sync_batches_days"`
	DeliveryLogDays *int `json:"delivery_log_days"`
	EventsDays      *int `json:"events_days"`
	MissionsDays    *int `json:"missions_days"`
}

// Validate checks the ranges.
func (in RetentionInput) Validate() error {
	for _, f := range []struct {
		name string
		v    *int
	}{{"sync_batches_days", in.SyncBatchesDays}, {"delivery_log_days", in.DeliveryLogDays}, {"events_days", in.EventsDays},
		{"missions_days", in.MissionsDays}} {
		if f.v != nil && (*f.v < 0 || *f.v > MaxRetentionDays) {
			return Invalid(f.name, "%s must be between 0 (the node's default) and %d", f.name, MaxRetentionDays)
		}
	}
	return nil
}

// RetentionSettings is the answer of the retention endpoints: the tenant's own settings
// and what is in force (the node's defaults where the tenant sets none; 0 there: kept
// for ever).
type RetentionSettings struct {
	Tenant    Retention `json:"tenant"`
	Effective Retention `json:"effective"`
}

// RetentionTx deletes records past their retention, oldest first and at most limit per
// call, so that a sweep is many short transactions (docs/decisions/0114-retention.md). A
// record's age is the time of its UUIDv7 id, which the engine makes from its clock.
type RetentionTx interface {
	// PruneSyncBatches deletes at most limit of a tenant's sync batch records whose id is
	// older than before, and returns how many it deleted (KindNotFound: no such tenant).
	PruneSyncBatches(tenantID string, before time.Time, limit int) (int, error)
	// PruneDeliveryAttempts deletes at most limit of a tenant's webhook attempt records
	// whose id is older than before, and returns how many it deleted.
	PruneDeliveryAttempts(tenantID string, before time.Time, limit int) (int, error)
	// PruneEvents walks, oldest first, at most limit of a tenant's events after the event
	// id after ("": from the oldest) whose id is older than before, and deletes each one
	// that keep does not keep, with its idempotency reply. It returns how many it deleted
	// and the id where the walk stopped ("" when no older event is left to walk).
	PruneEvents(tenantID, after string, before time.Time, limit int, keep func(*Event) (bool, error)) (int, string, error)
	// PruneMissions is PruneEvents for missions: it deletes each mission keep does not
	// keep, with its entries in the by-event and by-team indexes.
	PruneMissions(tenantID, after string, before time.Time, limit int, keep func(*Mission) (bool, error)) (int, string, error)
}

// IDFloor returns the smallest UUIDv7 of t's millisecond: every id made at t or later
// sorts at or after it, every id made before sorts before it.
func IDFloor(t time.Time) [16]byte {
	var u [16]byte
	ms := uint64(t.UnixMilli())
	for i := range 6 {
		u[i] = byte(ms >> (40 - 8*i))
	}
	return u
}
