package model

import (
	"bytes"
	"encoding/json"
	"errors"
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
	// SentAt is the sender's clock when it sent the sync (RFC 3339): the node corrects
	// the items' captured_at by the difference with its own (ClockOffset).
	SentAt *string `json:"sent_at"`
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
	// DeviceCapturedAt is the device's own captured_at, when CapturedAt was corrected.
	DeviceCapturedAt *Time       `json:"device_captured_at,omitempty"`
	By               *ItemSender `json:"by,omitempty"`
	Error            Kind        `json:"error,omitempty"`
	Message          string      `json:"message,omitempty"`
	Field            string      `json:"field,omitempty"`
	EventID          string      `json:"event_id,omitempty"`
	ReceivedAt       Time        `json:"received_at"`
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
func (s *ItemSender) Principal(tenantID string) Principal {
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
	// ClockOffsetMs is how far the node's clock is ahead of the sender's (negative:
	// behind), from sent_at; absent without sent_at. ClockFlagged is true when the offset
	// is beyond MaxClockOffset: the items' times were then taken as they came.
	ClockOffsetMs *int64 `json:"clock_offset_ms,omitempty"`
	ClockFlagged  bool   `json:"clock_flagged,omitempty"`
}

// DeviceSyncRender renders what a device sync stores: Event the reply of each event it creates
// (what POST /v1/events answers for it, and for its idempotency_key later), Answer the
// answer to the sync (stored under an Idempotency-Key when one is given).
type DeviceSyncRender struct {
	Event  Render
	Answer Render
}

// validate checks the body: what can fail the whole request. Items are judged one by one.
func (in *DeviceSyncInput) Validate() error {
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

// Statuses of a device's item in a sync answer, with ItemDuplicate and ItemRejected of
// the batch items. pending is additive to the contract: the item is stored but held
// above a gap, and is applied in the transaction that fills it.
const (
	ItemApplied = "applied"
	ItemPending = "pending"
)

// DeviceRegistered is what a device registration renders: the device, and whether it is
// new.
type DeviceRegistered struct {
	Device  *Device
	Created bool
}

// IsNullJSON reports whether raw is absent or JSON null.
func IsNullJSON(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

// DecodeItemPayload decodes a device item's payload into v; a field of the wrong type is
// a validation error naming it.
func DecodeItemPayload(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return Invalid(te.Field, "%s has the wrong type (%s)", te.Field, te.Value)
		}
		return Invalid("", "payload could not be read")
	}
	return nil
}
