package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/strictjson"
	"github.com/fieldrelay/fieldrelay/engine/teams"
	"github.com/fieldrelay/fieldrelay/engine/upstream"
	"github.com/fieldrelay/fieldrelay/engine/zones"
)

// Kinds of a device's items.
const (
	ItemMissionStatus = "mission_status"
	ItemEvent         = "event"
	ItemLocation      = "location"
	ItemConnectivity  = "connectivity"
)

// SyncDevice runs one sync of a device of p's tenant (POST /v1/devices/sync) in one
// transaction shared with other hot writes (Store.Batch). p needs devices:sync or
// devices:manage; a field operator syncs the devices of its own teams and devices with
// no team (any other device, and another tenant's, is not found).
//
// In order: ack_through removes the acknowledged queue items (a mission among them
// becomes SENT, an event delivered); each item is received: one whose sequence number was
// received before is a duplicate, one malformed (or of a kind the sender may not send) is
// rejected, the others are stored; then the stored items are applied in sequence order
// from the first unprocessed one for as long as there is no gap, so an item above a gap
// stays pending until a later sync fills the gap. Applying an item is the use case it
// stands for (a mission move with source device at captured_at, an event with source
// device, a member's position, a connectivity report; from a node device, an upstream_*
// item is a replicated record written without side effects: upstream.Apply); an error of
// that use case rejects the item and never the others. The answer carries every item's result, the applied
// items of earlier syncs, applied_through, the gaps and the device's pending queue.
func (e *Engine) SyncDevice(ctx context.Context, p model.Principal, key *model.IdempotencyKey, in model.DeviceSyncInput, render model.DeviceSyncRender) (model.Reply, error) {
	if !p.Can(model.PermDevicesSync) && !p.Can(model.PermDevicesManage) {
		return model.Reply{}, model.Errorf(model.KindForbidden, "this operation needs the %s or %s permission", model.PermDevicesSync, model.PermDevicesManage)
	}
	if err := in.Validate(); err != nil {
		return model.Reply{}, err
	}
	if _, err := storeKey(key); err != nil {
		return model.Reply{}, err
	}
	var out model.Reply
	err := e.store.Batch(ctx, p.TenantID, func(tx model.Tx) error {
		out = model.Reply{}
		if r, err := replay(tx, p.TenantID, key); err != nil || r != nil {
			if r != nil {
				out = *r
			}
			return err
		}
		res, err := e.syncDevice(tx, p, in, render.Event)
		if err != nil {
			return err
		}
		if out, err = render.Answer(res); err != nil {
			return err
		}
		return remember(tx, p.TenantID, key, out, model.At(e.clock.Now()))
	})
	return out, err
}

