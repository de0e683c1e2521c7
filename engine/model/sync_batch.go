package model

import "encoding/json"

// SyncBatchInput is the body of POST /v1/sync/batch.
type SyncBatchInput struct {
	Events   []SyncItemInput `json:"events"`
	DeviceID string          `json:"device_id"`
	// CapturedAt is read by SyncBatch, so that a malformed one names its field.
	CapturedAt string `json:"captured_at"`
	// SentAt is the sender's clock when it sent the batch: the node corrects the items'
	// captured_at by the difference with its own (ClockOffset), as in a device sync.
	SentAt *string `json:"sent_at"`
}

// SyncItemInput is one event of a sync batch: the body of POST /v1/events with an
// optional priority (normal by default) and captured_at (the batch's by default).
type SyncItemInput struct {
	Type           string          `json:"type"`
	Priority       string          `json:"priority"`
	Vertical       string          `json:"vertical"`
	IdempotencyKey string          `json:"idempotency_key"`
	Payload        json.RawMessage `json:"payload"`
	ZoneCode       string          `json:"zone_code"`
	CapturedAt     string          `json:"captured_at"`
	// Err is set by the decoder when the item's JSON did not fit (a field of the wrong
	// type): the item is rejected with it, and its siblings are judged as usual.
	Err error `json:"-"`
}

// Batch is the record of a processed sync batch: what POST /v1/sync/batch answers and GET
// /v1/sync/status returns.
type Batch struct {
	ID         string  `json:"batch_id"`
	DeviceID   *string `json:"device_id"`
	CapturedAt Time    `json:"captured_at"`
	ReceivedAt Time    `json:"received_at"`
	// Accepted counts the new events and the duplicates; Duplicates the latter alone.
	Accepted   int         `json:"accepted"`
	Duplicates int         `json:"duplicates"`
	Rejected   int         `json:"rejected"`
	Items      []BatchItem `json:"items"`
	// ClockOffsetMs and ClockFlagged are those of a device sync (DeviceSyncResult), when
	// the batch carried sent_at.
	ClockOffsetMs *int64 `json:"clock_offset_ms,omitempty"`
	ClockFlagged  bool   `json:"clock_flagged,omitempty"`
}

// BatchItem is the outcome of one item of a batch, in the order of the batch.
type BatchItem struct {
	Index          int        `json:"index"`
	IdempotencyKey string     `json:"idempotency_key"`
	Status         string     `json:"status"`
	EventID        *string    `json:"event_id"`
	Error          *ItemError `json:"error"`
	// Dispatch and RequiresManual report auto-dispatch of an accepted item, as POST
	// /v1/events does.
	Dispatch       *AutoDispatch `json:"dispatch,omitempty"`
	RequiresManual bool          `json:"requires_manual,omitempty"`
	// PayloadWarnings are those of an accepted item's payload, as POST /v1/events gives.
	PayloadWarnings []string `json:"payload_warnings,omitempty"`
}

// ItemError says why an item was rejected, in the terms of the error body.
type ItemError struct {
	Code    Kind   `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// SyncRender renders the stored replies of a batch: Batch the answer to the batch (kept
// under its Idempotency-Key), Event the answer POST /v1/events gives for an accepted item
// (kept under the item's idempotency_key).
type SyncRender struct {
	Batch Render
	Event Render
}

// Statuses of a batch item.
const (
	ItemAccepted  = "accepted"
	ItemDuplicate = "duplicate"
	ItemRejected  = "rejected"
)
