package model

// QueueMissionUpdate is the queue item kind of a change to a mission of the device's team
// that the device did not make (docs/decisions/0148-mission-updates.md).
const QueueMissionUpdate = "mission_update"

// What a mission change is (MissionChange.What).
const (
	// UpdateStatus is a status move (from, to; a stand-down or a failure names its reason).
	UpdateStatus = "status"
	// UpdateBackup is another team dispatched by hand to the mission's event (team_name
	// names it); UpdateReinforcement is the same dispatched by reinforcement.
	UpdateBackup        = "backup"
	UpdateReinforcement = "reinforcement"
	// UpdateEventClosed is the mission's event closed by another mission's end.
	UpdateEventClosed = "event_closed"
	// UpdateMessage is a message written on the mission (message_id, text).
	UpdateMessage = "message"
)

// ChangeActor says who made a change: the user's or key's id, name and role (a key's
// role is api_key; the system's id is the nil UUID, its name and role system).
type ChangeActor struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Role string `json:"role"`
}

// Roles of a ChangeActor that are no user's role.
const (
	ActorRoleAPIKey = "api_key"
	ActorRoleSystem = "system"
)

// MissionChange is one change of a mission that a mission_update item tells its team's
// devices: what changed, from what to what, by whom, when and through which channel (a
// mission move's source: api, device, sms, system).
type MissionChange struct {
	What    string      `json:"what"`
	From    string      `json:"from,omitempty"`
	To      string      `json:"to,omitempty"`
	By      ChangeActor `json:"by"`
	At      Time        `json:"at"`
	Channel string      `json:"channel"`
	// Reason and StoodDown come from the move's feedback (a stand-down, a failure).
	Reason    string `json:"reason,omitempty"`
	StoodDown bool   `json:"stood_down,omitempty"`
	// TeamID, TeamName and MissionID name the backup team and its mission (backup,
	// reinforcement).
	TeamID    string `json:"team_id,omitempty"`
	TeamName  string `json:"team_name,omitempty"`
	MissionID string `json:"mission_id,omitempty"`
	// MessageID and Text are a message's (message).
	MessageID string `json:"message_id,omitempty"`
	Text      string `json:"text,omitempty"`
}
