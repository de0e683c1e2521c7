package engine

import (
	"context"
	"slices"
	"strconv"
	"strings"
)

// Queue item kinds: what the server owes a device.
const (
	QueueMission = "mission"
	QueueEvent   = "event"
)

// ChannelDevice is the channel_used of a mission whose notification reached its team
// through a device's queue.
const ChannelDevice = "device"

// Limits of a device.
const (
	maxDeviceName     = 200
	maxDevicePlatform = 50
	maxHardwareID     = 128
)

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
}

// gapCount is how many sequence numbers below the highest received are missing.
func (s *DeviceSyncState) gapCount() int64 {
	return s.HighestReceived - s.AppliedThrough - s.Waiting
}

// QueueItem is one item of a device's queue as stored: a reference to the mission or
// event it carries.
type QueueItem struct {
	QueueSequence int64  `json:"queue_sequence"`
	Kind          string `json:"kind"`
	MissionID     string `json:"mission_id,omitempty"`
	EventID       string `json:"event_id,omitempty"`
	QueuedAt      Time   `json:"queued_at"`
}

// QueueEntry is a queue item as a device receives it (API.md, Device queue item): the
// mission or event record as it stands now.
type QueueEntry struct {
	QueueSequence int64    `json:"queue_sequence"`
	Kind          string   `json:"kind"`
	Mission       *Mission `json:"mission,omitempty"`
	Event         *Event   `json:"event,omitempty"`
	QueuedAt      Time     `json:"queued_at"`
}

// DeviceInput is the body of POST /v1/devices/register.
type DeviceInput struct {
	Name       string `json:"name"`
	Platform   string `json:"platform"`
	TeamID     string `json:"team_id"`
	ZoneCode   string `json:"zone_code"`
	HardwareID string `json:"hardware_id"`
}

// isTeamMember reports whether the user is a member of the team.
func isTeamMember(tx Tx, tenantID, teamID, userID string) (bool, error) {
	if userID == "" {
		return false, nil
	}
	t, err := tx.Team(tenantID, teamID)
	if IsKind(err, KindNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(t.Members, func(m Member) bool { return m.UserID == userID }), nil
}

// deviceAccess reports whether p may sync a device (read false) or read its queue (read
// true). devices:manage may do both on every device of the tenant, and so may an API key
// with devices:sync (a key is nobody's team member). A user with devices:sync (a field
// operator) syncs the devices of its own teams and devices with no team; reading a queue
// is also open to any member of the device's team.
func deviceAccess(tx Tx, p Principal, d *Device, read bool) (bool, error) {
	if p.Can(PermDevicesManage) {
		return true, nil
	}
	sync := p.Can(PermDevicesSync)
	if p.IsKey() {
		return sync, nil
	}
	if d.TeamID == nil {
		return sync, nil
	}
	if !sync && !read {
		return false, nil
	}
	return isTeamMember(tx, p.TenantID, *d.TeamID, p.UserID)
}

// visibleDevice reads a device p may use: another tenant's, or one p may not use, is not
// found.
func visibleDevice(tx Tx, p Principal, id string, read bool) (*Device, error) {
	if !ValidID(id) {
		return nil, NotFound("device")
	}
	d, err := tx.Device(p.TenantID, id)
	if err != nil {
		return nil, err
	}
	ok, err := deviceAccess(tx, p, d, read)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, NotFound("device")
	}
	return d, nil
}

