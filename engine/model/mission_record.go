package model

import "encoding/json"

// Mission states (docs/rules.md, Mission lifecycle).
const (
	MissionCreated   = "CREATED"
	MissionSent      = "SENT"
	MissionAck       = "ACK"
	MissionOnRoute   = "ON_ROUTE"
	MissionOnSite    = "ON_SITE"
	MissionCompleted = "COMPLETED"
	MissionFailed    = "FAILED"
)

// MissionStates lists the states in lifecycle order.
var MissionStates = []string{MissionCreated, MissionSent, MissionAck, MissionOnRoute, MissionOnSite,
	MissionCompleted, MissionFailed}

// MissionMove is one step of a mission's history: who moved it from what to what, when,
// and through which way in. The history is append-only.
type MissionMove struct {
	From string `json:"from"` // "" for the creation
	To   string `json:"to"`
	At   Time   `json:"at"`
	// Actor is the user or API key that asked, NilID for the system.
	Actor    string          `json:"actor"`
	Source   string          `json:"source"`
	Feedback json.RawMessage `json:"feedback,omitempty"`
	// Node is the node that recorded the move when it is not the mission's owner (a move
	// of a central node on a site's mission); absent for the owner's own moves
	// (docs/decisions/0198-mission-moves-union.md).
	Node string `json:"node,omitempty"`
}

// Mission carries a team's response to an event from dispatch to completion. A finished
// mission (COMPLETED or FAILED) is immutable: the audit record.
type Mission struct {
	ID      string `json:"id"`
	EventID string `json:"event_id"`
	TeamID  string `json:"team_id"`
	Status  string `json:"status"`
	// Code is the short code the team quotes in SMS replies (FR1 ACK <code>), unique among
	// the tenant's active missions; empty for missions dispatched before codes existed.
	Code string `json:"code,omitempty"`
	// ChannelUsed is how the team's notification went out: rest_full (webhook), sms or
	// device; null until the mission is SENT.
	ChannelUsed  *string         `json:"channel_used"`
	Vertical     string          `json:"vertical"`
	Priority     string          `json:"priority"`
	Notes        string          `json:"notes"`
	EventLat     *float64        `json:"event_lat,omitempty"`
	EventLng     *float64        `json:"event_lng,omitempty"`
	DispatchedAt Time            `json:"dispatched_at"`
	AckAt        *Time           `json:"ack_at"`
	OnRouteAt    *Time           `json:"on_route_at"`
	OnSiteAt     *Time           `json:"on_site_at"`
	CompletedAt  *Time           `json:"completed_at"`
	FailedAt     *Time           `json:"failed_at"`
	Feedback     json.RawMessage `json:"feedback"`
	// DispatchID and DispatchedBy name the dispatch that created the mission.
	DispatchID   string `json:"dispatch_id"`
	DispatchedBy string `json:"dispatched_by"`
	// ReinforcementOf is the mission this one backs up when reinforcement created it.
	ReinforcementOf *string `json:"reinforcement_of"`
	// Reinforced is true once reinforcement has dispatched a backup for this mission.
	Reinforced bool    `json:"reinforced"`
	Origin     *string `json:"origin"`
	// History lists every move, oldest first.
	History []MissionMove `json:"history"`
	// Messages lists the messages written on the mission, oldest first.
	Messages []MissionMessage `json:"messages,omitempty"`
	// Implied lists the states the mission passed only by implication (a move further on
	// was recorded, not theirs); TerminalConflict is set when both COMPLETED and FAILED
	// were recorded (docs/decisions/0198-mission-moves-union.md).
	Implied          []string          `json:"implied,omitempty"`
	TerminalConflict *TerminalConflict `json:"terminal_conflict,omitempty"`
	CreatedAt        Time              `json:"created_at"`
	UpdatedAt        Time              `json:"updated_at"`
}

// Active reports whether the mission has not finished.
func (m *Mission) Active() bool { return m.Status != MissionCompleted && m.Status != MissionFailed }

// Dispatch is the record of a dispatch (docs/openapi.yaml, Dispatch, with
// mission_id and origin).
type Dispatch struct {
	ID           string  `json:"id"`
	TenantID     string  `json:"tenant_id"`
	EventID      string  `json:"event_id"`
	TeamID       string  `json:"team_id"`
	DispatchedBy string  `json:"dispatched_by"`
	DispatchedAt Time    `json:"dispatched_at"`
	Notes        string  `json:"notes"`
	MissionID    string  `json:"mission_id"`
	Origin       *string `json:"origin"`
	// DispatchRequestID names the central node's request this dispatch answered.
	DispatchRequestID *string `json:"dispatch_request_id,omitempty"`
}

// LedgerEntry is one billable operation of a tenant: every dispatch writes one, in the
// same transaction.
type LedgerEntry struct {
	ID         string `json:"id"`
	Kind       string `json:"kind"` // "dispatch"
	DispatchID string `json:"dispatch_id"`
	MissionID  string `json:"mission_id"`
	EventID    string `json:"event_id"`
	TeamID     string `json:"team_id"`
	At         Time   `json:"at"`
}

// MissionFilter narrows GET /v1/missions; zero fields do not filter.
type MissionFilter struct {
	Status, EventID, Origin string
	// TeamIDs keeps the missions of these teams (nil: any team).
	TeamIDs []string
}

// Match reports whether m passes the filter.
func (f MissionFilter) Match(m *Mission) bool {
	if f.Status != "" && m.Status != f.Status || f.EventID != "" && m.EventID != f.EventID ||
		f.Origin != "" && (m.Origin == nil || *m.Origin != f.Origin) {
		return false
	}
	if f.TeamIDs != nil {
		for _, id := range f.TeamIDs {
			if id == m.TeamID {
				return true
			}
		}
		return false
	}
	return true
}
