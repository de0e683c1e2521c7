package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
)

// Kinds of a device's items.
const (
	ItemMissionStatus = "mission_status"
	ItemEvent         = "event"
	ItemLocation      = "location"
	ItemConnectivity  = "connectivity"
)

// Statuses of a device's item in a sync answer, with ItemDuplicate and ItemRejected of
// the batch items. pending is additive to the contract: the item is stored but held
// above a gap, and is applied in the transaction that fills it.
const (
	ItemApplied = "applied"
	ItemPending = "pending"
)

// Limits of a device sync.
const (
	// MaxSyncItems is the most items one sync may carry.
	MaxSyncItems = 10_000
	// MaxSequence is the highest sequence_number (the largest integer a JSON number
	// holds exactly).
	MaxSequence = 1<<53 - 1
	// MaxGaps bounds the gaps listed in a sync answer (gap_count has them all).
	MaxGaps = 1000
	// SyncQueueMax bounds the queue items a sync answer carries (queue_pending has them all).
	SyncQueueMax = 100
)

// DeviceSyncInput is the body of POST /v1/devices/sync. Items are kept raw: each is
// judged alone, so that a malformed item is rejected without failing the others.
type DeviceSyncInput struct {
	DeviceID   string            `json:"device_id"`
	Items      []json.RawMessage `json:"items"`
	AckThrough *Int              `json:"ack_through"`
}

// DeviceItem is what is kept of a device's item under its sequence number, for the
// device's whole life. A pending item keeps what it needs to be applied later (kind,
// payload, captured_at and who sent it); a processed one only its outcome.
type DeviceItem struct {
	Seq        int64           `json:"seq"`
	Status     string          `json:"status"`
	Kind       string          `json:"kind,omitempty"`
	Payload    json.RawMessage `json:"payload,omitempty"`
	CapturedAt *Time           `json:"captured_at,omitempty"`
	By         *ItemSender     `json:"by,omitempty"`
	Error      Kind            `json:"error,omitempty"`
	Message    string          `json:"message,omitempty"`
	Field      string          `json:"field,omitempty"`
	EventID    string          `json:"event_id,omitempty"`
	ReceivedAt Time            `json:"received_at"`
	// PayloadWarnings are those of the event an event item created (EventAccepted's).
	PayloadWarnings []string `json:"payload_warnings,omitempty"`
}

// ItemSender is who sent a held item: it is applied later in that caller's name.
type ItemSender struct {
	UserID string   `json:"user_id,omitempty"`
	KeyID  string   `json:"key_id,omitempty"`
	Role   string   `json:"role,omitempty"`
	Scopes []string `json:"scopes,omitempty"`
}

// principal is the sender as a principal of tenantID.
func (s *ItemSender) principal(tenantID string) Principal {
	return Principal{TenantID: tenantID, TenantActive: true, UserID: s.UserID, KeyID: s.KeyID, Role: s.Role, Scopes: s.Scopes}
}

// DeviceItemResult is the outcome of one item in a sync answer. Index is the item's place
// in the request (absent for released items); SequenceNumber is null when the item had
// none that could be read. A duplicate carries in Outcome (and the error fields) what
// became of the item first received under its sequence number.
type DeviceItemResult struct {
	Index          *int   `json:"index,omitempty"`
	SequenceNumber *int64 `json:"sequence_number"`
	Status         string `json:"status"`
	Outcome        string `json:"outcome,omitempty"`
	Error          Kind   `json:"error,omitempty"`
	Message        string `json:"message,omitempty"`
	Field          string `json:"field,omitempty"`
	EventID        string `json:"event_id,omitempty"`
	// PayloadWarnings are those of the event an event item created, as POST /v1/events
	// gives them.
	PayloadWarnings []string `json:"payload_warnings,omitempty"`
}