// syncDevice is the body of SyncDevice's transaction. It may run more than once.
func (e *Engine) syncDevice(tx model.Tx, p model.Principal, in model.DeviceSyncInput, renderEvent model.Render) (*model.DeviceSyncResult, error) {
	d, err := visibleDevice(tx, p, in.DeviceID, false)
	if err != nil {
		return nil, err
	}
	now := model.At(e.clock.Now())
	correction, offset, flagged, err := model.ClockOffset(in.SentAt, now.Time)
	if err != nil {
		return nil, err
	}
	if flagged {
		e.log.Warn("device sync: the sender's clock is off by more than the node corrects; its times are taken as they come",
			"tenant", p.TenantID, "device", d.ID, "offset_ms", *offset)
	}
	if in.AckThrough != nil {
		if err := e.acknowledge(tx, p.TenantID, d, int64(*in.AckThrough)); err != nil {
			return nil, err
		}
	}
	st := d.Sync

	// Receive: every item of the request, in request order.
	items := map[int64]*model.DeviceItem{} // the items this sync has read or made, by sequence
	fresh := map[int64]bool{}              // received by this sync
	var changed []int64                    // to be written, in order of first change
	results := make([]model.DeviceItemResult, len(in.Items))
	sender := &model.ItemSender{UserID: p.UserID, KeyID: p.KeyID, Role: p.Role, Scopes: p.Scopes}
	for i, raw := range in.Items {
		r := &results[i]
		r.Index = model.PtrTo(i)
		seq, it, ierr := readItem(raw, now, correction)
		if seq == 0 {
			r.Status = model.ItemRejected
			setError(r, ierr)
			continue
		}
		r.SequenceNumber = model.PtrTo(seq)
		prev, err := e.knownItem(tx, p.TenantID, d.ID, &st, items, seq)
		if err != nil {
			return nil, err
		}
		if prev != nil {
			r.Status = model.ItemDuplicate
			continue
		}
		it.Seq, it.ReceivedAt = seq, now
		if ierr == nil {
			ierr = mayDo(p, it.Kind)
		}
		if ierr == nil {
			ierr = upstream.MayApply(p, d, it.Kind)
		}
		if ierr != nil {
			it.Payload, it.CapturedAt, it.DeviceCapturedAt = nil, nil, nil
			it.Status = model.ItemRejected
			setItemError(it, ierr)
		} else {
			it.Status, it.By = model.ItemPending, sender
		}
		items[seq], fresh[seq] = it, true
		changed = append(changed, seq)
		st.HighestReceived = max(st.HighestReceived, seq)
		st.Waiting++
	}

	// Apply in sequence order, as far as there is no gap.
	run := &syncRun{tenantID: p.TenantID, device: d, renderEvent: renderEvent}
	if run.replies, err = readReplies(tx, p.TenantID, run.eventItemKeys(items, fresh)); err != nil {
		return nil, err
	}
	var released []model.DeviceItemResult
	for {
		next := st.AppliedThrough + 1
		it := items[next]
		if it == nil {
			if next > st.HighestReceived {
				break
			}
			if it, err = tx.DeviceItem(p.TenantID, d.ID, next); err != nil {
				return nil, err
			}
			if it == nil {
				break
			}
			items[next] = it
		}
		if it.Status == model.ItemPending {
			if err := e.applyItem(tx, run, it); err != nil {
				return nil, err
			}
			if !fresh[next] {
				changed = append(changed, next)
				released = append(released, itemResult(it, nil))
			}
		}
		st.AppliedThrough, st.Waiting = next, st.Waiting-1
	}
	for _, seq := range changed {
		if err := tx.PutDeviceItem(p.TenantID, d.ID, items[seq]); err != nil {
			return nil, err
		}
	}

	// Answer each item with what became of it.
	for i := range results {
		r := &results[i]
		if r.SequenceNumber == nil {
			continue
		}
		it := items[*r.SequenceNumber]
		if r.Status == model.ItemDuplicate {
			r.Outcome, r.Error, r.Message, r.Field, r.EventID = it.Status, it.Error, it.Message, it.Field, it.EventID
			r.PayloadWarnings = it.PayloadWarnings
			continue
		}
		*r = itemResult(it, r.Index)
	}

	res := &model.DeviceSyncResult{DeviceID: d.ID, Results: results, Released: released, Gaps: []int64{},
		ClockOffsetMs: offset, ClockFlagged: flagged}
	if res.Released == nil {
		res.Released = []model.DeviceItemResult{}
	}
	if st.GapCount() > 0 {
		if res.Gaps, err = deviceGaps(tx, p.TenantID, d.ID, &st); err != nil {
			return nil, err
		}
	}

	// The items may have queued for this very device (an auto-dispatch to its team):
	// its record is read again, and only the fields of the sync are set.
	cur, err := tx.Device(p.TenantID, d.ID)
	if err != nil {
		return nil, err
	}
	queueLast := cur.Sync.QueueLast
	cur.Sync = st
	cur.Sync.QueueLast, cur.Sync.LastSyncAt = queueLast, &now
	if err := tx.PutDevice(p.TenantID, cur); err != nil {
		return nil, err
	}
	queued, err := tx.QueueItems(p.TenantID, d.ID, st.AckThrough, model.SyncQueueMax)
	if err != nil {
		return nil, err
	}
	if res.Queue, err = queueEntries(tx, p.TenantID, queued); err != nil {
		return nil, err
	}
	res.AppliedThrough, res.HighestReceived, res.GapCount = st.AppliedThrough, st.HighestReceived, st.GapCount()
	res.AckThrough, res.QueuePending = st.AckThrough, queueLast-st.AckThrough
	return res, nil
}

