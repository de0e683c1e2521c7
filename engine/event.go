package engine

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/payload"
)

// Event sources.
const (
	SourceAPI       = "api"
	SourceSyncBatch = "sync_batch"
	SourceDevice    = "device"
	SourceUpstream  = "upstream"
)

// Field limits of an event.
const (
	maxEventType = 100
	// MaxPayloadBytes caps the JSON of an event's payload, as sent
	// (docs/decisions/0077-payload-cap-64-kib.md): a list of events stays a reasonable answer.
	MaxPayloadBytes = 64 << 10
	// MaxCaptureSkew is how far in the future a device clock may be.
	MaxCaptureSkew = 2 * time.Minute
)

// checkedEvent is an input that passed the checks that need no transaction.
type checkedEvent struct {
	in     model.EventInput
	parsed payload.ParsedPayload
}

// checkEvent validates what can be validated without the store: required fields in the
// order of the contract, enums, lengths and the vertical's payload parser (which refuses
// only a payload that is not a JSON object, and warns about the fields it ignores).
func checkEvent(in model.EventInput, now time.Time) (*checkedEvent, error) {
	return checkEventFields(in, now, checkEventKey(in.IdempotencyKey))
}

// checkEventKey is the one check of an event's idempotency_key: none (its absence is
// checkEventFields' to report, in the contract's order), or a key ValidateIdempotencyKey
// takes.
func checkEventKey(key string) error {
	if key == "" {
		return nil
	}
	return ValidateIdempotencyKey("idempotency_key", key)
}

// checkEventFields is checkEvent given keyErr, the verdict of checkEventKey on
// in.IdempotencyKey, which it reports at the key's place in the contract's order: a
// caller that judged the key first (IngestEvent) passes nil and the key is not judged
// twice.
func checkEventFields(in model.EventInput, now time.Time, keyErr error) (*checkedEvent, error) {
	in.Type = strings.TrimSpace(in.Type)
	switch {
	case in.Type == "":
		return nil, model.Invalid("type", "type is required")
	case in.Priority == "":
		return nil, model.Invalid("priority", "priority is required")
	case in.Vertical == "":
		return nil, model.Invalid("vertical", "vertical is required")
	case in.IdempotencyKey == "":
		return nil, model.Invalid("idempotency_key", "idempotency_key is required")
	}
	if err := model.CheckName("type", in.Type, maxEventType); err != nil {
		return nil, err
	}
	if !slices.Contains(model.Priorities, in.Priority) {
		return nil, model.Invalid("priority", "priority must be one of critical, high, normal, low")
	}
	if keyErr != nil {
		return nil, keyErr
	}
	if in.ZoneCode != "" && !model.ValidZoneCode(in.ZoneCode) {
		return nil, model.Invalid("zone_code", "zone_code %s is not a zone of this tenant", model.Quote(in.ZoneCode))
	}
	if p := bytes.TrimSpace(in.Payload); len(p) == 0 || bytes.Equal(p, []byte("null")) {
		in.Payload = nil
	}
	if len(in.Payload) > MaxPayloadBytes {
		return nil, payloadTooLarge(len(in.Payload))
	}
	if in.CapturedAt != nil && in.CapturedAt.Sub(now) > MaxCaptureSkew {
		return nil, model.Invalid("captured_at", "captured_at is more than 2 minutes in the future")
	}
	parsed, err := payload.Parse(in.Vertical, in.Payload)
	if err != nil {
		return nil, err
	}
	return &checkedEvent{in: in, parsed: parsed}, nil
}

// payloadTooLarge is the error of an event whose payload has more than MaxPayloadBytes of
// JSON: payload_too_large on the field payload, naming the limit.
func payloadTooLarge(size int) *model.Error {
	return &model.Error{Kind: model.KindPayloadTooLarge, Field: "payload", Msg: fmt.Sprintf(
		"payload is %d bytes of JSON; an event's payload holds at most %d bytes (64 KiB)", size, MaxPayloadBytes)}
}

// IngestEvent accepts an event of p's tenant: one transaction, shared with other
// concurrent events (Store.Batch), that checks the event's idempotency_key, stores the
// event, plans its delivery into the outbox and stores the reply rendered by render. A
// repeated idempotency_key returns the original reply, whatever the second body says.
func (e *Engine) IngestEvent(ctx context.Context, p model.Principal, in model.EventInput, render model.Render) (model.Reply, error) {
	// The key is judged first, and only here: a repeat is answered even when its body
	// fails the checks below, and a key the node refuses is never looked up.
	if err := checkEventKey(in.IdempotencyKey); err != nil {
		return model.Reply{}, err
	}
	var out model.Reply
	ce, err := checkEventFields(in, e.clock.Now(), nil)
	if err != nil {
		// A repeat is answered whatever its body says: the key names the logical event.
		verr := err
		err = e.store.View(ctx, func(tx model.Tx) error {
			r, err := eventReplay(tx, p.TenantID, in.IdempotencyKey)
			if r != nil {
				out = *r
			}
			return err
		})
		if err == nil && !out.Replayed {
			err = verr
		}
		return out, err
	}
	ctx = model.WithBatchReads(ctx, model.BatchReads{EventReplyKey: in.IdempotencyKey})
	err = e.store.Batch(ctx, p.TenantID, func(tx model.Tx) error {
		out = model.Reply{}
		if r, err := eventReplay(tx, p.TenantID, in.IdempotencyKey); err != nil || r != nil {
			if r != nil {
				out = *r
			}
			return err
		}
		ev, tenant, err := e.createEvent(tx, p.TenantID, ce)
		if err != nil {
			return err
		}
		auto, manual, err := e.autoDispatch(tx, p.TenantID, tenant, ev)
		if err != nil {
			return err
		}
		if out, err = render(model.EventAccepted{EventID: ev.ID, Status: ev.Status, ChannelSelected: ev.ChannelSelected,
			CreatedAt: ev.CreatedAt, Dispatch: auto, RequiresManual: manual, PayloadWarnings: ce.parsed.Warnings}); err != nil {
			return err
		}
		return tx.PutEventReply(p.TenantID, in.IdempotencyKey, &model.IdempotencyRecord{Reply: out, CreatedAt: ev.CreatedAt})
	})
	return out, err
}