// RegisterDevice registers a device of p's tenant (POST /v1/devices/register) within tx
// and reports whether it is new. devices:manage registers any device; a user holding
// devices:sync (a field operator) registers devices of a team it is a member of, and must
// name that team. A hardware_id already registered returns its device as it is, whatever
// the rest of the body says, when p may use that device (else conflict). A device with a
// zone becomes a target of the zone's events: the pending events that had no target are
// planned again.
func (e *Engine) RegisterDevice(tx Tx, p Principal, in DeviceInput) (*Device, bool, error) {
	manage := p.Can(PermDevicesManage)
	if !manage && (p.IsKey() || !p.Can(PermDevicesSync)) {
		return nil, false, Errorf(KindForbidden, "this operation needs the %s permission", PermDevicesManage)
	}
	name, err := requireText("name", in.Name, maxDeviceName)
	if err != nil {
		return nil, false, err
	}
	platform, err := requireText("platform", in.Platform, maxDevicePlatform)
	if err != nil {
		return nil, false, err
	}
	hardware := strings.TrimSpace(in.HardwareID)
	if err := checkLength("hardware_id", hardware, maxHardwareID); err != nil {
		return nil, false, err
	}
	if in.TeamID != "" {
		if !ValidID(in.TeamID) {
			return nil, false, Invalid("team_id", "team_id must be a team's id")
		}
		if _, err := tx.Team(p.TenantID, in.TeamID); IsKind(err, KindNotFound) {
			return nil, false, Invalid("team_id", "team %s does not exist", Quote(in.TeamID))
		} else if err != nil {
			return nil, false, err
		}
	} else if !manage {
		return nil, false, Invalid("team_id", "team_id is required: a field operator registers devices of its own team")
	}
	if err := checkTeamZone(tx, p.TenantID, in.ZoneCode); err != nil {
		return nil, false, err
	}
	if !manage {
		member, err := isTeamMember(tx, p.TenantID, in.TeamID, p.UserID)
		if err != nil {
			return nil, false, err
		}
		if !member {
			return nil, false, Errorf(KindForbidden, "a field operator registers devices of its own teams only")
		}
	}
	if hardware != "" {
		d, err := tx.DeviceByHardware(p.TenantID, hardware)
		switch {
		case err == nil:
			ok, err := deviceAccess(tx, p, d, false)
			if err != nil {
				return nil, false, err
			}
			if !ok {
				return nil, false, Errorf(KindConflict, "hardware_id %s is registered to another team's device", Quote(hardware))
			}
			return d, false, nil
		case !IsKind(err, KindNotFound):
			return nil, false, err
		}
	}
	now := At(e.clock.Now())
	d := &Device{ID: NewIDAt(now.Time), Name: name, Platform: platform, RegisteredBy: p.ActorID(), RegisteredAt: now}
	if in.TeamID != "" {
		d.TeamID = ptrTo(in.TeamID)
	}
	if in.ZoneCode != "" {
		d.ZoneCode = ptrTo(in.ZoneCode)
	}
	if hardware != "" {
		d.HardwareID = &hardware
	}
	if err := tx.PutDevice(p.TenantID, d); err != nil {
		return nil, false, err
	}
	if d.ZoneCode != nil {
		if err := e.releaseWaiting(tx, p.TenantID); err != nil {
			return nil, false, err
		}
	}
	return d, true, nil
}

