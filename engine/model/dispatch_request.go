package model

// DispatchRequest is a dispatch the central node asks of the site that owns the event or
// the team (docs/decisions/0197-dispatch-requests.md).
// It goes down the site's downstream log; the site runs its own dispatch and the result,
// dispatched (with the mission) or refused (with the reason's error code), comes back up.
type DispatchRequest struct {
	ID          string `json:"dispatch_request_id"`
	EventID     string `json:"event_id"`
	TeamID      string `json:"team_id"`
	Notes       string `json:"notes"`
	Status      string `json:"status"`
	SiteID      string `json:"site_id"`
	RequestedBy string `json:"requested_by"`
	RequestedAt Time   `json:"requested_at"`
	// MissionID is the site's mission once dispatched; Reason the site's error code and
	// Message its words once refused; DecidedAt when the site decided.
	MissionID *string `json:"mission_id"`
	Reason    *string `json:"reason"`
	Message   *string `json:"message"`
	DecidedAt *Time   `json:"decided_at"`
	// WaitedSeconds is how long the request waited for the site (until decided, or until
	// now): rendered, not stored.
	WaitedSeconds float64 `json:"waited_seconds"`
}

// Dispatch request statuses.
const (
	RequestRequested  = "requested"
	RequestDispatched = "dispatched"
	RequestRefused    = "refused"
)

// DispatchRequestTx stores dispatch requests, on the central node and on the site.
type DispatchRequestTx interface {
	// DispatchRequest returns a request by id (KindNotFound when there is none).
	DispatchRequest(tenantID, id string) (*DispatchRequest, error)
	// PutDispatchRequest stores r under its id.
	PutDispatchRequest(tenantID string, r *DispatchRequest) error
}
