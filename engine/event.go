package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Event statuses (INTERFACE.md, Event status; `closed` from API.md).
const (
	EventPending       = "pending"
	EventDelivered     = "delivered"
	EventFailed        = "failed"
	EventQueuedOffline = "queued_offline"
	EventClosed        = "closed"
)

// Channels of channel_selected.
const (
	ChannelREST   = "rest_full"
	ChannelSMS    = "sms"
	ChannelQueued = "queued_offline"
)

// Priorities, most urgent first.
const (
	PriorityCritical = "critical"
	PriorityHigh     = "high"
	PriorityNormal   = "normal"
	PriorityLow      = "low"
)

// Priorities lists the priorities, most urgent first.
var Priorities = []string{PriorityCritical, PriorityHigh, PriorityNormal, PriorityLow}

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
	// MaxPayloadBytes caps the JSON of an event's payload, as sent (docs/decisions.md,
	// "Event payloads are capped at 64 KiB"): a list of events stays a reasonable answer.
	MaxPayloadBytes = 64 << 10
	// MaxCaptureSkew is how far in the future a device clock may be.
	MaxCaptureSkew = 2 * time.Minute
)

// Event is the stored record of an event (API.md, Event record).
type Event struct {
	ID                string          `json:"event_id"`
	Type              string          `json:"type"`
	Priority          string          `json:"priority"`
	Vertical          string          `json:"vertical"`
	IdempotencyKey    string          `json:"idempotency_key"`
	Payload           json.RawMessage `json:"payload"`
	ZoneCode          *string         `json:"zone_code"`
	Lat               *float64        `json:"lat"`
	Lng               *float64        `json:"lng"`
	Severity          string          `json:"severity,omitempty"`
	RequiredEquipment []string        `json:"required_equipment,omitempty"`
	Status            string          `json:"status"`
	ChannelSelected   string          `json:"channel_selected"`
	ChannelsAttempted []string        `json:"channels_attempted"`
	Source            string          `json:"source"`
	BatchID           *string         `json:"batch_id"`
	DeviceID          *string         `json:"device_id"`
	CapturedAt        *Time           `json:"captured_at"`
	Origin            *string         `json:"origin"`
	CreatedAt         Time            `json:"created_at"`
	UpdatedAt         Time            `json:"updated_at"`
	DeliveredAt       *Time           `json:"delivered_at"`
	ClosedAt          *Time           `json:"closed_at"`
	// Delivery is the state of the delivery engine for this event.
	Delivery DeliveryState `json:"delivery"`
}

// DeliveryState tracks an event's way through its channels.
type DeliveryState struct {
	// Plan lists the channels the event may use, in order; Started of them have begun.
	Plan    []string `json:"plan"`
	Started int      `json:"started"`
	// Outstanding counts the delivery messages not yet settled.
	Outstanding int `json:"outstanding"`
}

// EventInput is the body of POST /v1/events, and an item of the other ways in.
type EventInput struct {
	Type           string          `json:"type"`
	Priority       string          `json:"priority"`
	Vertical       string          `json:"vertical"`
	IdempotencyKey string          `json:"idempotency_key"`
	Payload        json.RawMessage `json:"payload"`
	ZoneCode       string          `json:"zone_code"`

	// Set by the way the event came in, never by the body of POST /v1/events.
	Source     string `json:"-"`
	BatchID    string `json:"-"`
	DeviceID   string `json:"-"`
	CapturedAt *Time  `json:"-"`
}

// checkedEvent is an input that passed the checks that need no transaction.
type checkedEvent struct {
	in     EventInput
	parsed ParsedPayload
}