// queueForDevices appends an item to the queue of each device in ids but skip, giving
// each its device's next queue_sequence, and returns how many it queued.
func (e *Engine) queueForDevices(tx Tx, tenantID string, ids []string, skip string, q QueueItem) (int, error) {
	n := 0
	for _, id := range ids {
		if id == skip {
			continue
		}
		d, err := tx.Device(tenantID, id)
		if IsKind(err, KindNotFound) {
			continue
		}
		if err != nil {
			return n, err
		}
		d.Sync.QueueLast++
		q.QueueSequence, q.QueuedAt = d.Sync.QueueLast, At(e.clock.Now())
		if err := tx.PutQueueItem(tenantID, id, &q); err != nil {
			return n, err
		}
		if err := tx.PutDevice(tenantID, d); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// queueMission queues a new mission for the devices of its team: a target of the team's
// notification (notifyTeam). A device acknowledging it makes the mission SENT.
func (e *Engine) queueMission(tx Tx, tenantID, teamID, missionID, eventID string) error {
	ids, err := tx.DevicesOfTeam(tenantID, teamID)
	if err != nil || len(ids) == 0 {
		return err
	}
	_, err = e.queueForDevices(tx, tenantID, ids, "", QueueItem{Kind: QueueMission, MissionID: missionID, EventID: eventID})
	return err
}

// eventDevices lists the devices whose queues are rest_full targets of an event: those
// registered to its zone, but the device that sent it. An event with no zone has none.
func eventDevices(tx Tx, tenantID string, ev *Event) ([]string, error) {
	if ev.ZoneCode == nil {
		return nil, nil
	}
	ids, err := tx.DevicesOfZone(tenantID, *ev.ZoneCode)
	if err != nil {
		return nil, err
	}
	if ev.DeviceID != nil {
		ids = slices.DeleteFunc(ids, func(id string) bool { return id == *ev.DeviceID })
	}
	return ids, nil
}

// queueEvent queues an event for the devices of its zone (the device half of rest_full)
// and returns how many messages that makes: each is outstanding until its device
// acknowledges it.
func (e *Engine) queueEvent(tx Tx, tenantID string, ev *Event) (int, error) {
	ids, err := eventDevices(tx, tenantID, ev)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	return e.queueForDevices(tx, tenantID, ids, "", QueueItem{Kind: QueueEvent, EventID: ev.ID})
}

// acknowledge removes a device's queue items up to through and settles what they
// carried: a mission reaches SENT (channel device), an event is delivered.
func (e *Engine) acknowledge(tx Tx, tenantID string, d *Device, through int64) error {
	if through > d.Sync.QueueLast {
		return Invalid("ack_through", "ack_through %d is beyond the last queue_sequence given to this device (%d)", through, d.Sync.QueueLast)
	}
	if through <= d.Sync.AckThrough {
		return nil
	}
	items, err := tx.DeleteQueueItems(tenantID, d.ID, through)
	if err != nil {
		return err
	}
	d.Sync.AckThrough = through
	for i := range items {
		q := &items[i]
		switch q.Kind {
		case QueueMission:
			err = e.MarkMissionSent(tx, tenantID, q.MissionID, ChannelDevice)
		case QueueEvent:
			err = e.settleDelivery(tx, &OutboxEntry{TenantID: tenantID, EventID: q.EventID, Channel: ChannelREST, Attempts: 1}, true, true)
		}
		if err != nil && !IsKind(err, KindNotFound) {
			return err
		}
	}
	return nil
}

// queueEntries renders queue items with their records as they stand.
func queueEntries(tx Tx, tenantID string, items []QueueItem) ([]QueueEntry, error) {
	out := make([]QueueEntry, 0, len(items))
	for _, q := range items {
		qe := QueueEntry{QueueSequence: q.QueueSequence, Kind: q.Kind, QueuedAt: q.QueuedAt}
		var err error
		switch q.Kind {
		case QueueMission:
			qe.Mission, err = tx.Mission(tenantID, q.MissionID)
		case QueueEvent:
			qe.Event, err = tx.Event(tenantID, q.EventID)
		}
		if err != nil && !IsKind(err, KindNotFound) {
			return nil, err
		}
		out = append(out, qe)
	}
	return out, nil
}

// DeviceQueue lists a page of a device's pending queue, the items after its last
// ack_through, in queue order (GET /v1/devices/:id/queue); the string is the next cursor
// ("" at the end). It is readable by devices:manage, by members of the device's team and
// by whoever may sync the device; any other device, or another tenant's, is not found.
func (e *Engine) DeviceQueue(ctx context.Context, p Principal, id string, pg Page) ([]QueueEntry, string, error) {
	after := int64(-1)
	if pg.Cursor != "" {
		n, err := strconv.ParseInt(pg.Cursor, 10, 64)
		if err != nil || n < 0 {
			return nil, "", Invalid("cursor", "cursor is not valid")
		}
		after = n
	}
	if pg.Limit <= 0 {
		pg.Limit = 50
	}
	var out []QueueEntry
	var next string
	err := e.store.View(ctx, func(tx Tx) error {
		d, err := visibleDevice(tx, p, id, true)
		if err != nil {
			return err
		}
		after = max(after, d.Sync.AckThrough)
		items, err := tx.QueueItems(p.TenantID, d.ID, after, pg.Limit+1)
		if err != nil {
			return err
		}
		entries, err := queueEntries(tx, p.TenantID, items)
		if err != nil {
			return err
		}
		size := 0
		for i := range entries {
			n := 0
			if pg.MaxBytes > 0 {
				n = jsonSize(&entries[i])
			}
			if pg.Full(i, size, n) {
				entries = entries[:i]
				next = strconv.FormatInt(entries[i-1].QueueSequence, 10)
				break
			}
			size += n
		}
		out = entries
		return nil
	})
	return out, next, err
}
