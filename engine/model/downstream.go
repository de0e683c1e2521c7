package model

import "encoding/json"

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
	// DownRequest is a dispatch request, routed to its site only.
	DownRequest = "dispatch_request"
	// DownMission is a site's mission a central node moved, routed to its owner.
	DownMission = "mission"
	// DownSettings is the tenant's settings (TenantSettings), keyed by the tenant's id,
	// routed to every site (docs/decisions/0200-tenant-settings-down.md).
	DownSettings = "settings"
)

// DownKinds are the kinds a downstream log holds.
var DownKinds = map[string]bool{DownZone: true, DownTeam: true, DownUser: true, DownRequest: true, DownMission: true,
	DownSettings: true}

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

// UpstreamDown is where a site's pull of its central node's downstream log stands, kept
// with the link's settings and written in the transaction that applies each batch.
type UpstreamDown struct {
	// Cursor is the last sequence of the central node's log applied here; Owner the
	// central node's id (the origin of the copies).
	Cursor int64  `json:"cursor"`
	Owner  string `json:"owner,omitempty"`
	// Snapshots counts the snapshots applied (a new link, or a cursor older than the
	// log keeps).
	Snapshots int64 `json:"snapshots"`
	// Synced says a snapshot was applied: later pulls follow the log from Cursor.
	Synced bool `json:"synced"`
	// LastPullAt is the last pull answered; NewestAt the time, on the central node, of
	// the newest change applied here; End the central log's end at the last pull.
	LastPullAt *Time `json:"last_pull_at"`
	NewestAt   *Time `json:"newest_at"`
	End        int64 `json:"end"`
	// CaughtUpAt is the last pull that left the site at the central log's end: how long
	// ago tells the lag, whether the site is behind or its pulls stopped
	// (docs/decisions/0210-downstream-lag-alert.md).
	CaughtUpAt *Time `json:"caught_up_at,omitempty"`
	// Skipped counts the central records refused here (a zone code or email a local
	// record holds); LastSkip says why the latest was.
	Skipped  int64  `json:"skipped"`
	LastSkip string `json:"last_skip,omitempty"`
}

// DownPullInput is the body of POST /v1/devices/downstream: the node's device and the
// last sequence it applied (which acknowledges everything up to it).
type DownPullInput struct {
	DeviceID string `json:"device_id"`
	After    int64  `json:"after"`
	// Snapshot asks for a snapshot: a site that has applied none yet.
	Snapshot bool `json:"snapshot"`
	// Wait, in seconds, holds a pull at the log's end until the log has news for the
	// site or the wait ends (docs/decisions/0211-downstream-long-poll.md); 0 answers at once.
	Wait int `json:"wait"`
}

// DownPull is the answer of POST /v1/devices/downstream. Snapshot says Changes hold
// every record routed to the site (one per record) instead of the changes after the
// cursor; Through is the cursor to store once they are applied, End the log's end.
type DownPull struct {
	NodeID   string     `json:"node_id"`
	Snapshot bool       `json:"snapshot"`
	Through  int64      `json:"through"`
	End      int64      `json:"end"`
	Changes  []DownItem `json:"changes"`
}

// DownItem is one record of a pull: Record is the record as the central node holds it
// (a user with its password hash), null when it is gone or no longer routed to the site.
type DownItem struct {
	Seq    int64           `json:"seq"`
	Kind   string          `json:"kind"`
	Key    string          `json:"key"`
	At     Time            `json:"at"`
	Record json.RawMessage `json:"record"`
}

// CopyConflict is the error of a change of a copy's owned fields: 409 conflict naming
// its owner (docs/decisions/0195-record-owners.md); nil when origin is nil (the record is
// this node's own).
func CopyConflict(what string, origin *string) error {
	if origin == nil {
		return nil
	}
	return Errorf(KindConflict, "%s is a copy of a record owned by node %s: change it there", what, *origin)
}

// CheckSite validates the site_id of a zone or a team: nil or "" for none, else the id
// of a device of the tenant registered as a node (platform fieldrelay-node).
func CheckSite(device func(tenantID, id string) (*Device, error), tenantID string, siteID *string) (*string, error) {
	if siteID == nil || *siteID == "" {
		return nil, nil
	}
	d, err := device(tenantID, *siteID)
	if IsKind(err, KindNotFound) || (err == nil && d.Platform != PlatformNode) {
		return nil, Invalid("site_id", "site_id must be the device id of a site node registered with platform %s", PlatformNode)
	}
	if err != nil {
		return nil, err
	}
	v := *siteID
	return &v, nil
}

// PlatformNode is the platform of a device that is another fieldrelay node.
const PlatformNode = "fieldrelay-node"

// EqualPtr reports whether two optional values are both nil or equal.
func EqualPtr[T comparable](a, b *T) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// DownStatus is the downstream part of GET /v1/tenant/upstream/status: the cursor, the
// central log's end at the last pull and how far behind it the site is, the time of the
// newest central change applied here, and lagging when the site is behind.
type DownStatus struct {
	Cursor     int64   `json:"cursor"`
	End        int64   `json:"end"`
	Behind     int64   `json:"behind"`
	Lagging    bool    `json:"lagging"`
	Owner      *string `json:"owner"`
	LastPullAt *Time   `json:"last_pull_at"`
	NewestAt   *Time   `json:"newest_applied_at"`
	CaughtUpAt *Time   `json:"caught_up_at"`
	Snapshots  int64   `json:"snapshots"`
	Skipped    int64   `json:"skipped"`
	LastSkip   *string `json:"last_skip"`
}

// Status renders d.
func (d UpstreamDown) Status() *DownStatus {
	s := &DownStatus{Cursor: d.Cursor, End: d.End, Behind: max(d.End-d.Cursor, 0), LastPullAt: d.LastPullAt,
		NewestAt: d.NewestAt, CaughtUpAt: d.CaughtUpAt, Snapshots: d.Snapshots, Skipped: d.Skipped}
	s.Lagging = s.Behind > 0
	if d.Owner != "" {
		s.Owner = &d.Owner
	}
	if d.LastSkip != "" {
		s.LastSkip = &d.LastSkip
	}
	return s
}