// checkEvent validates what can be validated without the store: required fields in the
// order of the contract, enums, lengths and the vertical's payload parser (which refuses
// only a payload that is not a JSON object, and warns about the fields it ignores).
func checkEvent(in EventInput, now time.Time) (*checkedEvent, error) {
	in.Type = strings.TrimSpace(in.Type)
	switch {
	case in.Type == "":
		return nil, Invalid("type", "type is required")
	case in.Priority == "":
		return nil, Invalid("priority", "priority is required")
	case in.Vertical == "":
		return nil, Invalid("vertical", "vertical is required")
	case in.IdempotencyKey == "":
		return nil, Invalid("idempotency_key", "idempotency_key is required")
	}
	if err := checkLength("type", in.Type, maxEventType); err != nil {
		return nil, err
	}
	if !slices.Contains(Priorities, in.Priority) {
		return nil, Invalid("priority", "priority must be one of critical, high, normal, low")
	}
	if err := ValidateIdempotencyKey("idempotency_key", in.IdempotencyKey); err != nil {
		return nil, err
	}
	if in.ZoneCode != "" && !ValidZoneCode(in.ZoneCode) {
		return nil, Invalid("zone_code", "zone_code %s is not a zone of this tenant", Quote(in.ZoneCode))
	}
	if p := bytes.TrimSpace(in.Payload); len(p) == 0 || bytes.Equal(p, []byte("null")) {
		in.Payload = nil
	}
	if len(in.Payload) > MaxPayloadBytes {
		return nil, payloadTooLarge(len(in.Payload))
	}
	if in.CapturedAt != nil && in.CapturedAt.Sub(now) > MaxCaptureSkew {
		return nil, Invalid("captured_at", "captured_at is more than 2 minutes in the future")
	}
	parsed, err := ParsePayload(in.Vertical, in.Payload)
	if err != nil {
		return nil, err
	}
	return &checkedEvent{in: in, parsed: parsed}, nil
}

// payloadTooLarge is the error of an event whose payload has more than MaxPayloadBytes of
// JSON: payload_too_large on the field payload, naming the limit.
func payloadTooLarge(size int) *Error {
	return &Error{Kind: KindPayloadTooLarge, Field: "payload", Msg: fmt.Sprintf(
		"payload is %d bytes of JSON; an event's payload holds at most %d bytes (64 KiB)", size, MaxPayloadBytes)}
}

// EventAccepted is the answer to an accepted event (INTERFACE.md, Event response).
type EventAccepted struct {
	EventID         string `json:"event_id"`
	Status          string `json:"status"`
	ChannelSelected string `json:"channel_selected"`
	CreatedAt       Time   `json:"created_at"`
	// Dispatch is set when auto-dispatch sent a team; RequiresManual when it found none.
	Dispatch       *AutoDispatch `json:"dispatch,omitempty"`
	RequiresManual bool          `json:"requires_manual,omitempty"`
	// PayloadWarnings name the payload fields the vertical's parser read in a form it
	// cannot use and ignored (ParsedPayload.Warnings); absent when there are none.
	PayloadWarnings []string `json:"payload_warnings,omitempty"`
}

// Render turns an accepted event into the stored reply of its idempotency key.
type Render func(v any) (Reply, error)

// IngestEvent accepts an event of p's tenant: one transaction, shared with other
// concurrent events (Store.Batch), that checks the event's idempotency_key, stores the
// event, plans its delivery into the outbox and stores the reply rendered by render. A
// repeated idempotency_key returns the original reply, whatever the second body says.
func (e *Engine) IngestEvent(ctx context.Context, p Principal, in EventInput, render Render) (Reply, error) {
	if in.IdempotencyKey != "" {
		if err := ValidateIdempotencyKey("idempotency_key", in.IdempotencyKey); err != nil {
			return Reply{}, err
		}
	}
	var out Reply
	ce, err := checkEvent(in, e.clock.Now())
	if err != nil {
		// A repeat is answered whatever its body says: the key names the logical event.
		verr := err
		err = e.store.View(ctx, func(tx Tx) error {
			rec, err := tx.EventReply(p.TenantID, in.IdempotencyKey)
			if rec != nil {
				out, out.Replayed = rec.Reply, true
			}
			return err
		})
		if err == nil && !out.Replayed {
			err = verr
		}
		return out, err
	}
	err = e.store.Batch(ctx, func(tx Tx) error {
		out = Reply{}
		rec, err := tx.EventReply(p.TenantID, in.IdempotencyKey)
		if err != nil {
			return err
		}
		if rec != nil {
			out, out.Replayed = rec.Reply, true
			return nil
		}
		ev, tenant, err := e.createEvent(tx, p.TenantID, ce)
		if err != nil {
			return err
		}
		auto, manual, err := e.autoDispatch(tx, p.TenantID, tenant, ev)
		if err != nil {
			return err
		}
		if out, err = render(EventAccepted{EventID: ev.ID, Status: ev.Status, ChannelSelected: ev.ChannelSelected,
			CreatedAt: ev.CreatedAt, Dispatch: auto, RequiresManual: manual, PayloadWarnings: ce.parsed.Warnings}); err != nil {
			return err
		}
		return tx.PutEventReply(p.TenantID, in.IdempotencyKey, &IdempotencyRecord{Reply: out, CreatedAt: ev.CreatedAt})
	})
	return out, err
}

