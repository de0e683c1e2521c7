package model

// States of a crew device for a mission (CrewDevice.State).
const (
	// CrewAcknowledged: the device acknowledged every item of the mission queued for it.
	CrewAcknowledged = "acknowledged"
	// CrewNotYetReceived: an item of the mission waits in the device's queue.
	CrewNotYetReceived = "not_yet_received"
	// CrewNothingQueued: nothing of the mission was ever queued for the device (registered
	// since, or its acknowledgement is older than the device keeps).
	CrewNothingQueued = "nothing_queued"
)

// MissionCrew says whether the crew's devices know a mission's latest change (GET
// /v1/missions/:id/crew).
type MissionCrew struct {
	MissionID string `json:"mission_id"`
	// AllAcknowledged is true when every device of the team is CrewAcknowledged.
	AllAcknowledged bool         `json:"all_acknowledged"`
	Devices         []CrewDevice `json:"devices"`
}

// CrewDevice is one device of the team and what it has received of the mission.
type CrewDevice struct {
	DeviceID string `json:"device_id"`
	Name     string `json:"name"`
	State    string `json:"state"`
	// AcknowledgedAt is when it acknowledged the mission's latest item; PendingSince when
	// the oldest item it has not acknowledged was queued.
	AcknowledgedAt *Time `json:"acknowledged_at"`
	PendingSince   *Time `json:"pending_since"`
	LastSyncAt     *Time `json:"last_sync_at"`
}