// knownItem returns the item already received under seq, or nil when seq is new.
func (e *Engine) knownItem(tx model.Tx, tenantID, deviceID string, st *model.DeviceSyncState, items map[int64]*model.DeviceItem, seq int64) (*model.DeviceItem, error) {
	if it := items[seq]; it != nil {
		return it, nil
	}
	if seq > st.HighestReceived {
		return nil, nil // nothing above the highest was ever received
	}
	it, err := tx.DeviceItem(tenantID, deviceID, seq)
	if err != nil {
		return nil, err
	}
	if it == nil && seq <= st.AppliedThrough {
		// Every sequence up to applied_through was received; its record is kept.
		it = &model.DeviceItem{Seq: seq, Status: model.ItemApplied}
	}
	if it != nil {
		items[seq] = it
	}
	return it, nil
}

// deviceGaps lists the first MaxGaps missing sequence numbers above applied_through.
func deviceGaps(tx model.Tx, tenantID, deviceID string, st *model.DeviceSyncState) ([]int64, error) {
	gaps := []int64{}
	next := st.AppliedThrough + 1
	err := tx.WalkDeviceItems(tenantID, deviceID, st.AppliedThrough, func(seq int64) bool {
		for ; next < seq && len(gaps) < model.MaxGaps; next++ {
			gaps = append(gaps, next)
		}
		next = seq + 1
		return len(gaps) < model.MaxGaps && seq < st.HighestReceived
	})
	return gaps, err
}

// itemResult is the answer about a received item.
func itemResult(it *model.DeviceItem, index *int) model.DeviceItemResult {
	return model.DeviceItemResult{Index: index, SequenceNumber: model.PtrTo(it.Seq), Status: it.Status, Error: it.Error,
		Message: it.Message, Field: it.Field, EventID: it.EventID, PayloadWarnings: it.PayloadWarnings}
}

// setError puts err into a result.
func setError(r *model.DeviceItemResult, err error) {
	var e *model.Error
	if errors.As(err, &e) {
		r.Error, r.Message, r.Field = e.Kind, e.Msg, e.Field
	}
}

// setItemError records why an item was rejected.
func setItemError(it *model.DeviceItem, err error) {
	var e *model.Error
	if errors.As(err, &e) {
		it.Error, it.Message, it.Field = e.Kind, e.Msg, e.Field
	}
}