// DeviceSyncResult is the answer to POST /v1/devices/sync.
type DeviceSyncResult struct {
	DeviceID string             `json:"device_id"`
	Results  []DeviceItemResult `json:"results"`
	// Released lists the items of earlier syncs, held above a gap, that this sync
	// processed by filling the gap.
	Released        []DeviceItemResult `json:"released"`
	AppliedThrough  int64              `json:"applied_through"`
	HighestReceived int64              `json:"highest_received"`
	// Gaps lists the first MaxGaps missing sequence numbers below the highest received;
	// GapCount counts them all.
	Gaps     []int64 `json:"gaps"`
	GapCount int64   `json:"gap_count"`
	// AckThrough is the device's last acknowledged queue_sequence; Queue the first
	// SyncQueueMax items after it; QueuePending how many there are in all.
	AckThrough   int64        `json:"ack_through"`
	Queue        []QueueEntry `json:"queue"`
	QueuePending int64        `json:"queue_pending"`
}

// DeviceSyncRender renders what a device sync stores: Event the reply of each event it creates
// (what POST /v1/events answers for it, and for its idempotency_key later), Answer the
// answer to the sync (stored under an Idempotency-Key when one is given).
type DeviceSyncRender struct {
	Event  Render
	Answer Render
}

// validate checks the body: what can fail the whole request. Items are judged one by one.
func (in *DeviceSyncInput) validate() error {
	switch {
	case in.DeviceID == "":
		return Invalid("device_id", "device_id is required")
	case !ValidID(in.DeviceID):
		return Invalid("device_id", "device_id must be a device's id")
	case in.Items == nil:
		return Invalid("items", "items is required (an empty array for an ack-only sync)")
	case len(in.Items) > MaxSyncItems:
		return Invalid("items", "items holds at most %d items", MaxSyncItems)
	case in.AckThrough != nil && *in.AckThrough < 0:
		return Invalid("ack_through", "ack_through must be at least 0")
	}
	return nil
}

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
// item is a replicated record written without side effects: applyUpstream); an error of
// that use case rejects the item and never the others. The answer carries every item's result, the applied
// items of earlier syncs, applied_through, the gaps and the device's pending queue.
func (e *Engine) SyncDevice(ctx context.Context, p Principal, key *IdempotencyKey, in DeviceSyncInput, render DeviceSyncRender) (Reply, error) {
	if !p.Can(PermDevicesSync) && !p.Can(PermDevicesManage) {
		return Reply{}, Errorf(KindForbidden, "this operation needs the %s or %s permission", PermDevicesSync, PermDevicesManage)
	}
	if err := in.validate(); err != nil {
		return Reply{}, err
	}
	var storeKey string
	if key != nil && key.Key != "" {
		if err := ValidateIdempotencyKey("idempotency_key", key.Key); err != nil {
			return Reply{}, err
		}
		storeKey = key.Route + "\n" + key.Key
	}
	var out Reply
	err := e.store.Batch(ctx, func(tx Tx) error {
		out = Reply{}
		if storeKey != "" {
			rec, err := tx.Idempotency(p.TenantID, storeKey)
			if err != nil {
				return err
			}
			if rec != nil {
				if rec.Fingerprint != key.Fingerprint {
					return Errorf(KindIdempotencyReused, "this Idempotency-Key was used with a different request body")
				}
				out, out.Replayed = rec.Reply, true
				return nil
			}
		}
		res, err := e.syncDevice(tx, p, in, render.Event)
		if err != nil {
			return err
		}
		if out, err = render.Answer(res); err != nil {
			return err
		}
		if storeKey == "" {
			return nil
		}
		return tx.PutIdempotency(p.TenantID, storeKey, &IdempotencyRecord{Reply: out, Fingerprint: key.Fingerprint,
			CreatedAt: At(e.clock.Now())})
	})
	return out, err
}

