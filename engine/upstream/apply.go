package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/writes"
	"github.com/google/uuid"
)

// PlatformNode is the platform of a device that is another fieldrelay node: the only
// devices whose upstream_* items are accepted. Its hardware_id is the node's id.
const PlatformNode = model.PlatformNode

// Source is the source of a replicated record (model.Event.Source).
const Source = "upstream"

// isUpstreamKind reports whether kind is one of the upstream_* kinds.
func isUpstreamKind(kind string) bool {
	return kind == model.ItemUpstreamEvent || kind == model.ItemUpstreamDispatch || kind == model.ItemUpstreamMission ||
		kind == model.ItemUpstreamDispatchRequest || kind == model.ItemUpstreamTeamStatus || kind == model.ItemUpstreamSiteZone
}

// MayApply checks, on receipt, that an upstream_* item comes from a node: a device
// registered with platform fieldrelay-node and a hardware_id (the node id that becomes
// the origin of its records), sent by a caller holding devices:manage (what registering
// the node took: a field operator may sync a device of its team but must not write
// another node's records). Any other kind passes.
func MayApply(p model.Principal, d *model.Device, kind string) error {
	if !isUpstreamKind(kind) {
		return nil
	}
	switch {
	case d.Platform != PlatformNode:
		return model.Errorf(model.KindForbidden, "%s items are accepted only from a device registered with platform %s", kind, PlatformNode)
	case d.HardwareID == nil || *d.HardwareID == "":
		return model.Errorf(model.KindForbidden, "a %s device must be registered with its node id as hardware_id", PlatformNode)
	case !p.Can(model.PermDevicesManage):
		return model.Errorf(model.KindForbidden, "a %s item needs the %s permission", kind, model.PermDevicesManage)
	}
	return nil
}

// Apply applies an upstream_* item of a node device within tx and reports
// whether it was a duplicate (the record as sent is not newer than the copy held here:
// nothing changed). A replicated record is written with the plain Put methods and
// nothing else: no outbox entry, webhook, delivery plan, parked index, device queue,
// auto-dispatch, reinforcement check, mission code, team status, ledger entry or usage
// counter. Every check reads tx only, so the function may run again in a retried batch.
func Apply(tx Tx, tenantID string, d *model.Device, it *model.DeviceItem) (dup bool, err error) {
	switch it.Kind {
	case model.ItemUpstreamEvent:
		return applyUpstreamEvent(tx, tenantID, d, it)
	case model.ItemUpstreamDispatch:
		return applyUpstreamDispatch(tx, tenantID, d, it)
	case model.ItemUpstreamMission:
		return applyUpstreamMission(tx, tenantID, d, it)
	case model.ItemUpstreamDispatchRequest:
		return applyRequestDecision(tx, tenantID, d, it)
	case model.ItemUpstreamTeamStatus:
		return applyTeamStatus(tx, tenantID, d, it)
	case model.ItemUpstreamSiteZone:
		return applySiteZone(tx, tenantID, d, it)
	}
	return false, model.Internal(fmt.Errorf("upstream.Apply: kind %q", it.Kind))
}

// putRecord says that a replicated record was written (writes.Changed: a node further up
// gets it too) once err, the error of its Put, is nil.
func putRecord(tx Tx, tenantID, kind, id string, err error) error {
	if err == nil {
		writes.Changed(tx, tenantID, kind, id)
	}
	return err
}

// upstreamOrigin is the origin of a replicated record: its own when it has one (it came
// through the sender from a node further down), else the sending node's id.
func upstreamOrigin(own *string, d *model.Device) (*string, error) {
	if own == nil {
		v := *d.HardwareID
		return &v, nil
	}
	if *own == "" || len(*own) > model.MaxHardwareID {
		return nil, model.Invalid("origin", "origin must be a node id (1 to %d characters) or null", model.MaxHardwareID)
	}
	v := *own
	return &v, nil
}

// sameOrigin reports whether a stored record's origin is origin: a replica of the same
// node may be replaced; a local record (origin null) or another node's never is.
func sameOrigin(stored, origin *string) bool {
	return stored != nil && origin != nil && *stored == *origin
}

// decodeUpstream decodes a replicated record. A timestamp that does not parse is not a
// type error json can name, so when decoding fails without naming a field, the record's
// timestamps are read one by one, by name (history moves as history[i].at), to find it.
// A good record is decoded once.
func decodeUpstream(raw json.RawMessage, v any, times ...string) error {
	err := model.DecodeItemPayload(raw, v)
	var de *model.Error
	if err == nil || errors.As(err, &de) && de.Field != "" {
		return err
	}
	if ferr := badTimestamp(raw, times); ferr != nil {
		return ferr
	}
	return err
}