// readItem reads one raw item: its sequence number (0 when it has none that can be
// read), and the item, with the first error of its other fields.
func readItem(raw json.RawMessage, now model.Time, correction time.Duration) (int64, *model.DeviceItem, error) {
	var f struct {
		SequenceNumber json.RawMessage `json:"sequence_number"`
		Kind           json.RawMessage `json:"kind"`
		Payload        json.RawMessage `json:"payload"`
		CapturedAt     json.RawMessage `json:"captured_at"`
	}
	if b := bytes.TrimSpace(raw); len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &f) != nil {
		return 0, nil, model.Invalid("items", "each item must be a JSON object")
	}
	if err := strictjson.CheckJSONItem(raw, "items"); err != nil {
		// A sequence number given twice has no one value.
		if e := (*model.Error)(nil); errors.As(err, &e) && e.Field == "sequence_number" {
			return 0, nil, err
		}
		seq, serr := readSequence(f.SequenceNumber)
		if serr != nil {
			return 0, nil, serr
		}
		return seq, &model.DeviceItem{}, err
	}
	seq, err := readSequence(f.SequenceNumber)
	if err != nil {
		return 0, nil, err
	}
	it := &model.DeviceItem{}
	var kind string
	switch {
	case model.IsNullJSON(f.Kind):
		return seq, it, model.Invalid("kind", "kind is required")
	case json.Unmarshal(f.Kind, &kind) != nil:
		return seq, it, model.Invalid("kind", "kind must be a string")
	}
	switch kind {
	case ItemMissionStatus, ItemEvent, ItemLocation, ItemConnectivity, ItemMessage,
		model.ItemUpstreamEvent, model.ItemUpstreamDispatch, model.ItemUpstreamMission, model.ItemUpstreamDispatchRequest,
		model.ItemUpstreamTeamStatus, model.ItemUpstreamSiteZone:
		it.Kind = kind
	default:
		return seq, it, model.Invalid("kind", "kind must be one of mission_status, event, location, connectivity, message "+
			"(and, from a node, upstream_event, upstream_dispatch, upstream_mission, upstream_dispatch_request, upstream_team_status, upstream_site_zone)")
	}
	switch p := bytes.TrimSpace(f.Payload); {
	case model.IsNullJSON(p):
		return seq, it, model.Invalid("payload", "payload is required")
	case p[0] != '{':
		return seq, it, model.Invalid("payload", "payload must be a JSON object")
	default:
		it.Payload = p
	}
	var s string
	switch {
	case model.IsNullJSON(f.CapturedAt):
		return seq, it, model.Invalid("captured_at", "captured_at is required")
	case json.Unmarshal(f.CapturedAt, &s) != nil:
		return seq, it, model.Invalid("captured_at", "captured_at must be an RFC 3339 timestamp")
	}
	at, err := model.ParseTime(s)
	if err != nil {
		return seq, it, model.Invalid("captured_at", "captured_at must be an RFC 3339 timestamp")
	}
	if correction != 0 {
		// The device's clock is off: its time on the node's clock, its own kept too.
		own := at
		it.DeviceCapturedAt = &own
		at = model.At(at.Add(correction))
	}
	if at.Sub(now.Time) > MaxCaptureSkew {
		return seq, it, model.Invalid("captured_at", "captured_at is more than %s in the future", MaxCaptureSkew)
	}
	it.CapturedAt = &at
	return seq, it, nil
}

// readSequence reads a sequence_number: a JSON number whose value is an integer from 1 to
// MaxSequence, in any spelling (3, 3.0 and 3e0 are 3; 1.5 and "3" are not).
func readSequence(raw json.RawMessage) (int64, error) {
	raw = bytes.TrimSpace(raw)
	if model.IsNullJSON(raw) {
		return 0, model.Invalid("sequence_number", "sequence_number is required")
	}
	n, integral, fits := model.ParseJSONInteger(raw)
	switch {
	case !integral:
		return 0, model.Invalid("sequence_number", "sequence_number must be an integer")
	case !fits && raw[0] == '-':
		return 0, model.Invalid("sequence_number", "sequence_number must be at least 1")
	case !fits:
		return 0, model.Invalid("sequence_number", "sequence_number must be at most %d", int64(model.MaxSequence))
	case n < 1:
		return 0, model.Invalid("sequence_number", "sequence_number must be at least 1")
	case n > model.MaxSequence:
		return 0, model.Invalid("sequence_number", "sequence_number must be at most %d", int64(model.MaxSequence))
	}
	return n, nil
}

// mayDo checks that p may send an item of a kind: the permission of the operation it
// stands for, as through its own endpoint.
func mayDo(p model.Principal, kind string) error {
	switch kind {
	case ItemEvent:
		return p.Require(model.PermEventsWrite)
	case ItemConnectivity:
		return p.Require(model.PermConnectivityReport)
	case ItemMissionStatus, ItemMessage:
		if !p.Can(model.PermMissionsManage) && !p.Can(model.PermMissionsReceive) {
			return model.Errorf(model.KindForbidden, "a %s item needs the %s or %s permission", kind, model.PermMissionsManage, model.PermMissionsReceive)
		}
	case ItemLocation:
		if !p.Can(model.PermTeamsManage) && !p.Can(model.PermLocationSelf) {
			return model.Errorf(model.KindForbidden, "a location item needs the %s or %s permission", model.PermTeamsManage, model.PermLocationSelf)
		}
	}
	return nil
}

