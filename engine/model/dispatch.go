package model

const (
	maxDispatchNotes   = 2000
	AutoDispatchNotes  = "auto-dispatch"
	ReinforcementNotes = "reinforcement"
)

// DispatchInput is the body of POST /v1/teams/dispatch.
type DispatchInput struct {
	EventID  string   `json:"event_id"`
	TeamID   string   `json:"team_id"`
	Notes    string   `json:"notes"`
	EventLat *float64 `json:"event_lat"`
	EventLng *float64 `json:"event_lng"`
	// ConfirmEmptyTeam dispatches a team that has no members: without it that is 409
	// team_empty (nobody would receive the mission but the team.dispatched webhooks).
	ConfirmEmptyTeam bool `json:"confirm_empty_team"`
}

// Validate checks the body: ids present and well formed, notes not too long, both
// coordinates or neither, in range.
func (in *DispatchInput) Validate() error {
	switch {
	case in.EventID == "":
		return Invalid("event_id", "event_id is required")
	case !ValidID(in.EventID):
		return Invalid("event_id", "event_id must be a UUID")
	case in.TeamID == "":
		return Invalid("team_id", "team_id is required")
	case !ValidID(in.TeamID):
		return Invalid("team_id", "team_id must be a UUID")
	}
	if err := CheckLength("notes", in.Notes, maxDispatchNotes); err != nil {
		return err
	}
	if (in.EventLat == nil) != (in.EventLng == nil) {
		if in.EventLat == nil {
			return Invalid("event_lat", "event_lat and event_lng go together")
		}
		return Invalid("event_lng", "event_lat and event_lng go together")
	}
	if in.EventLat != nil {
		if *in.EventLat < -90 || *in.EventLat > 90 {
			return Invalid("event_lat", "event_lat must be between -90 and 90")
		}
		if *in.EventLng < -180 || *in.EventLng > 180 {
			return Invalid("event_lng", "event_lng must be between -180 and 180")
		}
	}
	return nil
}

// AutoDispatch is what POST /v1/events answers when auto-dispatch ran and sent a team.
type AutoDispatch struct {
	MissionID string  `json:"mission_id"`
	TeamID    string  `json:"team_id"`
	Score     float64 `json:"score"`
}