// createEvent stores a checked event and plans its delivery, within tx. It also answers
// the tenant (shared, read-only).
func (e *Engine) createEvent(tx model.Tx, tenantID string, ce *checkedEvent) (*model.Event, *model.Tenant, error) {
	cfg, err := e.tenantConfig(tx, tenantID)
	if err != nil {
		return nil, nil, err
	}
	return e.createEventIn(tx, tenantID, cfg, ce)
}

// createEventIn is createEvent with the tenant's configuration already read: a use case
// that creates many events in one transaction reads it once.
func (e *Engine) createEventIn(tx model.Tx, tenantID string, cfg *tenantConfig, ce *checkedEvent) (*model.Event, *model.Tenant, error) {
	in := ce.in
	if !cfg.tenant.HasVertical(in.Vertical) {
		return nil, nil, model.Invalid("vertical", "vertical %s is not enabled for this tenant", model.Quote(in.Vertical))
	}
	now := model.At(e.clock.Now())
	ev := &model.Event{ID: e.ids.at(now.Time), Type: in.Type, Priority: in.Priority, Vertical: in.Vertical,
		IdempotencyKey: in.IdempotencyKey, Payload: in.Payload, Lat: ce.parsed.Lat, Lng: ce.parsed.Lng,
		Severity: ce.parsed.Severity, RequiredEquipment: ce.parsed.RequiredEquipment,
		Source: in.Source, CapturedAt: in.CapturedAt, DeviceCapturedAt: in.DeviceCapturedAt, CreatedAt: now, UpdatedAt: now,
		ChannelsAttempted: []string{}}
	if ev.Source == "" {
		ev.Source = SourceAPI
	}
	if in.BatchID != "" {
		ev.BatchID = &in.BatchID
	}
	if in.DeviceID != "" {
		ev.DeviceID = &in.DeviceID
	}
	var zone *model.Zone
	switch {
	case in.ZoneCode != "":
		if zone = cfg.zone(in.ZoneCode); zone == nil {
			return nil, nil, model.Invalid("zone_code", "zone_code %s is not a zone of this tenant", model.Quote(in.ZoneCode))
		}
	case ev.Lat != nil:
		zone = cfg.zoneAt(*ev.Lat, *ev.Lng)
	}
	if zone != nil {
		code := zone.Code
		ev.ZoneCode = &code
	}
	if err := e.planDelivery(tx, tenantID, cfg, zone, ev); err != nil {
		return nil, nil, err
	}
	if err := e.count(tx, tenantID, now.Time, model.UsageDelta{Channel: ev.ChannelSelected, Priority: ev.Priority, EventStatus: ev.Status}); err != nil {
		return nil, nil, err
	}
	if err := e.publish(tx, tenantID, HookEventCreated, model.PermEventsRead, "", ev); err != nil {
		return nil, nil, err
	}
	return ev, cfg.tenant, nil
}

// Event returns one event of p's tenant.
func (e *Engine) Event(ctx context.Context, p model.Principal, id string) (*model.EventDetail, error) {
	var ev *model.Event
	err := e.store.View(ctx, func(tx model.Tx) (err error) {
		ev, err = tx.Event(p.TenantID, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	d := &model.EventDetail{Event: *ev}
	// The parsers are the binary's own, so the warnings are those the event was taken
	// with unless the node was upgraded since; a payload no parser takes has none to give.
	if parsed, err := payload.Parse(ev.Vertical, ev.Payload); err == nil {
		d.PayloadWarnings = parsed.Warnings
	}
	return d, nil
}

// Events lists p's tenant's events, newest first.
func (e *Engine) Events(ctx context.Context, p model.Principal, f model.EventFilter, pg model.Page) ([]model.Event, string, error) {
	if err := f.Validate(); err != nil {
		return nil, "", err
	}
	var out []model.Event
	var next string
	err := e.store.View(ctx, func(tx model.Tx) (err error) {
		out, next, err = tx.Events(p.TenantID, f, pg)
		return err
	})
	return out, next, err
}
