package model

// MaxHardwareID is the longest hardware_id of a device, and the longest node id an
// upstream record names as its origin.
const MaxHardwareID = 128

// Device is a field device registered for offline-first operation, with a permanent id.
// Sync holds where its two logs stand: the items it sent (device → server) and its queue
// (server → device).
type Device struct {
	ID       string  `json:"device_id"`
	Name     string  `json:"name"`
	Platform string  `json:"platform"`
	TeamID   *string `json:"team_id"`
	ZoneCode *string `json:"zone_code"`
	// HardwareID names the physical device: registering it again returns this device.
	HardwareID   *string         `json:"hardware_id"`
	RegisteredBy string          `json:"registered_by"`
	RegisteredAt Time            `json:"registered_at"`
	Sync         DeviceSyncState `json:"sync"`
	// Credential is the device's own credential (docs/decisions/0126-device-credentials.md),
	// null until one is issued.
	Credential *DeviceCredential `json:"credential"`
	// SiteZones, on a central node's device of a site node, are the zones the site created
	// itself, by SiteZoneKey of their code (docs/decisions/0204-site-zone-collisions.md).
	SiteZones map[string]SiteZone `json:"site_zones,omitempty"`
}

// DeviceCredential is the state of a device's credential. Nothing secret is stored: the
// credential is a token signed by the node that names the device and Version, so issuing
// a new one or revoking bumps Version and every older token is refused.
type DeviceCredential struct {
	Version   int64  `json:"version"`
	IssuedBy  string `json:"issued_by"`
	IssuedAt  Time   `json:"issued_at"`
	ExpiresAt Time   `json:"expires_at"`
	RevokedAt *Time  `json:"revoked_at"`
	RevokedBy string `json:"revoked_by,omitempty"`
}

// Valid reports whether a token of version v is still good at now.
func (c *DeviceCredential) Valid(v int64, now Time) bool {
	return c != nil && c.RevokedAt == nil && c.Version == v && now.Before(c.ExpiresAt.Time)
}

// DeviceGrant is what a device credential's token carries: the user it acts for (with the
// user's token version), the device and the credential's version.
type DeviceGrant struct {
	TenantID    string
	UserID      string
	UserVersion int64
	DeviceID    string
	Version     int64
	ExpiresAt   Time
	Device      *Device
}

// DeviceSyncState is where a device's logs stand.
type DeviceSyncState struct {
	// AppliedThrough is the highest sequence number such that every item up to it has
	// been processed (applied or rejected); HighestReceived the highest received.
	AppliedThrough  int64 `json:"applied_through"`
	HighestReceived int64 `json:"highest_received"`
	// Waiting counts the received items above AppliedThrough (held above a gap, or
	// rejected there), so that the missing ones number HighestReceived −
	// AppliedThrough − Waiting.
	Waiting int64 `json:"waiting"`
	// QueueLast is the last queue_sequence given to an item of the device's queue;
	// AckThrough the highest the device has acknowledged.
	QueueLast  int64 `json:"queue_last"`
	AckThrough int64 `json:"ack_through"`
	LastSyncAt *Time `json:"last_sync_at"`
	// Acks are the device's latest acknowledgements of its missions' items (a mission or
	// mission_update), newest last, at most MaxDeviceAcks: when the crew's phone learned
	// of a mission's latest change (docs/decisions/0152-crew-knows.md).
	Acks []DeviceAck `json:"acks,omitempty"`
}

// MaxDeviceAcks bounds DeviceSyncState.Acks.
const MaxDeviceAcks = 32

// DeviceAck is when a device acknowledged the items of a mission, through which sequence.
type DeviceAck struct {
	MissionID     string `json:"mission_id"`
	QueueSequence int64  `json:"queue_sequence"`
	At            Time   `json:"at"`
}

// NoteAck records that the device acknowledged an item of a mission at at, replacing the
// mission's earlier entry and keeping the newest MaxDeviceAcks.
func (s *DeviceSyncState) NoteAck(missionID string, seq int64, at Time) {
	kept := s.Acks[:0:0]
	for _, a := range s.Acks {
		if a.MissionID != missionID {
			kept = append(kept, a)
		}
	}
	kept = append(kept, DeviceAck{MissionID: missionID, QueueSequence: seq, At: at})
	if n := len(kept); n > MaxDeviceAcks {
		kept = kept[n-MaxDeviceAcks:]
	}
	s.Acks = kept
}

// AckOf returns the device's acknowledgement of a mission's items, nil when none is kept.
func (s *DeviceSyncState) AckOf(missionID string) *DeviceAck {
	for i := len(s.Acks) - 1; i >= 0; i-- {
		if s.Acks[i].MissionID == missionID {
			return &s.Acks[i]
		}
	}
	return nil
}

// gapCount is how many sequence numbers below the highest received are missing.
func (s *DeviceSyncState) GapCount() int64 {
	return s.HighestReceived - s.AppliedThrough - s.Waiting
}

// QueueItem is one item of a device's queue as stored: a reference to the mission or
// event it carries.
type QueueItem struct {
	QueueSequence int64  `json:"queue_sequence"`
	Kind          string `json:"kind"`
	MissionID     string `json:"mission_id,omitempty"`
	EventID       string `json:"event_id,omitempty"`
	// Changes lists what a mission_update tells, oldest first: the changes of one mission
	// that the device has not yet received, coalesced into one item.
	Changes  []MissionChange `json:"changes,omitempty"`
	QueuedAt Time            `json:"queued_at"`
}

// QueueEntry is a queue item as a device receives it (docs/openapi.yaml, QueueEntry): the
// mission or event record as it stands now; a mission comes with its event.
type QueueEntry struct {
	QueueSequence int64    `json:"queue_sequence"`
	Kind          string   `json:"kind"`
	Mission       *Mission `json:"mission,omitempty"`
	Event         *Event   `json:"event,omitempty"`
	// TeamName and DispatcherName name a mission's team and the user who dispatched it
	// (empty for an automatic dispatch or an API key): a device reads no team or user.
	TeamName       string `json:"team_name,omitempty"`
	DispatcherName string `json:"dispatcher_name,omitempty"`
	// Changes is what a mission_update item tells (its mission rides as it stands).
	Changes  []MissionChange `json:"changes,omitempty"`
	QueuedAt Time            `json:"queued_at"`
}

// DeviceInput is the body of POST /v1/devices/register.
type DeviceInput struct {
	Name       string `json:"name"`
	Platform   string `json:"platform"`
	TeamID     string `json:"team_id"`
	ZoneCode   string `json:"zone_code"`
	HardwareID string `json:"hardware_id"`
}

// Queue item kinds: what the server owes a device.
const (
	QueueMission = "mission"
	QueueEvent   = "event"
)
