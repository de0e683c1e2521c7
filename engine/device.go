package engine

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/teams"
)

// ChannelDevice is the channel_used of a mission whose notification reached its team
// through a device's queue.
const ChannelDevice = "device"

// Limits of a device.
const (
	maxDeviceName     = 200
	maxDevicePlatform = 50
	maxHardwareID     = model.MaxHardwareID
)

// isTeamMember reports whether the user is a member of the team.
func isTeamMember(tx model.Tx, tenantID, teamID, userID string) (bool, error) {
	if userID == "" {
		return false, nil
	}
	t, err := tx.Team(tenantID, teamID)
	if model.IsKind(err, model.KindNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(t.Members, func(m model.Member) bool { return m.UserID == userID }), nil
}

// deviceAccess reports whether p may sync a device (read false) or read its queue (read
// true). devices:manage may do both on every device of the tenant, and so may an API key
// with devices:sync (a key is nobody's team member). A user with devices:sync (a field
// operator) syncs the devices of its own teams and devices with no team; reading a queue
// is also open to any member of the device's team.
func deviceAccess(tx model.Tx, p model.Principal, d *model.Device, read bool) (bool, error) {
	if p.DeviceID != "" && p.DeviceID != d.ID {
		return false, nil // a device credential uses its own device and no other
	}
	if p.Can(model.PermDevicesManage) {
		return true, nil
	}
	sync := p.Can(model.PermDevicesSync)
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
func visibleDevice(tx model.Tx, p model.Principal, id string, read bool) (*model.Device, error) {
	if !model.ValidID(id) {
		return nil, model.NotFound("device")
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
		return nil, model.NotFound("device")
	}
	return d, nil
}

// RegisterDevice registers a device of p's tenant (POST /v1/devices/register) and
// reports whether it is new; w's Render gets a model.DeviceRegistered. devices:manage registers any device; a user holding
// devices:sync (a field operator) registers devices of a team it is a member of, and must
// name that team. A hardware_id already registered returns its device as it is, whatever
// the rest of the body says, when p may use that device (else conflict). A device with a
// zone becomes a target of the zone's events: the pending events that had no target are
// planned again.
func (e *Engine) RegisterDevice(ctx context.Context, p model.Principal, in model.DeviceInput, w *model.Write) (*model.Device, bool, error) {
	r, err := write(ctx, e, p.TenantID, w, func(tx model.Tx) (model.DeviceRegistered, error) {
		d, created, err := e.registerDevice(tx, p, in)
		return model.DeviceRegistered{Device: d, Created: created}, err
	})
	return r.Device, r.Created, err
}

// registerDevice is RegisterDevice within tx.
func (e *Engine) registerDevice(tx model.Tx, p model.Principal, in model.DeviceInput) (*model.Device, bool, error) {
	manage := p.Can(model.PermDevicesManage)
	if !manage && (p.IsKey() || !p.Can(model.PermDevicesSync)) {
		return nil, false, model.Errorf(model.KindForbidden, "this operation needs the %s permission", model.PermDevicesManage)
	}
	name, err := model.RequireText("name", in.Name, maxDeviceName)
	if err != nil {
		return nil, false, err
	}
	platform, err := model.RequireText("platform", in.Platform, maxDevicePlatform)
	if err != nil {
		return nil, false, err
	}
	hardware := strings.TrimSpace(in.HardwareID)
	if err := model.CheckName("hardware_id", hardware, maxHardwareID); err != nil {
		return nil, false, err
	}
	if in.TeamID == "" && !manage {
		// A field operator's device belongs to its team: a member of exactly one team may
		// leave it out (the field app cannot read teams), else it must name it.
		own, err := ownTeamIDs(tx, p.TenantID, p.UserID)
		if err != nil {
			return nil, false, err
		}
		if len(own) != 1 {
			return nil, false, model.Invalid("team_id", "team_id is required: a field operator registers devices of its own team (it is a member of %d)", len(own))
		}
		in.TeamID = own[0]
	}
	if in.TeamID != "" {
		if !model.ValidID(in.TeamID) {
			return nil, false, model.Invalid("team_id", "team_id must be a team's id")
		}
		if _, err := tx.Team(p.TenantID, in.TeamID); model.IsKind(err, model.KindNotFound) {
			return nil, false, model.Invalid("team_id", "team %s does not exist", model.Quote(in.TeamID))
		} else if err != nil {
			return nil, false, err
		}
	}
	if err := teams.CheckZone(tx, p.TenantID, in.ZoneCode); err != nil {
		return nil, false, err
	}
	if !manage {
		member, err := isTeamMember(tx, p.TenantID, in.TeamID, p.UserID)
		if err != nil {
			return nil, false, err
		}
		if !member {
			return nil, false, model.Errorf(model.KindForbidden, "a field operator registers devices of its own teams only")
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
				return nil, false, model.Errorf(model.KindConflict, "hardware_id %s is registered to another team's device", model.Quote(hardware))
			}
			return d, false, nil
		case !model.IsKind(err, model.KindNotFound):
			return nil, false, err
		}
	}
	now := model.At(e.clock.Now())
	d := &model.Device{ID: e.ids.at(now.Time), Name: name, Platform: platform, RegisteredBy: p.ActorID(), RegisteredAt: now}
	if in.TeamID != "" {
		d.TeamID = model.PtrTo(in.TeamID)
	}
	if in.ZoneCode != "" {
		d.ZoneCode = model.PtrTo(in.ZoneCode)
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
func (e *Engine) queueForDevices(tx model.Tx, tenantID string, ids []string, skip string, q model.QueueItem) (int, error) {
	n := 0
	for _, id := range ids {
		if id == skip {
			continue
		}
		d, err := tx.Device(tenantID, id)
		if model.IsKind(err, model.KindNotFound) {
			continue
		}
		if err != nil {
			return n, err
		}
		d.Sync.QueueLast++
		q.QueueSequence, q.QueuedAt = d.Sync.QueueLast, model.At(e.clock.Now())
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
func (e *Engine) queueMission(tx model.Tx, tenantID, teamID, missionID, eventID string) error {
	ids, err := tx.DevicesOfTeam(tenantID, teamID)
	if err != nil || len(ids) == 0 {
		return err
	}
	_, err = e.queueForDevices(tx, tenantID, ids, "", model.QueueItem{Kind: model.QueueMission, MissionID: missionID, EventID: eventID})
	return err
}

// eventDevices lists the devices whose queues are rest_full targets of an event: those
// registered to its zone, but the device that sent it. An event with no zone has none.
func eventDevices(tx model.Tx, tenantID string, ev *model.Event) ([]string, error) {
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
func (e *Engine) queueEvent(tx model.Tx, tenantID string, ev *model.Event) (int, error) {
	ids, err := eventDevices(tx, tenantID, ev)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	return e.queueForDevices(tx, tenantID, ids, "", model.QueueItem{Kind: model.QueueEvent, EventID: ev.ID})
}

// acknowledge removes a device's queue items up to through and settles what they
// carried: a mission reaches SENT (channel device), an event is delivered.
func (e *Engine) acknowledge(tx model.Tx, tenantID string, d *model.Device, through int64) error {
	if through > d.Sync.QueueLast {
		return model.Invalid("ack_through", "ack_through %d is beyond the last queue_sequence given to this device (%d)", through, d.Sync.QueueLast)
	}
	if through <= d.Sync.AckThrough {
		return nil
	}
	items, err := tx.DeleteQueueItems(tenantID, d.ID, through)
	if err != nil {
		return err
	}
	d.Sync.AckThrough = through
	now := model.At(e.clock.Now())
	for i := range items {
		q := &items[i]
		if q.Kind == model.QueueMission || q.Kind == model.QueueMissionUpdate {
			d.Sync.NoteAck(q.MissionID, q.QueueSequence, now)
		}
		switch q.Kind {
		case model.QueueMission:
			err = e.markMissionSent(tx, tenantID, q.MissionID, ChannelDevice, d.ID)
		case model.QueueEvent:
			err = e.settleDelivery(tx, &model.OutboxEntry{TenantID: tenantID, EventID: q.EventID, Channel: model.ChannelREST, Attempts: 1}, true, true)
		}
		if err != nil && !model.IsKind(err, model.KindNotFound) {
			return err
		}
	}
	return nil
}

// queueEntries renders queue items with their records as they stand.
func queueEntries(tx model.Tx, tenantID string, items []model.QueueItem) ([]model.QueueEntry, error) {
	out := make([]model.QueueEntry, 0, len(items))
	for _, q := range items {
		qe := model.QueueEntry{QueueSequence: q.QueueSequence, Kind: q.Kind, QueuedAt: q.QueuedAt}
		var err error
		switch q.Kind {
		case model.QueueMission, model.QueueMissionUpdate:
			qe.Changes = q.Changes
			// The mission's event rides with it: the team needs its type, place and
			// equipment to act, and a device reads nothing
			// else (docs/decisions/0127-field-app.md).
			if qe.Mission, err = tx.Mission(tenantID, q.MissionID); err == nil {
				err = missionContext(tx, tenantID, &qe)
			}
		case model.QueueEvent:
			qe.Event, err = tx.Event(tenantID, q.EventID)
		}
		if err != nil && !model.IsKind(err, model.KindNotFound) {
			return nil, err
		}
		out = append(out, qe)
	}
	return out, nil
}

// missionContext adds to a mission's queue entry what the team needs to act and a device
// cannot read otherwise: the event, the team's name and the dispatcher's name.
func missionContext(tx model.Tx, tenantID string, qe *model.QueueEntry) error {
	m := qe.Mission
	ev, err := tx.Event(tenantID, m.EventID)
	if err != nil {
		return err
	}
	qe.Event = ev
	if t, err := tx.Team(tenantID, m.TeamID); err == nil {
		qe.TeamName = t.Name
	} else if !model.IsKind(err, model.KindNotFound) {
		return err
	}
	if model.ValidID(m.DispatchedBy) && m.DispatchedBy != model.NilID {
		if u, err := tx.UserAccount(tenantID, m.DispatchedBy); err == nil {
			qe.DispatcherName = u.Name
		} else if !model.IsKind(err, model.KindNotFound) {
			return err
		}
	}
	return nil
}

// DeviceQueue lists a page of a device's pending queue, the items after its last
// ack_through, in queue order (GET /v1/devices/:id/queue); the string is the next cursor
// ("" at the end). It is readable by devices:manage, by members of the device's team and
// by whoever may sync the device; any other device, or another tenant's, is not found.
func (e *Engine) DeviceQueue(ctx context.Context, p model.Principal, id string, pg model.Page) ([]model.QueueEntry, string, error) {
	after := int64(-1)
	if pg.Cursor != "" {
		n, err := strconv.ParseInt(pg.Cursor, 10, 64)
		if err != nil || n < 0 {
			return nil, "", model.Invalid("cursor", "cursor is not valid")
		}
		after = n
	}
	if pg.Limit <= 0 {
		pg.Limit = 50
	}
	var out []model.QueueEntry
	var next string
	err := e.store.View(ctx, func(tx model.Tx) error {
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
				n = model.JSONSize(&entries[i])
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