// syncRun is what the items of one sync share.
type syncRun struct {
	tenantID    string
	device      *model.Device
	renderEvent model.Render
	// cfg is the tenant's configuration, read once for the events of the sync (the
	// cache is filled only when the transaction commits).
	cfg *tenantConfig
	// replies are those of the keys of the event items the sync received, read together
	// (on PostgreSQL a lookup an item was a round trip an item).
	replies *batchReplies
	// events holds the event items' inputs, each decoded once (eventInput).
	events map[int64]decodedEvent
}

// decodedEvent is the payload of an event item, decoded, or why it could not be.
type decodedEvent struct {
	in  model.EventInput
	err error
}

// eventInput decodes the payload of event item it, once a sync: its key is read before
// the items are applied (eventItemKeys), the rest when it is (applyEvent).
func (r *syncRun) eventInput(it *model.DeviceItem) (model.EventInput, error) {
	if d, ok := r.events[it.Seq]; ok {
		return d.in, d.err
	}
	var d decodedEvent
	d.err = model.DecodeItemPayload(it.Payload, &d.in)
	if r.events == nil {
		r.events = map[int64]decodedEvent{}
	}
	r.events[it.Seq] = d
	return d.in, d.err
}

// eventItemKeys are the idempotency keys of the pending event items that this sync
// received (fresh), which applyEvent will look up; a key the node refuses is left out.
func (r *syncRun) eventItemKeys(items map[int64]*model.DeviceItem, fresh map[int64]bool) []string {
	var keys []string
	for seq := range fresh {
		it := items[seq]
		if it.Kind != ItemEvent || it.Status != model.ItemPending {
			continue
		}
		if in, err := r.eventInput(it); err == nil && in.IdempotencyKey != "" &&
			ValidateIdempotencyKey("idempotency_key", in.IdempotencyKey) == nil {
			keys = append(keys, in.IdempotencyKey)
		}
	}
	return keys
}

// config returns the tenant's configuration, read at its first use in the sync.
func (r *syncRun) config(e *Engine, tx model.Tx) (*tenantConfig, error) {
	if r.cfg == nil {
		cfg, err := e.tenantConfig(tx, r.tenantID)
		if err != nil {
			return nil, err
		}
		r.cfg = cfg
	}
	return r.cfg, nil
}

// applyItem applies a pending item in the name of its sender and records its outcome: an
// error of the use case rejects the item; an internal error fails the sync. An upstream_*
// item that changes nothing (the record held here is as new) is a duplicate.
func (e *Engine) applyItem(tx model.Tx, run *syncRun, it *model.DeviceItem) error {
	tenantID, d := run.tenantID, run.device
	if it.By == nil {
		it.By = &model.ItemSender{}
	}
	p := it.By.Principal(tenantID)
	var err error
	var dup bool
	switch it.Kind {
	case model.ItemUpstreamMission:
		dup, err = e.applyUpstreamMission(tx, tenantID, d, it)
	case model.ItemUpstreamTeamStatus:
		if dup, err = upstream.Apply(tx, tenantID, d, it); err == nil && !dup {
			err = e.announceTeamStatus(tx, tenantID, it.Payload)
		}
	case model.ItemUpstreamEvent, model.ItemUpstreamDispatch, model.ItemUpstreamDispatchRequest, model.ItemUpstreamSiteZone:
		dup, err = upstream.Apply(tx, tenantID, d, it)
	case ItemEvent:
		it.EventID, err = e.applyEvent(tx, p, run, it)
	case ItemMissionStatus:
		err = e.applyMissionStatus(tx, p, d, it)
	case ItemMessage:
		err = e.applyMessage(tx, p, d, it)
	case ItemLocation:
		err = e.applyLocation(tx, p, d, it)
	case ItemConnectivity:
		err = e.applyConnectivity(tx, p, d, it)
	}
	var de *model.Error
	switch {
	case err == nil && dup:
		it.Status = model.ItemDuplicate
	case err == nil:
		it.Status = model.ItemApplied
	case errors.As(err, &de) && de.Kind != model.KindInternal:
		it.Status, it.EventID = model.ItemRejected, ""
		it.Error, it.Message, it.Field = de.Kind, de.Msg, itemField(de.Field)
	default:
		return err
	}
	it.Payload, it.CapturedAt, it.DeviceCapturedAt, it.By = nil, nil, nil, nil
	return nil
}

