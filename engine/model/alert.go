package model

import (
	"slices"
	"strings"
)

// Alert kinds (docs/decisions/0172-shared-alerts.md): what raised an alert, each closed by
// its cause's end.
const (
	// AlertEventUndispatched: a critical or high event with no mission yet; closes at its
	// first dispatch or when it closes.
	AlertEventUndispatched = "event_undispatched"
	// AlertRequiresManual: auto-dispatch or reinforcement found no team for an event;
	// closes at its next dispatch or when it closes.
	AlertRequiresManual = "requires_manual"
	// AlertMissionUnacknowledged: a mission not at ACK when the tenant's reinforcement
	// timeout ended; closes when the mission moves past SENT.
	AlertMissionUnacknowledged = "mission_unacknowledged"
	// AlertCrewMessage: a team sent a message from the field (one open alert a mission,
	// however many messages); closes when the control room answers on the mission.
	AlertCrewMessage = "crew_message"
	// AlertMissionOverdue: a mission acknowledged but not ON_SITE when the tenant's
	// on-site timeout ended; closes when it reaches ON_SITE or ends.
	AlertMissionOverdue = "mission_overdue"
	// AlertDeviceSilent: a device of a team on a mission has not synced for 10 minutes;
	// closes once it syncs or its team is back.
	AlertDeviceSilent = "device_silent"
	// AlertSMSGatewayDown: the node's SMS gateway is down; closes once it is up.
	AlertSMSGatewayDown = "sms_gateway_down"
	// AlertUpstreamDown: the tenant's upstream link failed its last push; closes at the
	// next success.
	AlertUpstreamDown = "upstream_down"
	// AlertDownstreamLagging: the link is up but the site has not been caught up with its
	// central node's downstream log for DownLagAfter (docs/decisions/0210-downstream-lag-alert.md);
	// closes once a pull leaves it caught up.
	AlertDownstreamLagging = "downstream_lagging"
	// AlertTerminalConflict: a mission recorded both COMPLETED and FAILED on two nodes
	// (docs/decisions/0198-mission-moves-union.md); nothing ends that cause, so the
	// supervisor's acknowledgement closes it.
	AlertTerminalConflict = "mission_terminal_conflict"
)

// AlertKinds lists the kinds, in the order a tray groups them.
var AlertKinds = []string{AlertEventUndispatched, AlertRequiresManual, AlertMissionUnacknowledged, AlertMissionOverdue, AlertCrewMessage,
	AlertTerminalConflict, AlertDeviceSilent, AlertSMSGatewayDown, AlertUpstreamDown,
	AlertDownstreamLagging}

// ClosedByAck tells the kinds whose alert its acknowledgement closes: those whose cause
// never ends by itself.
func ClosedByAck(kind string) bool { return kind == AlertTerminalConflict }

// Alert statuses as GET /v1/alerts filters them: an alert is open until its cause ends
// (acknowledged or not), then closed.
const (
	AlertOpen   = "open"
	AlertClosed = "closed"
)

// AlertStatuses lists the statuses an alert is stored with.
var AlertStatuses = []string{AlertOpen, AlertClosed}

// Alert is what the whole control room shares about a cause that needs a person: raised
// and closed by the node in the transaction of its cause, acknowledged by a user.
type Alert struct {
	ID        string  `json:"id"`
	Kind      string  `json:"kind"`
	Key       string  `json:"key"`
	Priority  string  `json:"priority"`
	Message   string  `json:"message"`
	EventID   *string `json:"event_id"`
	MissionID *string `json:"mission_id"`
	TeamID    *string `json:"team_id"`
	Status    string  `json:"status"`
	RaisedAt  Time    `json:"raised_at"`
	AckedAt   *Time   `json:"acked_at"`
	AckedBy   *string `json:"acked_by"`
	ClosedAt  *Time   `json:"closed_at"`
	// EscalatedAt is when the alert, unacknowledged, was sent by SMS to the supervisors
	// on duty (docs/decisions/0263-alert-escalation.md); once.
	EscalatedAt *Time `json:"escalated_at"`
	UpdatedAt   Time  `json:"updated_at"`
}

// AlertInput is what a cause raises: its kind and subject (the key is kind:subject, one
// open alert per key), and the words and links a tray shows.
type AlertInput struct {
	Kind      string
	Subject   string
	Priority  string
	Message   string
	EventID   string
	MissionID string
	TeamID    string
}

// AlertKey is the key of the alert of a kind about a subject (an event, a mission).
func AlertKey(kind, subject string) string { return kind + ":" + subject }

// AlertFilter narrows GET /v1/alerts; zero fields do not filter. Status is open (the
// default), closed or all.
type AlertFilter struct {
	Status, Kind, EventID string
}

// Validate checks the enum filters.
func (f AlertFilter) Validate() error {
	if f.Status != "" && !slices.Contains([]string{AlertOpen, AlertClosed, "all"}, f.Status) {
		return Invalid("status", "status must be one of open, closed, all")
	}
	if f.Kind != "" && !slices.Contains(AlertKinds, f.Kind) {
		return Invalid("kind", "kind must be one of %s", strings.Join(AlertKinds, ", "))
	}
	return nil
}

// Match reports whether a passes the filter (Status "" is open).
func (f AlertFilter) Match(a *Alert) bool {
	st := f.Status
	if st == "" {
		st = AlertOpen
	}
	return (st == "all" || a.Status == st) && (f.Kind == "" || a.Kind == f.Kind) &&
		(f.EventID == "" || (a.EventID != nil && *a.EventID == f.EventID))
}

// AlertsTx holds the transaction methods of alerts.
type AlertsTx interface {
	// Alert returns an alert by id (KindNotFound when there is none).
	Alert(tenantID, id string) (*Alert, error)
	// OpenAlert returns the open alert of a key, or nil when none is open.
	OpenAlert(tenantID, key string) (*Alert, error)
	// PutAlert stores an alert (new or changed) and keeps the index of open alerts by key:
	// an open alert holds its key, a closed one releases it.
	PutAlert(tenantID string, a *Alert) error
	// Alerts lists a tenant's alerts matching f, newest first; the string is the next
	// cursor ("" at the end).
	Alerts(tenantID string, f AlertFilter, p Page) ([]Alert, string, error)
}
