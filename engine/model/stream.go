package model

import "encoding/json"

// Change is one committed change of a tenant, as GET /v1/stream sends it.
type Change struct {
	// Seq orders a tenant's changes in one run of the node (1, 2, …).
	Seq  uint64
	Name string
	// Perm is the permission a caller needs to see the change.
	Perm Permission
	// TeamID is the team the change belongs to ("" when none): a field operator sees the
	// changes of its own teams only.
	TeamID string
	// Data is the JSON of the payload: the record or the webhook payload.
	Data json.RawMessage
	At   Time
}