// syncDevice is the body of SyncDevice's transaction. It may run more than once.
func (e *Engine) syncDevice(tx Tx, p Principal, in DeviceSyncInput, renderEvent Render) (*DeviceSyncResult, error) {
	d, err := visibleDevice(tx, p, in.DeviceID, false)
	if err != nil {
		return nil, err
	}
	now := At(e.clock.Now())
	if in.AckThrough != nil {
		if err := e.acknowledge(tx, p.TenantID, d, int64(*in.AckThrough)); err != nil {
			return nil, err
		}
	}
	st := d.Sync

	// Receive: every item of the request, in request order.
	items := map[int64]*DeviceItem{} // the items this sync has read or made, by sequence
	fresh := map[int64]bool{}        // received by this sync
	var changed []int64              // to be written, in order of first change
	results := make([]DeviceItemResult, len(in.Items))
	sender := &ItemSender{UserID: p.UserID, KeyID: p.KeyID, Role: p.Role, Scopes: p.Scopes}
	for i, raw := range in.Items {
		r := &results[i]
		r.Index = ptrTo(i)
		seq, it, ierr := readItem(raw, now)
		if seq == 0 {
			r.Status = ItemRejected
			setError(r, ierr)
			continue
		}
		r.SequenceNumber = ptrTo(seq)
		prev, err := e.knownItem(tx, p.TenantID, d.ID, &st, items, seq)
		if err != nil {
			return nil, err
		}
		if prev != nil {
			r.Status = ItemDuplicate
			continue
		}
		it.Seq, it.ReceivedAt = seq, now
		if ierr == nil {
			ierr = mayDo(p, it.Kind)
		}
		if ierr == nil {
			ierr = mayUpstream(p, d, it.Kind)
		}
		if ierr != nil {
			it.Payload, it.CapturedAt = nil, nil
			it.Status = ItemRejected
			setItemError(it, ierr)
		} else {
			it.Status, it.By = ItemPending, sender
		}
		items[seq], fresh[seq] = it, true
		changed = append(changed, seq)
		st.HighestReceived = max(st.HighestReceived, seq)
		st.Waiting++
	}

	// Apply in sequence order, as far as there is no gap.
	run := &syncRun{tenantID: p.TenantID, device: d, renderEvent: renderEvent}
	var released []DeviceItemResult
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
		if it.Status == ItemPending {
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
		if r.Status == ItemDuplicate {
			r.Outcome, r.Error, r.Message, r.Field, r.EventID = it.Status, it.Error, it.Message, it.Field, it.EventID
			r.PayloadWarnings = it.PayloadWarnings
			continue
		}
		*r = itemResult(it, r.Index)
	}

	res := &DeviceSyncResult{DeviceID: d.ID, Results: results, Released: released, Gaps: []int64{}}
	if res.Released == nil {
		res.Released = []DeviceItemResult{}
	}
	if st.gapCount() > 0 {
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
	queued, err := tx.QueueItems(p.TenantID, d.ID, st.AckThrough, SyncQueueMax)
	if err != nil {
		return nil, err
	}
	if res.Queue, err = queueEntries(tx, p.TenantID, queued); err != nil {
		return nil, err
	}
	res.AppliedThrough, res.HighestReceived, res.GapCount = st.AppliedThrough, st.HighestReceived, st.gapCount()
	res.AckThrough, res.QueuePending = st.AckThrough, queueLast-st.AckThrough
	return res, nil
}

// knownItem returns the item already received under seq, or nil when seq is new.
func (e *Engine) knownItem(tx Tx, tenantID, deviceID string, st *DeviceSyncState, items map[int64]*DeviceItem, seq int64) (*DeviceItem, error) {
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
		it = &DeviceItem{Seq: seq, Status: ItemApplied}
	}
	if it != nil {
		items[seq] = it
	}
	return it, nil
}

// deviceGaps lists the first MaxGaps missing sequence numbers above applied_through.
func deviceGaps(tx Tx, tenantID, deviceID string, st *DeviceSyncState) ([]int64, error) {
	gaps := []int64{}
	next := st.AppliedThrough + 1
	err := tx.WalkDeviceItems(tenantID, deviceID, st.AppliedThrough, func(seq int64) bool {
		for ; next < seq && len(gaps) < MaxGaps; next++ {
			gaps = append(gaps, next)
		}
		next = seq + 1
		return len(gaps) < MaxGaps && seq < st.HighestReceived
	})
	return gaps, err
}

