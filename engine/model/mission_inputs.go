package model

import "encoding/json"

// MissionQuery is the query of GET /v1/missions; empty fields do not filter.
type MissionQuery struct {
	Status string
	TeamID string
	// MemberID keeps the missions of the teams that member belongs to.
	MemberID string
	EventID  string
	Origin   string
}

// MissionStatusInput is the body of PATCH /v1/missions/:id/status (and the payload of a
// device's mission_status item).
type MissionStatusInput struct {
	Status string `json:"status"`
	// Feedback is an optional JSON object, opaque to the service (null counts as absent).
	Feedback json.RawMessage `json:"feedback"`
}

// MissionStatusUpdate is the payload of the mission.status_updated webhook (and of the
// change of that name on the stream).
type MissionStatusUpdate struct {
	MissionID string `json:"mission_id"`
	Status    string `json:"status"`
	// Feedback is the move's feedback; an object always (docs/rules.md, Mission lifecycle): {}
	// when the move carried none (the Mission's own feedback stays null until one is given).
	Feedback json.RawMessage `json:"feedback"`
	EventID  string          `json:"event_id"`
	TeamID   string          `json:"team_id"`
	At       Time            `json:"at"`
}