// badTimestamp names the first of the record's timestamps that is neither null nor an
// RFC 3339 string, or returns nil.
func badTimestamp(raw json.RawMessage, times []string) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return model.Invalid("", "payload could not be read")
	}
	checkTime := func(field string, b json.RawMessage) error {
		if model.IsNullJSON(b) {
			return nil
		}
		var s string
		if json.Unmarshal(b, &s) != nil {
			return model.Invalid(field, "%s must be an RFC 3339 timestamp", field)
		}
		if _, err := model.ParseTime(s); err != nil {
			return model.Invalid(field, "%s must be an RFC 3339 timestamp", field)
		}
		return nil
	}
	for _, name := range times {
		if err := checkTime(name, obj[name]); err != nil {
			return err
		}
	}
	if h, ok := obj["history"]; ok && !model.IsNullJSON(h) {
		var moves []map[string]json.RawMessage
		if json.Unmarshal(h, &moves) != nil {
			return model.Invalid("history", "history must be an array of moves")
		}
		for i, mv := range moves {
			if mv == nil {
				return model.Invalid(fmt.Sprintf("history[%d]", i), "each move of history must be an object")
			}
			if err := checkTime(fmt.Sprintf("history[%d].at", i), mv["at"]); err != nil {
				return err
			}
		}
	}
	return nil
}

// requireID checks a required UUID field.
func requireID(field, v string) error {
	switch {
	case v == "":
		return model.Invalid(field, "%s is required", field)
	case !model.ValidID(v):
		return model.Invalid(field, "%s must be a UUID", field)
	}
	return nil
}

// requireRecordID checks the id of a replicated record: a UUIDv7, as every id a node
// makes, since lists walk records in the time order of their ids (and since/until bound
// events by it).
func requireRecordID(field, v string) error {
	if err := requireID(field, v); err != nil {
		return err
	}
	if uuid.MustParse(v).Version() != 7 {
		return model.Invalid(field, "%s must be a UUIDv7", field)
	}
	return nil
}

// requireTime checks a required timestamp field.
func requireTime(field string, t model.Time) error {
	if t.IsZero() {
		return model.Invalid(field, "%s is required", field)
	}
	return nil
}

// eventStatuses and eventChannels are the values a replicated event may hold.
var (
	eventStatuses = []string{model.EventPending, model.EventDelivered, model.EventFailed, model.EventQueuedOffline, model.EventClosed}
	eventChannels = []string{model.ChannelREST, model.ChannelSMS, model.ChannelQueued}
)

// checkUpstreamEvent validates a replicated event record.
func checkUpstreamEvent(ev *model.Event) error {
	if err := requireRecordID("event_id", ev.ID); err != nil {
		return err
	}
	switch {
	case ev.Type == "":
		return model.Invalid("type", "type is required")
	case ev.Priority == "":
		return model.Invalid("priority", "priority is required")
	case !slices.Contains(model.Priorities, ev.Priority):
		return model.Invalid("priority", "priority must be one of critical, high, normal, low")
	case ev.Vertical == "":
		return model.Invalid("vertical", "vertical is required")
	case ev.IdempotencyKey == "":
		return model.Invalid("idempotency_key", "idempotency_key is required")
	case ev.Status == "":
		return model.Invalid("status", "status is required")
	case !slices.Contains(eventStatuses, ev.Status):
		return model.Invalid("status", "status must be one of pending, delivered, failed, queued_offline, closed")
	case ev.ChannelSelected == "":
		return model.Invalid("channel_selected", "channel_selected is required")
	case !slices.Contains(eventChannels, ev.ChannelSelected):
		return model.Invalid("channel_selected", "channel_selected must be one of rest_full, sms, queued_offline")
	}
	if err := requireTime("created_at", ev.CreatedAt); err != nil {
		return err
	}
	return requireTime("updated_at", ev.UpdatedAt)
}

