package model

import (
	"encoding/json"
	"slices"
	"time"
)

// Event statuses (docs/rules.md, Events).
const (
	EventPending       = "pending"
	EventDelivered     = "delivered"
	EventFailed        = "failed"
	EventQueuedOffline = "queued_offline"
	EventClosed        = "closed"
)

// EventStatuses lists the event statuses (the CHECK of events.status on PostgreSQL
// follows it: store/postgres/checks_test.go).
var EventStatuses = []string{EventPending, EventDelivered, EventFailed, EventQueuedOffline, EventClosed}

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

// Event is the stored record of an event (docs/rules.md, Events; docs/openapi.yaml, Event).
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
	// DeviceCapturedAt is captured_at as the device's clock said it, when the node
	// corrected it by the device's clock offset (docs/decisions/0115-clock-drift.md).
	DeviceCapturedAt *Time   `json:"device_captured_at,omitempty"`
	Origin           *string `json:"origin"`
	CreatedAt        Time    `json:"created_at"`
	UpdatedAt        Time    `json:"updated_at"`
	DeliveredAt      *Time   `json:"delivered_at"`
	ClosedAt         *Time   `json:"closed_at"`
	// Disposition says how a supervisor closed the incident (POST /v1/events/{id}/close);
	// absent on an event its missions closed, or still open.
	Disposition *Disposition `json:"disposition,omitempty"`
	// Delivery is the state of the delivery engine for this event.
	Delivery DeliveryState `json:"delivery"`
}

// EventDetail is GET /v1/events/{id}: the record and the warnings the vertical's parser
// gives its payload today (docs/decisions/0119-console-views.md).
type EventDetail struct {
	Event
	PayloadWarnings []string `json:"payload_warnings,omitempty"`
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
	// DeviceCapturedAt is the device's own captured_at when CapturedAt was corrected.
	DeviceCapturedAt *Time `json:"-"`
}

// EventAccepted is the answer to an accepted event (docs/openapi.yaml, EventAccepted).
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

// EventFilter narrows GET /v1/events; zero fields do not filter.
type EventFilter struct {
	ZoneCode, Vertical, Status, Priority, Type, Origin string
	// Since and Until bound created_at (inclusive).
	Since, Until *time.Time
	// Open keeps the events that are not closed, listed in dispatcher order (priority,
	// then oldest first; OpenRank) from the stores' index of open events
	// (docs/decisions/0170-open-events.md).
	Open bool
	// Query keeps the events whose text holds every word of it (event_search.go;
	// docs/decisions/0171-event-search.md).
	Query string
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
	return validQuery(f.Query)
}

// Match reports whether ev passes the filter.
func (f EventFilter) Match(ev *Event) bool { return f.Matcher()(ev) }

// Matcher returns Match with the query's words read once, for a list that tests many
// events against one filter.
func (f EventFilter) Matcher() func(ev *Event) bool {
	words := QueryWords(f.Query)
	return func(ev *Event) bool { return f.matchFields(ev) && (len(words) == 0 || matchWords(ev, words)) }
}

// OpenRank is an event's place in the dispatcher order of open events: critical 0, high
// 1, normal 2, low 3, anything else 4; events of one rank are listed oldest first.
func OpenRank(priority string) byte {
	if i := slices.Index(Priorities, priority); i >= 0 {
		return byte(i)
	}
	return byte(len(Priorities))
}

func (f EventFilter) matchFields(ev *Event) bool {
	switch {
	case f.Open && ev.Status == EventClosed:
		return false
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