// createEvent stores a checked event and plans its delivery, within tx. It also answers
// the tenant (shared, read-only).
func (e *Engine) createEvent(tx Tx, tenantID string, ce *checkedEvent) (*Event, *Tenant, error) {
	cfg, err := e.tenantConfig(tx, tenantID)
	if err != nil {
		return nil, nil, err
	}
	return e.createEventIn(tx, tenantID, cfg, ce)
}

// createEventIn is createEvent with the tenant's configuration already read: a use case
// that creates many events in one transaction reads it once.
func (e *Engine) createEventIn(tx Tx, tenantID string, cfg *tenantConfig, ce *checkedEvent) (*Event, *Tenant, error) {
	in := ce.in
	if !cfg.tenant.HasVertical(in.Vertical) {
		return nil, nil, Invalid("vertical", "vertical %s is not enabled for this tenant", Quote(in.Vertical))
	}
	now := At(e.clock.Now())
	ev := &Event{ID: NewIDAt(now.Time), Type: in.Type, Priority: in.Priority, Vertical: in.Vertical,
		IdempotencyKey: in.IdempotencyKey, Payload: in.Payload, Lat: ce.parsed.Lat, Lng: ce.parsed.Lng,
		Severity: ce.parsed.Severity, RequiredEquipment: ce.parsed.RequiredEquipment,
		Source: in.Source, CapturedAt: in.CapturedAt, CreatedAt: now, UpdatedAt: now,
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
	var zone *Zone
	switch {
	case in.ZoneCode != "":
		if zone = cfg.zone(in.ZoneCode); zone == nil {
			return nil, nil, Invalid("zone_code", "zone_code %s is not a zone of this tenant", Quote(in.ZoneCode))
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
	if err := e.count(tx, tenantID, now.Time, UsageDelta{Channel: ev.ChannelSelected, Priority: ev.Priority, EventStatus: ev.Status}); err != nil {
		return nil, nil, err
	}
	if err := e.publish(tx, tenantID, HookEventCreated, PermEventsRead, "", ev); err != nil {
		return nil, nil, err
	}
	return ev, cfg.tenant, nil
}

// Event returns one event of p's tenant.
func (e *Engine) Event(ctx context.Context, p Principal, id string) (*Event, error) {
	var ev *Event
	err := e.store.View(ctx, func(tx Tx) (err error) {
		ev, err = tx.Event(p.TenantID, id)
		return err
	})
	return ev, err
}

// EventFilter narrows GET /v1/events; zero fields do not filter.
type EventFilter struct {
	ZoneCode, Vertical, Status, Priority, Type, Origin string
	// Since and Until bound created_at (inclusive).
	Since, Until *time.Time
}

// Validate checks the enum filters.
func (f EventFilter) Validate() error {
	if f.Status != "" && !slices.Contains([]string{EventPending, EventDelivered, EventFailed, EventQueuedOffline, EventClosed}, f.Status) {
		return Invalid("status", "status must be one of pending, delivered, failed, queued_offline, closed")
	}
	if f.Priority != "" && !slices.Contains(Priorities, f.Priority) {
		return Invalid("priority", "priority must be one of critical, high, normal, low")
	}
	if f.Since != nil && f.Until != nil && f.Until.Before(*f.Since) {
		return Invalid("until", "until is before since")
	}
	return nil
}

// Match reports whether ev passes the filter.
func (f EventFilter) Match(ev *Event) bool {
	switch {
	case f.ZoneCode != "" && (ev.ZoneCode == nil || *ev.ZoneCode != f.ZoneCode),
		f.Vertical != "" && ev.Vertical != f.Vertical,
		f.Status != "" && ev.Status != f.Status,
		f.Priority != "" && ev.Priority != f.Priority,
		f.Type != "" && ev.Type != f.Type,
		f.Origin != "" && (ev.Origin == nil || *ev.Origin != f.Origin),
		f.Since != nil && ev.CreatedAt.Before(*f.Since),
		f.Until != nil && ev.CreatedAt.After(*f.Until):
		return false
	}
	return true
}

// Events lists p's tenant's events, newest first.
func (e *Engine) Events(ctx context.Context, p Principal, f EventFilter, pg Page) ([]Event, string, error) {
	if err := f.Validate(); err != nil {
		return nil, "", err
	}
	var out []Event
	var next string
	err := e.store.View(ctx, func(tx Tx) (err error) {
		out, next, err = tx.Events(p.TenantID, f, pg)
		return err
	})
	return out, next, err
}