// applyUpstreamEvent upserts a replicated event by event_id: stored when absent, replaced
// when its updated_at is newer than the copy's (equal or older: duplicate). It keeps its
// id, timestamps and status; source becomes upstream, origin is set (upstreamOrigin), and
// the delivery state is cleared: this node delivers nothing of it. An id that names a
// local event or another node's is a conflict.
func applyUpstreamEvent(tx Tx, tenantID string, d *model.Device, it *model.DeviceItem) (bool, error) {
	var ev model.Event
	if err := decodeUpstream(it.Payload, &ev, "captured_at", "created_at", "updated_at", "delivered_at", "closed_at"); err != nil {
		return false, err
	}
	if err := checkUpstreamEvent(&ev); err != nil {
		return false, err
	}
	origin, err := upstreamOrigin(ev.Origin, d)
	if err != nil {
		return false, err
	}
	it.EventID = ev.ID
	cur, err := tx.Event(tenantID, ev.ID)
	switch {
	case model.IsKind(err, model.KindNotFound):
	case err != nil:
		return false, err
	case cur.Source != Source || !sameOrigin(cur.Origin, origin):
		return false, &model.Error{Kind: model.KindConflict, Field: "event_id", Msg: fmt.Sprintf("event %s is held here as a record of another origin", ev.ID)}
	case !ev.UpdatedAt.After(cur.UpdatedAt.Time):
		return true, nil
	}
	ev.Source, ev.Origin, ev.Delivery = Source, origin, model.DeliveryState{}
	if ev.ChannelsAttempted == nil {
		ev.ChannelsAttempted = []string{}
	}
	if p := bytes.TrimSpace(ev.Payload); len(p) == 0 || bytes.Equal(p, []byte("null")) {
		ev.Payload = nil
	}
	return false, putRecord(tx, tenantID, model.ChangeEvent, ev.ID, tx.PutEvent(tenantID, &ev))
}

// applyUpstreamDispatch inserts a replicated dispatch record once by id (a second time:
// duplicate). tenant_id becomes this node's tenant. No ledger entry: the billable
// operation was recorded where the dispatch was made.
func applyUpstreamDispatch(tx Tx, tenantID string, d *model.Device, it *model.DeviceItem) (bool, error) {
	var dp model.Dispatch
	if err := decodeUpstream(it.Payload, &dp, "dispatched_at"); err != nil {
		return false, err
	}
	if err := requireRecordID("id", dp.ID); err != nil {
		return false, err
	}
	for _, c := range [][2]string{{"event_id", dp.EventID}, {"team_id", dp.TeamID},
		{"mission_id", dp.MissionID}, {"dispatched_by", dp.DispatchedBy}} {
		if err := requireID(c[0], c[1]); err != nil {
			return false, err
		}
	}
	if err := requireTime("dispatched_at", dp.DispatchedAt); err != nil {
		return false, err
	}
	origin, err := upstreamOrigin(dp.Origin, d)
	if err != nil {
		return false, err
	}
	it.EventID = dp.EventID
	switch _, err := tx.Dispatch(tenantID, dp.ID); {
	case err == nil:
		return true, nil
	case !model.IsKind(err, model.KindNotFound):
		return false, err
	}
	dp.TenantID, dp.Origin = tenantID, origin
	return false, putRecord(tx, tenantID, model.ChangeDispatch, dp.ID, tx.PutDispatch(tenantID, &dp))
}

// checkUpstreamMission validates a replicated mission record: ids, a known status, the
// timestamps every mission has, and a history of known moves that ends in the status.
func checkUpstreamMission(m *model.Mission) error {
	if err := requireRecordID("id", m.ID); err != nil {
		return err
	}
	for _, c := range [][2]string{{"event_id", m.EventID}, {"team_id", m.TeamID}} {
		if err := requireID(c[0], c[1]); err != nil {
			return err
		}
	}
	switch {
	case m.Status == "":
		return model.Invalid("status", "status is required")
	case !model.ValidMissionState(m.Status):
		return model.Invalid("status", "status must be one of %s", strings.Join(model.MissionStates, ", "))
	}
	for _, c := range []struct {
		field string
		t     model.Time
	}{{"dispatched_at", m.DispatchedAt}, {"created_at", m.CreatedAt}, {"updated_at", m.UpdatedAt}} {
		if err := requireTime(c.field, c.t); err != nil {
			return err
		}
	}
	if len(m.History) == 0 {
		return model.Invalid("history", "history is required: a mission has at least its creation")
	}
	for i, mv := range m.History {
		switch {
		case mv.From != "" && !model.ValidMissionState(mv.From):
			return model.Invalid(fmt.Sprintf("history[%d].from", i), "from must be empty or one of %s", strings.Join(model.MissionStates, ", "))
		case !model.ValidMissionState(mv.To):
			return model.Invalid(fmt.Sprintf("history[%d].to", i), "to must be one of %s", strings.Join(model.MissionStates, ", "))
		case mv.At.IsZero():
			return model.Invalid(fmt.Sprintf("history[%d].at", i), "at is required")
		}
	}
	for i := range m.History {
		if m.History[i].To == m.Status {
			return nil
		}
	}
	return model.Invalid("status", "status %s is no move of the history", m.Status)
}

