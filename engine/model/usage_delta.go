package model

// Names of the usage counters kept per tenant and per day (UTC) in the store.
const (
	UsageEventsByChannel  = "events.channel."  // + channel_selected, at acceptance
	UsageEventsByPriority = "events.priority." // + priority, at acceptance
	UsageEventsDelivered  = "events.delivered"
	UsageEventsFailed     = "events.failed"
	UsageDispatches       = "dispatches"
	UsageMissionsDone     = "missions_completed"
	UsageMissionsFailed   = "missions_failed"
	UsageSyncBatches      = "sync_batches"
	UsageAPIRequests      = "api_requests"
	UsageSMS              = "sms"
)

// dayLayout names a usage day.
const DayLayout = "2006-01-02"

// UsageDelta is what one piece of work adds to its tenant's usage. Each non-zero field is
// one counter (or two); the zero UsageDelta counts nothing.
type UsageDelta struct {
	// Channel and Priority count an accepted event (its channel_selected and priority);
	// EventStatus is its status then (pending or queued_offline). An event that reaches
	// delivered or failed is counted with its Channel and that EventStatus, no Priority.
	Channel, Priority, EventStatus string
	// MissionState counts a mission's move into that state: CREATED is a dispatch,
	// COMPLETED and FAILED end missions; the other states are only in /metrics.
	MissionState string
	// SyncBatches, APIRequests and SMS (segments of the messages the gateway accepted) add to their
	// counters.
	SyncBatches, APIRequests, SMS uint64
	// WebhookFailed counts webhook messages that ended without success (/metrics only).
	WebhookFailed uint64
}

// each calls fn for every stored counter the delta changes.
func (d *UsageDelta) Each(fn func(metric string, n uint64)) {
	if d.Priority != "" {
		fn(eventMetric(UsageEventsByChannel, d.Channel), 1)
		fn(eventMetric(UsageEventsByPriority, d.Priority), 1)
	}
	switch {
	case d.Priority != "":
	case d.EventStatus == EventDelivered:
		fn(UsageEventsDelivered, 1)
	case d.EventStatus == EventFailed:
		fn(UsageEventsFailed, 1)
	}
	switch d.MissionState {
	case MissionCreated:
		fn(UsageDispatches, 1)
	case MissionCompleted:
		fn(UsageMissionsDone, 1)
	case MissionFailed:
		fn(UsageMissionsFailed, 1)
	}
	if d.SyncBatches > 0 {
		fn(UsageSyncBatches, d.SyncBatches)
	}
	if d.APIRequests > 0 {
		fn(UsageAPIRequests, d.APIRequests)
	}
	if d.SMS > 0 {
		fn(UsageSMS, d.SMS)
	}
}

// eventMetrics holds the names of the event counters, made once.
var eventMetrics = func() map[string]string {
	m := map[string]string{}
	for _, v := range append(append([]string{}, StatChannels...), Priorities...) {
		m[UsageEventsByChannel+v] = UsageEventsByChannel + v
		m[UsageEventsByPriority+v] = UsageEventsByPriority + v
	}
	return m
}()

// eventMetric returns prefix+v without building it for the known channels and priorities.
func eventMetric(prefix, v string) string {
	var buf [64]byte
	if m, ok := eventMetrics[string(append(append(buf[:0], prefix...), v...))]; ok {
		return m
	}
	return prefix + v
}

// Indexes of the in-memory statistics.
var (
	StatChannels       = []string{ChannelREST, ChannelSMS, ChannelQueued}
	StatSettledStatus  = []string{EventDelivered, EventFailed}
	StatAttemptKinds   = []string{OutboxWebhook, OutboxSMS}
	StatAttemptOutcome = []string{"succeeded", "failed"}
)

// LabeledCount is one counter with up to two label values.
type LabeledCount struct {
	Label1, Label2 string
	N              uint64
}
