package model

// LogChange is one entry of a tenant's change log: a record of kind Kind and id ID changed
// at At. Seq is its place in the log, contiguous from 1.
type LogChange struct {
	Seq  int64
	Kind string
	ID   string
	At   Time
}

// UpstreamConfig is a tenant's upstream as stored: the settings and where the push
// stands. The API key is kept only encrypted (KeyCipher); nothing returns it.
type UpstreamConfig struct {
	TenantID  string `json:"tenant_id"`
	URL       string `json:"url"`
	KeyCipher string `json:"key_cipher"`
	KeyPrefix string `json:"key_prefix"`
	CAPEM     string `json:"ca_pem,omitempty"`
	Paused    bool   `json:"paused"`
	// Generation changes with the link (url, key or CA): a push that began under another
	// generation drops its result.
	Generation int64 `json:"generation"`
	// DeviceID is the node's device on the upstream, once registered.
	DeviceID string `json:"device_id,omitempty"`
	// Base maps the log to the device's sequence numbers: sequence_number = Seq − Base.
	Base int64 `json:"base"`
	// AckedThrough is the last change (of the log) the upstream has applied; the log
	// holds nothing at or below it.
	AckedThrough  int64  `json:"acked_through"`
	LastSuccessAt *Time  `json:"last_success_at"`
	LastAttemptAt *Time  `json:"last_attempt_at"`
	LastError     string `json:"last_error,omitempty"`
	NextAttemptAt *Time  `json:"next_attempt_at"`
	Failures      int    `json:"failures"`
	// Rejected counts the items the upstream rejected (they count as processed there);
	// LastRejection says why the latest was.
	Rejected      int64  `json:"rejected"`
	LastRejection string `json:"last_rejection,omitempty"`
	// Backfill is where the sending of the records held before the link was set stands;
	// nil for a link set before backfill existed.
	Backfill *UpstreamBackfill `json:"backfill,omitempty"`
	// Down is where the pull of the central node's downstream log stands.
	Down      UpstreamDown `json:"down"`
	CreatedAt Time         `json:"created_at"`
	UpdatedAt Time         `json:"updated_at"`
}

// UpstreamInput is the body of PUT /v1/tenant/upstream. With the url unchanged, an
// absent api_key, ca_pem or paused keeps its current value; a new url starts afresh:
// api_key is required and there is no CA unless ca_pem gives one. An empty ca_pem
// removes the CA.
type UpstreamInput struct {
	URL    string  `json:"url"`
	APIKey string  `json:"api_key"`
	CAPEM  *string `json:"ca_pem"`
	Paused *bool   `json:"paused"`
}

// UpstreamSettings is what GET and PUT /v1/tenant/upstream answer: the settings without
// the key, of which only a prefix is shown.
type UpstreamSettings struct {
	URL          string  `json:"url"`
	APIKeyPrefix string  `json:"api_key_prefix"`
	CAPEM        *string `json:"ca_pem"`
	Paused       bool    `json:"paused"`
	// NodeID is the hardware_id the node registers with upstream (the origin of its
	// records there); DeviceID its device on the upstream once registered.
	NodeID    string  `json:"node_id"`
	DeviceID  *string `json:"device_id"`
	CreatedAt Time    `json:"created_at"`
	UpdatedAt Time    `json:"updated_at"`
}

// UpstreamStatus is the answer of GET /v1/tenant/upstream/status. State is paused when
// paused, down when the last attempt failed, idle when the backlog is empty and pushing
// otherwise.
type UpstreamStatus struct {
	State           string  `json:"state"`
	URL             *string `json:"url"`
	DeviceID        *string `json:"device_id"`
	LastSuccessAt   *Time   `json:"last_success_at"`
	LastAttemptAt   *Time   `json:"last_attempt_at"`
	Backlog         int64   `json:"backlog"`
	BacklogOldestAt *Time   `json:"backlog_oldest_at"`
	LastError       *string `json:"last_error"`
	NextAttemptAt   *Time   `json:"next_attempt_at"`
	// Failures counts the attempts failed in a row; AckedThrough is the change log's
	// last sequence the upstream has applied; Rejected counts the items it rejected.
	Failures      int     `json:"failures"`
	AckedThrough  int64   `json:"acked_through"`
	Rejected      int64   `json:"rejected"`
	LastRejection *string `json:"last_rejection"`
	// Backfill says how far the records held before the link was set have gone; null
	// for a link set before backfill existed.
	Backfill *UpstreamBackfillStatus `json:"backfill"`
	// Downstream is where the pull of the central node's changes stands.
	Downstream *DownStatus `json:"downstream"`
}

// settings renders c without its key.
func (c *UpstreamConfig) Settings(nodeID string) *UpstreamSettings {
	s := &UpstreamSettings{URL: c.URL, APIKeyPrefix: c.KeyPrefix, Paused: c.Paused, NodeID: nodeID,
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
	if c.CAPEM != "" {
		s.CAPEM = PtrTo(c.CAPEM)
	}
	if c.DeviceID != "" {
		s.DeviceID = PtrTo(c.DeviceID)
	}
	return s
}

// Kinds of the change log: the item kinds of the upstream wire protocol.
const (
	ChangeEvent    = ItemUpstreamEvent
	ChangeDispatch = ItemUpstreamDispatch
	ChangeMission  = ItemUpstreamMission
	// ChangeDispatchRequest is a site's decision on a central node's dispatch request.
	ChangeDispatchRequest = ItemUpstreamDispatchRequest
	// ChangeTeamStatus is the status of a copy of a central team, moved at the site.
	ChangeTeamStatus = ItemUpstreamTeamStatus
	// ChangeSiteZone is a zone of the site's own, logged under SiteZoneKey of its code.
	ChangeSiteZone = ItemUpstreamSiteZone
)

// ChangeKinds are the kinds a change log holds.
var ChangeKinds = []string{ChangeEvent, ChangeDispatch, ChangeMission, ChangeDispatchRequest, ChangeTeamStatus,
	ChangeSiteZone}