// applyUpstreamMission upserts a replicated mission: stored when absent; else the
// record's moves and the copy's are merged by union (moves recorded here on the copy are
// kept until the owner sends them back), and a record that brings no new move and is not
// newer is a duplicate. A different event or team, or an id that names a local mission or
// another node's, is a conflict: nothing changes, and the sender learns it. The record is kept as sent (its code too, which indexes nothing
// here) but for origin.
func applyUpstreamMission(tx Tx, tenantID string, d *model.Device, it *model.DeviceItem) (bool, error) {
	var m model.Mission
	if err := decodeUpstream(it.Payload, &m, "dispatched_at", "ack_at", "on_route_at", "on_site_at", "completed_at",
		"failed_at", "created_at", "updated_at"); err != nil {
		return false, err
	}
	if err := checkUpstreamMission(&m); err != nil {
		return false, err
	}
	origin, err := upstreamOrigin(m.Origin, d)
	if err != nil {
		return false, err
	}
	it.EventID = m.EventID
	cur, err := tx.Mission(tenantID, m.ID)
	switch {
	case model.IsKind(err, model.KindNotFound):
	case err != nil:
		return false, err
	case !sameOrigin(cur.Origin, origin):
		return false, &model.Error{Kind: model.KindConflict, Field: "id", Msg: fmt.Sprintf("mission %s is held here as a record of another origin", m.ID)}
	case cur.EventID != m.EventID || cur.TeamID != m.TeamID:
		return false, &model.Error{Kind: model.KindConflict, Field: "id", Msg: fmt.Sprintf("mission %s is held here with another event or team", m.ID)}
	default:
		// The moves are facts merged by union: the owner's record, with the moves
		// recorded here that it has not seen yet (docs/decisions/0198-mission-moves-union.md).
		held, heldMsgs := len(cur.History), len(cur.Messages)
		model.MergeMoves(&m, cur.History)
		model.MergeMessages(&m, cur.Messages) // the messages written here travel the same way
		if len(m.History) == held && len(m.Messages) == heldMsgs && !m.UpdatedAt.After(cur.UpdatedAt.Time) {
			return true, nil // nothing new
		}
	}
	m.Origin = origin
	if model.IsNullJSON(m.Feedback) {
		m.Feedback = nil
	}
	return false, putRecord(tx, tenantID, model.ChangeMission, m.ID, tx.PutMission(tenantID, &m))
}

// applyRequestDecision applies a site's decision on a dispatch request of this node: the
// request, made here for that site, becomes dispatched (with the site's mission) or
// refused (with the reason); a decision on a request already decided is a duplicate
// (docs/decisions/0197-dispatch-requests.md).
func applyRequestDecision(tx Tx, tenantID string, d *model.Device, it *model.DeviceItem) (bool, error) {
	var in model.DispatchRequest
	if err := decodeUpstream(it.Payload, &in, "requested_at", "decided_at"); err != nil {
		return false, err
	}
	if err := requireID("dispatch_request_id", in.ID); err != nil {
		return false, err
	}
	r, err := tx.DispatchRequest(tenantID, in.ID)
	if model.IsKind(err, model.KindNotFound) || (err == nil && r.SiteID != d.ID) {
		return false, &model.Error{Kind: model.KindConflict, Field: "dispatch_request_id",
			Msg: fmt.Sprintf("dispatch request %s was not made here for this site", in.ID)}
	}
	if err != nil {
		return false, err
	}
	if r.Status != model.RequestRequested {
		return true, nil
	}
	switch {
	case in.Status == model.RequestDispatched && in.MissionID != nil && model.ValidID(*in.MissionID):
		r.MissionID = in.MissionID
	case in.Status == model.RequestRefused && in.Reason != nil:
		r.Reason, r.Message = in.Reason, in.Message
	default:
		return false, model.Invalid("status", "status must be dispatched with a mission_id or refused with a reason")
	}
	r.Status, r.DecidedAt = in.Status, in.DecidedAt
	if r.DecidedAt == nil {
		r.DecidedAt = it.CapturedAt
	}
	return false, tx.PutDispatchRequest(tenantID, r)
}
