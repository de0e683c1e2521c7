package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// HookSyncBatchProcessed is the webhook of a processed sync batch.
const HookSyncBatchProcessed = "sync.batch_processed"

// Limits of one sync batch (POST /v1/sync/batch).
const (
	MaxBatchItems = 1000
	MaxBatchBytes = 8 << 20
	// maxDeviceID bounds the free-form device_id of a batch (an identifier all the same:
	// model.CheckName holds it).
	maxDeviceID = 255
)

// batchProcessed is the payload of sync.batch_processed.
type batchProcessed struct {
	BatchID  string `json:"batch_id"`
	Accepted int    `json:"accepted"`
	Rejected int    `json:"rejected"`
}

// BatchTooLarge is the error of a batch over the limits.
func BatchTooLarge() *model.Error {
	return model.Errorf(model.KindPayloadTooLarge, "a sync batch holds at most %d events and %d MiB", MaxBatchItems, MaxBatchBytes>>20)
}

// CanSyncBatch says whether p may post a sync batch: an API key holding sync:write. A
// user's token is api_key_required whatever its role.
func CanSyncBatch(p model.Principal) error {
	if !p.IsKey() {
		return model.Errorf(model.KindAPIKeyRequired, "POST /v1/sync/batch needs an API key with the %s scope, not a user token", model.PermSyncWrite)
	}
	return p.Require(model.PermSyncWrite)
}