// itemField names a field of an item's payload: the use case's fields are the
// payload's, but captured_at, which is the item's.
func itemField(f string) string {
	if f == "" || f == "captured_at" {
		return f
	}
	return "payload." + f
}

// applyEvent creates the event of an item as POST /v1/events would (source device,
// device_id set, captured_at the item's; auto-dispatch applies), notes the payload's
// warnings on the item and returns the event's id. An
// idempotency_key that already names an event applies nothing and returns that event.
func (e *Engine) applyEvent(tx model.Tx, p model.Principal, run *syncRun, it *model.DeviceItem) (string, error) {
	d := run.device
	in, err := run.eventInput(it)
	if err != nil {
		return "", err
	}
	in.Source, in.DeviceID, in.CapturedAt, in.DeviceCapturedAt, in.BatchID = SourceDevice, d.ID, it.CapturedAt, it.DeviceCapturedAt, ""
	if in.IdempotencyKey != "" {
		// A key the node refuses is never looked up, as in IngestEvent.
		if err := ValidateIdempotencyKey("idempotency_key", in.IdempotencyKey); err != nil {
			return "", err
		}
		rec, err := run.replies.lookup(tx, p.TenantID, in.IdempotencyKey)
		if err != nil {
			return "", err
		}
		if rec != nil {
			var acc struct {
				EventID string `json:"event_id"`
			}
			_ = json.Unmarshal(rec.Body, &acc)
			return acc.EventID, nil
		}
	}
	ce, err := checkEvent(in, e.clock.Now())
	if err != nil {
		return "", err
	}
	cfg, err := run.config(e, tx)
	if err != nil {
		return "", err
	}
	ev, tenant, err := e.createEventIn(tx, p.TenantID, cfg, ce)
	if err != nil {
		return "", err
	}
	auto, manual, err := e.autoDispatch(tx, p.TenantID, tenant, ev)
	if err != nil {
		return "", err
	}
	reply, err := run.renderEvent(model.EventAccepted{EventID: ev.ID, Status: ev.Status, ChannelSelected: ev.ChannelSelected,
		CreatedAt: ev.CreatedAt, Dispatch: auto, RequiresManual: manual, PayloadWarnings: ce.parsed.Warnings})
	if err != nil {
		return "", model.Internal(err)
	}
	if err := tx.PutEventReply(p.TenantID, in.IdempotencyKey, &model.IdempotencyRecord{Reply: reply, CreatedAt: ev.CreatedAt}); err != nil {
		return "", err
	}
	it.PayloadWarnings = ce.parsed.Warnings
	return ev.ID, nil
}

// missionStatusPayload is the payload of a mission_status item.
type missionStatusPayload struct {
	MissionID string          `json:"mission_id"`
	Status    string          `json:"status"`
	Feedback  json.RawMessage `json:"feedback"`
}

// deviceMayTouch checks the mission a device's item names: given, a valid id, and, for a
// device of a team, one of that team's missions (another is not found).
func deviceMayTouch(tx model.Tx, p model.Principal, d *model.Device, missionID string) error {
	if missionID == "" {
		return model.Invalid("mission_id", "mission_id is required")
	}
	if !model.ValidID(missionID) {
		return model.NotFound("mission")
	}
	if d.TeamID == nil {
		return nil
	}
	m, err := tx.Mission(p.TenantID, missionID)
	if err != nil {
		return err
	}
	if m.TeamID != *d.TeamID {
		return model.NotFound("mission")
	}
	return nil
}