// itemResult is the answer about a received item.
func itemResult(it *DeviceItem, index *int) DeviceItemResult {
	return DeviceItemResult{Index: index, SequenceNumber: ptrTo(it.Seq), Status: it.Status, Error: it.Error,
		Message: it.Message, Field: it.Field, EventID: it.EventID, PayloadWarnings: it.PayloadWarnings}
}

// setError puts err into a result.
func setError(r *DeviceItemResult, err error) {
	var e *Error
	if errors.As(err, &e) {
		r.Error, r.Message, r.Field = e.Kind, e.Msg, e.Field
	}
}

// setItemError records why an item was rejected.
func setItemError(it *DeviceItem, err error) {
	var e *Error
	if errors.As(err, &e) {
		it.Error, it.Message, it.Field = e.Kind, e.Msg, e.Field
	}
}

// readItem reads one raw item: its sequence number (0 when it has none that can be
// read), and the item, with the first error of its other fields.
func readItem(raw json.RawMessage, now Time) (int64, *DeviceItem, error) {
	var f struct {
		SequenceNumber json.RawMessage `json:"sequence_number"`
		Kind           json.RawMessage `json:"kind"`
		Payload        json.RawMessage `json:"payload"`
		CapturedAt     json.RawMessage `json:"captured_at"`
	}
	if b := bytes.TrimSpace(raw); len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &f) != nil {
		return 0, nil, Invalid("items", "each item must be a JSON object")
	}
	if err := CheckJSONItem(raw, "items"); err != nil {
		// A sequence number given twice has no one value.
		if e := (*Error)(nil); errors.As(err, &e) && e.Field == "sequence_number" {
			return 0, nil, err
		}
		seq, serr := readSequence(f.SequenceNumber)
		if serr != nil {
			return 0, nil, serr
		}
		return seq, &DeviceItem{}, err
	}
	seq, err := readSequence(f.SequenceNumber)
	if err != nil {
		return 0, nil, err
	}
	it := &DeviceItem{}
	var kind string
	switch {
	case isNull(f.Kind):
		return seq, it, Invalid("kind", "kind is required")
	case json.Unmarshal(f.Kind, &kind) != nil:
		return seq, it, Invalid("kind", "kind must be a string")
	}
	switch kind {
	case ItemMissionStatus, ItemEvent, ItemLocation, ItemConnectivity,
		ItemUpstreamEvent, ItemUpstreamDispatch, ItemUpstreamMission:
		it.Kind = kind
	default:
		return seq, it, Invalid("kind", "kind must be one of mission_status, event, location, connectivity "+
			"(and, from a node, upstream_event, upstream_dispatch, upstream_mission)")
	}
	switch p := bytes.TrimSpace(f.Payload); {
	case isNull(p):
		return seq, it, Invalid("payload", "payload is required")
	case p[0] != '{':
		return seq, it, Invalid("payload", "payload must be a JSON object")
	default:
		it.Payload = p
	}
	var s string
	switch {
	case isNull(f.CapturedAt):
		return seq, it, Invalid("captured_at", "captured_at is required")
	case json.Unmarshal(f.CapturedAt, &s) != nil:
		return seq, it, Invalid("captured_at", "captured_at must be an RFC 3339 timestamp")
	}
	at, err := ParseTime(s)
	if err != nil {
		return seq, it, Invalid("captured_at", "captured_at must be an RFC 3339 timestamp")
	}
	if at.Sub(now.Time) > MaxCaptureSkew {
		return seq, it, Invalid("captured_at", "captured_at is more than %s in the future", MaxCaptureSkew)
	}
	it.CapturedAt = &at
	return seq, it, nil
}