// preItem is an item after the checks that need no transaction.
type preItem struct {
	ce  *checkedEvent
	err error
	// keyOK is true when the item's idempotency_key is one the node takes: the batch
	// record keeps only such a key, so that no refused text is stored.
	keyOK bool
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
func (e *Engine) SyncBatch(ctx context.Context, p model.Principal, in model.SyncBatchInput, k *model.IdempotencyKey, render model.SyncRender) (model.Reply, error) {
	if err := CanSyncBatch(p); err != nil {
		return model.Reply{}, err
	}
	sk, err := storeKey(k)
	if err != nil {
		return model.Reply{}, err
	}
	switch {
	case in.Events == nil:
		return model.Reply{}, model.Invalid("events", "events is required")
	case len(in.Events) == 0:
		return model.Reply{}, model.Invalid("events", "events must hold at least one event")
	case len(in.Events) > MaxBatchItems:
		return model.Reply{}, BatchTooLarge()
	case in.CapturedAt == "":
		return model.Reply{}, model.Invalid("captured_at", "captured_at is required")
	}
	captured, err := model.ParseTime(in.CapturedAt)
	if err != nil {
		return model.Reply{}, model.Invalid("captured_at", "captured_at must be an ISO 8601 (RFC 3339) timestamp such as 2026-06-09T10:11:12.345Z")
	}
	if err := model.CheckName("device_id", in.DeviceID, maxDeviceID); err != nil {
		return model.Reply{}, err
	}
	now := e.clock.Now()
	correction, offset, flagged, err := model.ClockOffset(in.SentAt, now)
	if err != nil {
		return model.Reply{}, err
	}
	pre := e.checkItems(in, captured, correction, now)

	// An item that fails after writing (rare: a rule met only inside the transaction)
	// rolls the transaction back, and the batch runs again with it rejected.
	forced := map[int]error{}
	for {
		var out model.Reply
		var reused bool
		var done *model.Batch
		err := e.store.Batch(ctx, p.TenantID, func(tx model.Tx) error {
			out, reused, done = model.Reply{}, false, nil
			// A reused key is answered after the transaction: a failing function would make
			// Store.Batch run it again alone.
			switch r, err := replay(tx, p.TenantID, k); {
			case model.IsKind(err, model.KindIdempotencyReused):
				reused = true
				return nil
			case err != nil:
				return err
			case r != nil:
				out = *r
				return nil
			}
			b, err := e.syncBatchIn(tx, p.TenantID, in, captured, pre, forced, render.Event, batchClock{offset, flagged})
			if err != nil {
				return err
			}
			if sk == "" {
				done = b // rendered after the commit: nothing keeps the reply
				return nil
			}
			if out, err = render.Batch(b); err != nil {
				return err
			}
			return remember(tx, p.TenantID, k, out, b.ReceivedAt)
		})
		var f *itemFailure
		if errors.As(err, &f) && model.ErrorKind(f.err) == model.KindValidation {
			forced[f.index] = f.err
			continue
		}
		if err == nil && reused {
			err = errKeyReused()
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
func (e *Engine) checkItems(in model.SyncBatchInput, captured model.Time, correction time.Duration, now time.Time) []preItem {
	pre := make([]preItem, len(in.Events))
	workers := min(runtime.GOMAXPROCS(0), len(in.Events)/checkParallelFrom)
	if workers <= 1 {
		checkItemRange(in, captured, correction, now, pre, 0, len(pre))
		return pre
	}
	var wg sync.WaitGroup
	per := (len(pre) + workers - 1) / workers
	for lo := 0; lo < len(pre); lo += per {
		wg.Go(func() { checkItemRange(in, captured, correction, now, pre, lo, min(lo+per, len(pre))) })
	}
	wg.Wait()
	return pre
}

// checkItemRange checks the items lo to hi (excluded) into pre.
func checkItemRange(in model.SyncBatchInput, captured model.Time, correction time.Duration, now time.Time, pre []preItem, lo, hi int) {
	for i := lo; i < hi; i++ {
		it := &in.Events[i]
		pre[i].keyOK = ValidateIdempotencyKey("idempotency_key", it.IdempotencyKey) == nil
		if it.Err != nil {
			pre[i].err = it.Err
			continue
		}
		pre[i].lookup = it.IdempotencyKey != "" && pre[i].keyOK
		at := captured
		if it.CapturedAt != "" {
			t, err := model.ParseTime(it.CapturedAt)
			if err != nil {
				pre[i].err = model.Invalid("captured_at", "captured_at must be an ISO 8601 (RFC 3339) timestamp")
				continue
			}
			at = t
		}
		var own *model.Time // the sender's own time, when corrected by its clock's offset
		if correction != 0 {
			o := at
			own, at = &o, model.At(at.Add(correction))
		}
		prio := it.Priority
		if prio == "" {
			prio = model.PriorityNormal
		}
		pre[i].ce, pre[i].err = checkEvent(model.EventInput{Type: it.Type, Priority: prio, Vertical: it.Vertical,
			IdempotencyKey: it.IdempotencyKey, Payload: it.Payload, ZoneCode: it.ZoneCode,
			Source: SourceSyncBatch, DeviceID: in.DeviceID, CapturedAt: &at, DeviceCapturedAt: own}, now)
	}
}

// batchClock is what a batch's sent_at said of its sender's clock (model.ClockOffset).
type batchClock struct {
	offsetMs *int64
	flagged  bool
}

// syncBatchIn judges and stores the items of a batch within tx, then the batch record and
// its webhook. It may run more than once (Store.Batch): it starts afresh every time.
func (e *Engine) syncBatchIn(tx model.Tx, tenantID string, in model.SyncBatchInput, captured model.Time, pre []preItem,
	forced map[int]error, renderEvent model.Render, clk batchClock) (*model.Batch, error) {
	// Read once for the whole batch (its items' events and its webhook): until the
	// transaction commits, a stale cache is not refilled.
	cfg, err := e.tenantConfig(tx, tenantID)
	if err != nil {
		return nil, err
	}
	now := model.At(e.clock.Now())
	b := &model.Batch{ID: e.ids.at(now.Time), CapturedAt: captured, ReceivedAt: now, Items: make([]model.BatchItem, len(pre)),
		ClockOffsetMs: clk.offsetMs, ClockFlagged: clk.flagged}
	if in.DeviceID != "" {
		b.DeviceID = &in.DeviceID
	}
	reject := func(it *model.BatchItem, err error) {
		it.Status, it.Error = model.ItemRejected, itemError(err)
		b.Rejected++
	}
	replies, err := e.batchReplies(tx, tenantID, in, pre)
	if err != nil {
		return nil, err
	}
	for i := range pre {
		it := &b.Items[i]
		it.Index = i
		if pre[i].keyOK {
			it.IdempotencyKey = in.Events[i].IdempotencyKey
		}
		if pre[i].lookup {
			rec, err := replies.lookup(tx, tenantID, it.IdempotencyKey)
			if err != nil {
				return nil, err
			}
			if rec != nil {
				id := replyEventID(rec.Body)
				it.Status, it.EventID = model.ItemDuplicate, &id
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
			reject(it, model.Invalid("vertical", "vertical %s is not enabled for this tenant", model.Quote(ce.in.Vertical)))
			continue
		}
		if ce.in.ZoneCode != "" && cfg.zone(ce.in.ZoneCode) == nil {
			reject(it, model.Invalid("zone_code", "zone_code %s is not a zone of this tenant", model.Quote(ce.in.ZoneCode)))
			continue
		}
		ce.in.BatchID = b.ID
		ev, tenant, err := e.createEventIn(tx, tenantID, cfg, ce)
		if err != nil {
			return nil, &itemFailure{index: i, err: err}
		}
		auto, manual, err := e.autoDispatch(tx, tenantID, tenant, ev)
		if err != nil {
			return nil, &itemFailure{index: i, err: err}
		}
		warnings := ce.parsed.Warnings
		reply, err := renderEvent(model.EventAccepted{EventID: ev.ID, Status: ev.Status, ChannelSelected: ev.ChannelSelected,
			CreatedAt: ev.CreatedAt, Dispatch: auto, RequiresManual: manual, PayloadWarnings: warnings})
		if err != nil {
			return nil, err
		}
		if err := tx.PutEventReply(tenantID, it.IdempotencyKey, &model.IdempotencyRecord{Reply: reply, CreatedAt: ev.CreatedAt}); err != nil {
			return nil, err
		}
		id := ev.ID
		it.Status, it.EventID, it.Dispatch, it.RequiresManual, it.PayloadWarnings = model.ItemAccepted, &id, auto, manual, warnings
		b.Accepted++
	}
	if err := tx.PutSyncBatch(tenantID, b); err != nil {
		return nil, err
	}
	if err := e.count(tx, tenantID, b.ReceivedAt.Time, model.UsageDelta{SyncBatches: 1}); err != nil {
		return nil, err
	}
	if _, err := e.webhookMessages(tx, cfg, HookSyncBatchProcessed, outboxTag{}, batchProcessed{BatchID: b.ID,
		Accepted: b.Accepted, Rejected: b.Rejected}); err != nil {
		return nil, err
	}
	return b, nil
}

// itemError turns an item's error into its reason; anything but an *Error is internal.
func itemError(err error) *model.ItemError {
	var e *model.Error
	if !errors.As(err, &e) {
		return &model.ItemError{Code: model.KindInternal, Message: "internal error"}
	}
	return &model.ItemError{Code: e.Kind, Message: e.Msg, Field: e.Field}
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
func (e *Engine) SyncStatus(ctx context.Context, p model.Principal, batchID string) (*model.Batch, error) {
	if !p.Can(model.PermSyncWrite) && !p.Can(model.PermEventsRead) {
		return nil, model.Errorf(model.KindForbidden, "this operation needs the %s or the %s permission", model.PermSyncWrite, model.PermEventsRead)
	}
	switch {
	case batchID == "":
		return nil, model.Invalid("batch_id", "batch_id is required")
	case !model.ValidID(batchID):
		return nil, model.Invalid("batch_id", "batch_id must be a UUID")
	}
	var b *model.Batch
	err := e.store.View(ctx, func(tx model.Tx) (err error) {
		b, err = tx.SyncBatch(p.TenantID, batchID)
		return err
	})
	return b, err
}

// batchReplies holds the event replies that the keys of a batch of items had when its
// transaction began, read in one call (model.EventRepliesTx): a sync batch's items, the
// event items a device sync received.
type batchReplies struct {
	// read holds each key read, with its reply or nil; a key not read is asked of the
	// store when looked up.
	read map[string]*model.IdempotencyRecord
	// seen holds the keys looked up so far: an item may write its key's reply, and a
	// later item with the same key asks the store, which holds that write.
	seen map[string]bool
}

// readReplies reads the replies of keys in one call; fewer than two keys are left to
// their lookups.
func readReplies(tx model.Tx, tenantID string, keys []string) (*batchReplies, error) {
	if len(keys) < 2 {
		return &batchReplies{}, nil
	}
	read, err := tx.EventReplies(tenantID, keys)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if _, ok := read[k]; !ok {
			read[k] = nil
		}
	}
	return &batchReplies{read: read, seen: make(map[string]bool, len(keys))}, nil
}

// batchReplies reads the replies of the keys of a batch's items.
func (e *Engine) batchReplies(tx model.Tx, tenantID string, in model.SyncBatchInput, pre []preItem) (*batchReplies, error) {
	var keys []string
	for i := range pre {
		if pre[i].lookup {
			keys = append(keys, in.Events[i].IdempotencyKey)
		}
	}
	return readReplies(tx, tenantID, keys)
}

// lookup returns the reply stored under key, as tx.EventReply would.
func (r *batchReplies) lookup(tx model.Tx, tenantID, key string) (*model.IdempotencyRecord, error) {
	rec, ok := r.read[key]
	if !ok || r.seen[key] {
		return tx.EventReply(tenantID, key)
	}
	r.seen[key] = true
	return rec, nil
}
