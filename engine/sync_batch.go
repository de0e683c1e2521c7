package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// HookSyncBatchProcessed is the webhook of a processed sync batch.
const HookSyncBatchProcessed = "sync.batch_processed"

// Limits of one sync batch (POST /v1/sync/batch).
const (
	MaxBatchItems = 1000
	MaxBatchBytes = 8 << 20
	// maxDeviceID bounds the free-text device_id of a batch.
	maxDeviceID = 255
)

// Statuses of a batch item.
const (
	ItemAccepted  = "accepted"
	ItemDuplicate = "duplicate"
	ItemRejected  = "rejected"
)

// SyncBatchInput is the body of POST /v1/sync/batch.
type SyncBatchInput struct {
	Events   []SyncItemInput `json:"events"`
	DeviceID string          `json:"device_id"`
	// CapturedAt is read by SyncBatch, so that a malformed one names its field.
	CapturedAt string `json:"captured_at"`
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

// batchProcessed is the payload of sync.batch_processed.
type batchProcessed struct {
	BatchID  string `json:"batch_id"`
	Accepted int    `json:"accepted"`
	Rejected int    `json:"rejected"`
}

// SyncRender renders the stored replies of a batch: Batch the answer to the batch (kept
// under its Idempotency-Key), Event the answer POST /v1/events gives for an accepted item
// (kept under the item's idempotency_key).
type SyncRender struct {
	Batch Render
	Event Render
}

// BatchTooLarge is the error of a batch over the limits.
func BatchTooLarge() *Error {
	return Errorf(KindPayloadTooLarge, "a sync batch holds at most %d events and %d MiB", MaxBatchItems, MaxBatchBytes>>20)
}

// CanSyncBatch says whether p may post a sync batch: an API key holding sync:write. A
// user's token is api_key_required whatever its role.
func CanSyncBatch(p Principal) error {
	if !p.IsKey() {
		return Errorf(KindAPIKeyRequired, "POST /v1/sync/batch needs an API key with the %s scope, not a user token", PermSyncWrite)
	}
	return p.Require(PermSyncWrite)
}

// preItem is an item after the checks that need no transaction.
type preItem struct {
	ce  *checkedEvent
	err error
	// lookup is true when the item's idempotency_key can name an event.
	lookup bool
}

// itemFailure is an item that failed inside the transaction after it may have written:
// the transaction is rolled back and run again with the item rejected.
type itemFailure struct {
	index int
	err   error
}

func (f *itemFailure) Error() string { return fmt.Sprintf("batch item %d: %v", f.index, f.err) }

// SyncBatch accepts a batch of events captured offline by p's tenant (an API key with
// sync:write). Each item is judged alone: an item whose idempotency_key already names an
// event (stored before, or by an earlier item of the batch) is a duplicate, counted as
// accepted, and creates nothing; an invalid item is rejected with its reason; the others
// become events of source sync_batch, with the batch's id and device_id and their
// captured_at, auto-dispatched as POST /v1/events does. The batch record, the events, their
// outbox entries and replies, the sync.batch_processed webhook and the reply under k (nil:
// no Idempotency-Key) commit in one transaction, shared with concurrent event ingest
// (Store.Batch). A repeated k returns the first reply; with another body,
// idempotency_key_reused. Errors: api_key_required, forbidden, validation_error (the batch
// itself), payload_too_large.
func (e *Engine) SyncBatch(ctx context.Context, p Principal, in SyncBatchInput, k *IdempotencyKey, render SyncRender) (Reply, error) {
	if err := CanSyncBatch(p); err != nil {
		return Reply{}, err
	}
	var storeKey string
	if k != nil && k.Key != "" {
		if err := ValidateIdempotencyKey("idempotency_key", k.Key); err != nil {
			return Reply{}, err
		}
		storeKey = k.Route + "\n" + k.Key
	}
	switch {
	case in.Events == nil:
		return Reply{}, Invalid("events", "events is required")
	case len(in.Events) == 0:
		return Reply{}, Invalid("events", "events must hold at least one event")
	case len(in.Events) > MaxBatchItems:
		return Reply{}, BatchTooLarge()
	case in.CapturedAt == "":
		return Reply{}, Invalid("captured_at", "captured_at is required")
	}
	captured, err := ParseTime(in.CapturedAt)
	if err != nil {
		return Reply{}, Invalid("captured_at", "captured_at must be an ISO 8601 (RFC 3339) timestamp such as 2026-06-09T10:11:12.345Z")
	}
	if err := checkLength("device_id", in.DeviceID, maxDeviceID); err != nil {
		return Reply{}, err
	}
	now := e.clock.Now()
	pre := e.checkItems(in, captured, now)

	// An item that fails after writing (rare: a rule met only inside the transaction)
	// rolls the transaction back, and the batch runs again with it rejected.
	forced := map[int]error{}
	for {
		var out Reply
		var reused bool
		var done *Batch
		err := e.store.Batch(ctx, func(tx Tx) error {
			out, reused, done = Reply{}, false, nil
			if storeKey != "" {
				rec, err := tx.Idempotency(p.TenantID, storeKey)
				if err != nil {
					return err
				}
				if rec != nil {
					if rec.Fingerprint != k.Fingerprint {
						reused = true
					} else {
						out, out.Replayed = rec.Reply, true
					}
					return nil
				}
			}
			b, err := e.syncBatchIn(tx, p.TenantID, in, captured, pre, forced, render.Event)
			if err != nil {
				return err
			}
			if storeKey == "" {
				done = b // rendered after the commit: nothing keeps the reply
				return nil
			}
			if out, err = render.Batch(b); err != nil {
				return err
			}
			return tx.PutIdempotency(p.TenantID, storeKey, &IdempotencyRecord{Reply: out,
				Fingerprint: k.Fingerprint, CreatedAt: b.ReceivedAt})
		})
		var f *itemFailure
		if errors.As(err, &f) && ErrorKind(f.err) == KindValidation {
			forced[f.index] = f.err
			continue
		}
		if err == nil && reused {
			err = Errorf(KindIdempotencyReused, "this Idempotency-Key was used with a different request body")
		}
		if f != nil {
			err = f.err
		}
		if err == nil && done != nil {
			out, err = render.Batch(done)
		}
		return out, err
	}
}

// checkParallelFrom is the size from which a batch's items are checked on every CPU: the
// checks (payload parsing above all) are pure, and a third of a large batch's time.
const checkParallelFrom = 64

// checkItems runs the checks of every item that need no transaction.
func (e *Engine) checkItems(in SyncBatchInput, captured Time, now time.Time) []preItem {
	pre := make([]preItem, len(in.Events))
	workers := min(runtime.GOMAXPROCS(0), len(in.Events)/checkParallelFrom)
	if workers <= 1 {
		checkItemRange(in, captured, now, pre, 0, len(pre))
		return pre
	}
	var wg sync.WaitGroup
	per := (len(pre) + workers - 1) / workers
	for lo := 0; lo < len(pre); lo += per {
		wg.Go(func() { checkItemRange(in, captured, now, pre, lo, min(lo+per, len(pre))) })
	}
	wg.Wait()
	return pre
}

// checkItemRange checks the items lo to hi (excluded) into pre.
func checkItemRange(in SyncBatchInput, captured Time, now time.Time, pre []preItem, lo, hi int) {
	for i := lo; i < hi; i++ {
		it := &in.Events[i]
		if it.Err != nil {
			pre[i].err = it.Err
			continue
		}
		pre[i].lookup = it.IdempotencyKey != "" && len(it.IdempotencyKey) <= MaxIdempotencyKeyLen
		at := captured
		if it.CapturedAt != "" {
			t, err := ParseTime(it.CapturedAt)
			if err != nil {
				pre[i].err = Invalid("captured_at", "captured_at must be an ISO 8601 (RFC 3339) timestamp")
				continue
			}
			at = t
		}
		prio := it.Priority
		if prio == "" {
			prio = PriorityNormal
		}
		pre[i].ce, pre[i].err = checkEvent(EventInput{Type: it.Type, Priority: prio, Vertical: it.Vertical,
			IdempotencyKey: it.IdempotencyKey, Payload: it.Payload, ZoneCode: it.ZoneCode,
			Source: SourceSyncBatch, DeviceID: in.DeviceID, CapturedAt: &at}, now)
	}
}

// syncBatchIn judges and stores the items of a batch within tx, then the batch record and
// its webhook. It may run more than once (Store.Batch): it starts afresh every time.
func (e *Engine) syncBatchIn(tx Tx, tenantID string, in SyncBatchInput, captured Time, pre []preItem,
	forced map[int]error, renderEvent Render) (*Batch, error) {
	cfg, err := e.tenantConfig(tx, tenantID)
	if err != nil {
		return nil, err
	}
	now := At(e.clock.Now())
	b := &Batch{ID: NewIDAt(now.Time), CapturedAt: captured, ReceivedAt: now, Items: make([]BatchItem, len(pre))}
	if in.DeviceID != "" {
		b.DeviceID = &in.DeviceID
	}
	reject := func(it *BatchItem, err error) {
		it.Status, it.Error = ItemRejected, itemError(err)
		b.Rejected++
	}
	for i := range pre {
		it := &b.Items[i]
		it.Index, it.IdempotencyKey = i, in.Events[i].IdempotencyKey
		if pre[i].lookup {
			rec, err := tx.EventReply(tenantID, it.IdempotencyKey)
			if err != nil {
				return nil, err
			}
			if rec != nil {
				id := replyEventID(rec.Body)
				it.Status, it.EventID = ItemDuplicate, &id
				b.Accepted++
				b.Duplicates++
				continue
			}
		}
		if err := pre[i].err; err != nil {
			reject(it, err)
			continue
		}
		if err := forced[i]; err != nil {
			reject(it, err)
			continue
		}
		ce := pre[i].ce
		// The rules createEvent checks before it writes, checked here so that a rejected
		// item leaves nothing behind.
		if !cfg.tenant.HasVertical(ce.in.Vertical) {
			reject(it, Invalid("vertical", "vertical %s is not enabled for this tenant", Quote(ce.in.Vertical)))
			continue
		}
		if ce.in.ZoneCode != "" && cfg.zone(ce.in.ZoneCode) == nil {
			reject(it, Invalid("zone_code", "zone_code %s is not a zone of this tenant", Quote(ce.in.ZoneCode)))
			continue
		}
		ce.in.BatchID = b.ID
		ev, tenant, err := e.createEvent(tx, tenantID, ce)
		if err != nil {
			return nil, &itemFailure{index: i, err: err}
		}
		auto, manual, err := e.autoDispatch(tx, tenantID, tenant, ev)
		if err != nil {
			return nil, &itemFailure{index: i, err: err}
		}
		warnings := ce.parsed.Warnings
		reply, err := renderEvent(EventAccepted{EventID: ev.ID, Status: ev.Status, ChannelSelected: ev.ChannelSelected,
			CreatedAt: ev.CreatedAt, Dispatch: auto, RequiresManual: manual, PayloadWarnings: warnings})
		if err != nil {
			return nil, err
		}
		if err := tx.PutEventReply(tenantID, it.IdempotencyKey, &IdempotencyRecord{Reply: reply, CreatedAt: ev.CreatedAt}); err != nil {
			return nil, err
		}
		id := ev.ID
		it.Status, it.EventID, it.Dispatch, it.RequiresManual, it.PayloadWarnings = ItemAccepted, &id, auto, manual, warnings
		b.Accepted++
	}
	if err := tx.PutSyncBatch(tenantID, b); err != nil {
		return nil, err
	}
	if err := e.count(tx, tenantID, b.ReceivedAt.Time, UsageDelta{SyncBatches: 1}); err != nil {
		return nil, err
	}
	if err := e.Notify(tx, tenantID, HookSyncBatchProcessed, batchProcessed{BatchID: b.ID,
		Accepted: b.Accepted, Rejected: b.Rejected}); err != nil {
		return nil, err
	}
	return b, nil
}

// itemError turns an item's error into its reason; anything but an *Error is internal.
func itemError(err error) *ItemError {
	var e *Error
	if !errors.As(err, &e) {
		return &ItemError{Code: KindInternal, Message: "internal error"}
	}
	return &ItemError{Code: e.Kind, Message: e.Msg, Field: e.Field}
}

// replyEventID reads event_id from the stored reply of an event.
func replyEventID(body []byte) string {
	var r struct {
		EventID string `json:"event_id"`
	}
	_ = json.Unmarshal(body, &r)
	return r.EventID
}

// SyncStatus returns a batch of p's tenant. Reading it needs sync:write (the sender) or
// events:read (whoever may read the events it made). Errors: validation_error on a missing
// or malformed batch_id, forbidden, not_found (also for another tenant's batch).
func (e *Engine) SyncStatus(ctx context.Context, p Principal, batchID string) (*Batch, error) {
	if !p.Can(PermSyncWrite) && !p.Can(PermEventsRead) {
		return nil, Errorf(KindForbidden, "this operation needs the %s or the %s permission", PermSyncWrite, PermEventsRead)
	}
	switch {
	case batchID == "":
		return nil, Invalid("batch_id", "batch_id is required")
	case !ValidID(batchID):
		return nil, Invalid("batch_id", "batch_id must be a UUID")
	}
	var b *Batch
	err := e.store.View(ctx, func(tx Tx) (err error) {
		b, err = tx.SyncBatch(p.TenantID, batchID)
		return err
	})
	return b, err
}