// readSequence reads a sequence_number: a JSON number whose value is an integer from 1 to
// MaxSequence, in any spelling (3, 3.0 and 3e0 are 3; 1.5 and "3" are not).
func readSequence(raw json.RawMessage) (int64, error) {
	raw = bytes.TrimSpace(raw)
	if isNull(raw) {
		return 0, Invalid("sequence_number", "sequence_number is required")
	}
	n, integral, fits := jsonInteger(raw)
	switch {
	case !integral:
		return 0, Invalid("sequence_number", "sequence_number must be an integer")
	case !fits && raw[0] == '-':
		return 0, Invalid("sequence_number", "sequence_number must be at least 1")
	case !fits:
		return 0, Invalid("sequence_number", "sequence_number must be at most %d", int64(MaxSequence))
	case n < 1:
		return 0, Invalid("sequence_number", "sequence_number must be at least 1")
	case n > MaxSequence:
		return 0, Invalid("sequence_number", "sequence_number must be at most %d", int64(MaxSequence))
	}
	return n, nil
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

// mayDo checks that p may send an item of a kind: the permission of the operation it
// stands for, as through its own endpoint.
func mayDo(p Principal, kind string) error {
	switch kind {
	case ItemEvent:
		return p.Require(PermEventsWrite)
	case ItemConnectivity:
		return p.Require(PermConnectivityReport)
	case ItemMissionStatus:
		if !p.Can(PermMissionsManage) && !p.Can(PermMissionsReceive) {
			return Errorf(KindForbidden, "a mission_status item needs the %s or %s permission", PermMissionsManage, PermMissionsReceive)
		}
	case ItemLocation:
		if !p.Can(PermTeamsManage) && !p.Can(PermLocationSelf) {
			return Errorf(KindForbidden, "a location item needs the %s or %s permission", PermTeamsManage, PermLocationSelf)
		}
	}
	return nil
}

// syncRun is what the items of one sync share.
type syncRun struct {
	tenantID    string
	device      *Device
	renderEvent Render
	// cfg is the tenant's configuration, read once for the events of the sync (the
	// cache is filled only when the transaction commits).
	cfg *tenantConfig
}

// config returns the tenant's configuration, read at its first use in the sync.
func (r *syncRun) config(e *Engine, tx Tx) (*tenantConfig, error) {
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
func (e *Engine) applyItem(tx Tx, run *syncRun, it *DeviceItem) error {
	tenantID, d := run.tenantID, run.device
	if it.By == nil {
		it.By = &ItemSender{}
	}
	p := it.By.principal(tenantID)
	var err error
	var dup bool
	switch it.Kind {
	case ItemUpstreamEvent, ItemUpstreamDispatch, ItemUpstreamMission:
		dup, err = e.applyUpstream(tx, tenantID, d, it)
	case ItemEvent:
		it.EventID, err = e.applyEvent(tx, p, run, it)
	case ItemMissionStatus:
		err = e.applyMissionStatus(tx, p, d, it)
	case ItemLocation:
		err = e.applyLocation(tx, p, d, it)
	case ItemConnectivity:
		err = e.applyConnectivity(tx, p, d, it)
	}
	var de *Error
	switch {
	case err == nil && dup:
		it.Status = ItemDuplicate
	case err == nil:
		it.Status = ItemApplied
	case errors.As(err, &de) && de.Kind != KindInternal:
		it.Status, it.EventID = ItemRejected, ""
		it.Error, it.Message, it.Field = de.Kind, de.Msg, itemField(de.Field)
	default:
		return err
	}
	it.Payload, it.CapturedAt, it.By = nil, nil, nil
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

// decodePayload decodes an item's payload into v; a field of the wrong type is a
// validation error naming it.
func decodePayload(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return Invalid(te.Field, "%s has the wrong type (%s)", te.Field, te.Value)
		}
		return Invalid("", "payload could not be read")
	}
	return nil
}

// applyEvent creates the event of an item as POST /v1/events would (source device,
// device_id set, captured_at the item's; auto-dispatch applies), notes the payload's
// warnings on the item and returns the event's id. An
// idempotency_key that already names an event applies nothing and returns that event.
func (e *Engine) applyEvent(tx Tx, p Principal, run *syncRun, it *DeviceItem) (string, error) {
	d := run.device
	var in EventInput
	if err := decodePayload(it.Payload, &in); err != nil {
		return "", err
	}
	in.Source, in.DeviceID, in.CapturedAt, in.BatchID = SourceDevice, d.ID, it.CapturedAt, ""
	if in.IdempotencyKey != "" {
		rec, err := tx.EventReply(p.TenantID, in.IdempotencyKey)
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
	reply, err := run.renderEvent(EventAccepted{EventID: ev.ID, Status: ev.Status, ChannelSelected: ev.ChannelSelected,
		CreatedAt: ev.CreatedAt, Dispatch: auto, RequiresManual: manual, PayloadWarnings: ce.parsed.Warnings})
	if err != nil {
		return "", Internal(err)
	}
	if err := tx.PutEventReply(p.TenantID, in.IdempotencyKey, &IdempotencyRecord{Reply: reply, CreatedAt: ev.CreatedAt}); err != nil {
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

// applyMissionStatus moves a mission as PATCH /v1/missions/:id/status would, with source
// device and the item's captured_at as the move's time. A device of a team moves only
// that team's missions.
func (e *Engine) applyMissionStatus(tx Tx, p Principal, d *Device, it *DeviceItem) error {
	var in missionStatusPayload
	if err := decodePayload(it.Payload, &in); err != nil {
		return err
	}
	if in.MissionID == "" {
		return Invalid("mission_id", "mission_id is required")
	}
	if !ValidID(in.MissionID) {
		return NotFound("mission")
	}
	if d.TeamID != nil {
		m, err := tx.Mission(p.TenantID, in.MissionID)
		if err != nil {
			return err
		}
		if m.TeamID != *d.TeamID {
			return NotFound("mission")
		}
	}
	_, err := e.UpdateMissionStatus(tx, p, in.MissionID, MissionStatusInput{Status: in.Status, Feedback: in.Feedback},
		MoveSourceDevice, it.CapturedAt)
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
func (e *Engine) applyLocation(tx Tx, p Principal, d *Device, it *DeviceItem) error {
	var in locationPayload
	if err := decodePayload(it.Payload, &in); err != nil {
		return err
	}
	switch {
	case in.MemberID == "":
		return Invalid("member_id", "member_id is required")
	case in.Lat == nil:
		return Invalid("lat", "lat is required")
	case in.Lng == nil:
		return Invalid("lng", "lng is required")
	}
	if err := checkLatLng("", *in.Lat, *in.Lng); err != nil {
		return err
	}
	if d.TeamID == nil {
		return Invalid("member_id", "the device has no team: it reports the positions of its team's members only")
	}
	t, err := tx.Team(p.TenantID, *d.TeamID)
	if err != nil {
		return err
	}
	m := t.Member(in.MemberID)
	if m == nil {
		return Invalid("member_id", "member %s is not a member of the device's team", Quote(in.MemberID))
	}
	at := *it.CapturedAt
	if at.After(e.clock.Now()) {
		at = At(e.clock.Now())
	}
	if m.LocationUpdatedAt != nil && at.Before(m.LocationUpdatedAt.Time) {
		return nil
	}
	m.Lat, m.Lng, m.LocationUpdatedAt = ptrTo(*in.Lat), ptrTo(*in.Lng), &at
	return tx.PutTeamPositions(p.TenantID, t)
}

// applyConnectivity records a connectivity report of the device's zone as POST
// /v1/connectivity/report would; its device_id is the device's, its reported_at the
// item's captured_at unless the payload gives one.
func (e *Engine) applyConnectivity(tx Tx, p Principal, d *Device, it *DeviceItem) error {
	var in ConnectivityReport
	if err := decodePayload(it.Payload, &in); err != nil {
		return err
	}
	in.DeviceID = d.ID
	if in.ReportedAt == nil {
		s := it.CapturedAt.UTC().Format(TimeLayout)
		in.ReportedAt = &s
	}
	_, err := e.reportConnectivity(tx, p.TenantID, in)
	return err
}
