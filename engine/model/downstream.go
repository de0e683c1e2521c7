package model

// DownChange is one entry of a tenant's downstream log on a central node: a record that
// the central node owns, of kind Kind and key Key (an id; a zone's code), changed at At.
// Seq is its place in the log, contiguous from 1 and never reused
// (docs/decisions/0196-downstream-log.md).
type DownChange struct {
	Seq  int64
	Kind string
	Key  string
	At   Time
}

// Kinds of the downstream log.
const (
	DownZone = "zone"
	DownTeam = "team"
	DownUser = "user"
)

// DownKinds are the kinds a downstream log holds.
var DownKinds = map[string]bool{DownZone: true, DownTeam: true, DownUser: true}

// DownstreamTx holds the transaction methods of the downstream log.
type DownstreamTx interface {
	// AppendDown appends a change to a tenant's downstream log under the log's next
	// sequence number (contiguous from 1, never reused) and returns it.
	AppendDown(tenantID string, c DownChange) (int64, error)
	// DownChanges lists at most limit changes of a tenant's downstream log above after,
	// in order.
	DownChanges(tenantID string, after int64, limit int) ([]DownChange, error)
	// TrimDown removes the changes of a tenant's downstream log up to through (included).
	TrimDown(tenantID string, through int64) error
	// DownBounds returns the first sequence number a tenant's downstream log still holds
	// (end+1 when it holds none) and the last one given (0 when none).
	DownBounds(tenantID string) (first, end int64, err error)
}