// applyMissionStatus moves a mission as PATCH /v1/missions/:id/status would, with source
// device and the item's captured_at as the move's time. A device of a team moves only
// that team's missions.
func (e *Engine) applyMissionStatus(tx model.Tx, p model.Principal, d *model.Device, it *model.DeviceItem) error {
	var in missionStatusPayload
	if err := model.DecodeItemPayload(it.Payload, &in); err != nil {
		return err
	}
	if err := deviceMayTouch(tx, p, d, in.MissionID); err != nil {
		return err
	}
	_, err := e.updateMissionStatus(tx, p, in.MissionID, model.MissionStatusInput{Status: in.Status, Feedback: in.Feedback},
		MoveSourceDevice, it.CapturedAt, d.ID)
	return err
}

// locationPayload is the payload of a location item.
type locationPayload struct {
	MemberID string   `json:"member_id"`
	Lat      *float64 `json:"lat"`
	Lng      *float64 `json:"lng"`
}

// applyLocation sets the position of a member of the device's team at the item's
// captured_at. As with PATCH …/location, positions only move forward in time: an older
// one is applied and changes nothing.
func (e *Engine) applyLocation(tx model.Tx, p model.Principal, d *model.Device, it *model.DeviceItem) error {
	var in locationPayload
	if err := model.DecodeItemPayload(it.Payload, &in); err != nil {
		return err
	}
	switch {
	case in.MemberID == "" && p.UserID == "":
		return model.Invalid("member_id", "member_id is required")
	case in.Lat == nil:
		return model.Invalid("lat", "lat is required")
	case in.Lng == nil:
		return model.Invalid("lng", "lng is required")
	}
	if err := teams.CheckLatLng("", *in.Lat, *in.Lng); err != nil {
		return err
	}
	if d.TeamID == nil {
		return model.Invalid("member_id", "the device has no team: it reports the positions of its team's members only")
	}
	t, err := tx.Team(p.TenantID, *d.TeamID)
	if err != nil {
		return err
	}
	var m *model.Member
	if in.MemberID == "" {
		// A user's own position: the member of the device's team that the user is (the
		// field app does not know its member id).
		for i := range t.Members {
			if t.Members[i].UserID == p.UserID {
				m = &t.Members[i]
			}
		}
		if m == nil {
			return model.Invalid("member_id", "member_id is required: the sender is not a member of the device's team")
		}
	} else if m = t.Member(in.MemberID); m == nil {
		return model.Invalid("member_id", "member %s is not a member of the device's team", model.Quote(in.MemberID))
	}
	at := *it.CapturedAt
	if at.After(e.clock.Now()) {
		at = model.At(e.clock.Now())
	}
	if m.LocationUpdatedAt != nil && at.Before(m.LocationUpdatedAt.Time) {
		return nil
	}
	m.Lat, m.Lng, m.LocationUpdatedAt = model.PtrTo(*in.Lat), model.PtrTo(*in.Lng), &at
	return tx.PutTeamPositions(p.TenantID, t)
}

// applyConnectivity records a connectivity report of the device's zone as POST
// /v1/connectivity/report would; its device_id is the device's, its reported_at the
// item's captured_at unless the payload gives one.
func (e *Engine) applyConnectivity(tx model.Tx, p model.Principal, d *model.Device, it *model.DeviceItem) error {
	var in model.ConnectivityReport
	if err := model.DecodeItemPayload(it.Payload, &in); err != nil {
		return err
	}
	in.DeviceID = d.ID
	if in.ReportedAt == nil {
		s := it.CapturedAt.UTC().Format(model.TimeLayout)
		in.ReportedAt = &s
	}
	_, err := zones.Report(e.Registry, tx, p.TenantID, in)
	return err
}

// announceTeamStatus tells the stream's subscribers the team whose status a site reported
// (an upstream_team_status item just applied): the regional board moves as the site's does
// (docs/decisions/0202-team-status-up.md).
func (e *Engine) announceTeamStatus(tx model.Tx, tenantID string, payload json.RawMessage) error {
	var r model.TeamStatusReport
	if err := json.Unmarshal(payload, &r); err != nil {
		return model.Internal(err)
	}
	t, err := tx.Team(tenantID, r.TeamID)
	if err != nil {
		return err
	}
	return e.publish(tx, tenantID, StreamTeamUpdated, model.PermTeamsRead, t.ID, t)
}
