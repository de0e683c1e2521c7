package engine

import (
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/usage"
)

// Stats is a snapshot of the node's statistics for /metrics. Counters count since the
// process started; nothing in it names a tenant.
type Stats struct {
	// EventsAccepted counts events accepted, by channel_selected (Label1); each event
	// counts once, whatever it becomes.
	EventsAccepted []model.LabeledCount
	// EventsSettled counts events that reached a delivery outcome, by that status
	// (Label1: delivered, failed); each event counts at most once.
	EventsSettled []model.LabeledCount
	// MissionMoves counts missions moved into each state (Label1), CREATED by dispatch.
	MissionMoves []model.LabeledCount
	// Attempts counts delivery calls by kind (webhook, sms) and outcome.
	Attempts []model.LabeledCount
	// WebhookFailures counts webhook messages that ended without success.
	WebhookFailures uint64
	// SMSSent counts the segments of the SMS the gateway accepted.
	SMSSent uint64
	// SMSHeld counts SMS held back by their recipient's rate limit.
	SMSHeld uint64
	// SMSGateway is the SMS gateway's reachability (up, down, unknown); empty without one.
	SMSGateway string
	// OutboxDepth is the number of outbox entries waiting; OutboxOldestDue how long the
	// most overdue one has been due (0 when none is due).
	OutboxDepth     int
	OutboxOldestDue time.Duration
	// SchedulerLag is how late the scheduler started its latest attempt.
	SchedulerLag     time.Duration
	SchedulerRunning bool
	// Store describes the store, when it can (StatsStore).
	Store *model.StoreStats
	// Space is the free space of the store's disk, when it watches it (SpaceStore).
	Space *model.Space
	// Upstream describes the upstream links.
	Upstream *model.UpstreamStats
	// NotificationsUp says whether the notifications of the other processes reach this
	// one, when the store has them (model.NotifyingStore).
	NotificationsUp *bool
}

// Stats returns a snapshot of the node's statistics.
func (e *Engine) Stats() Stats {
	c := usage.CountsOf(e.Counter)
	out := Stats{EventsAccepted: c.EventsAccepted, EventsSettled: c.EventsSettled, MissionMoves: c.MissionMoves,
		WebhookFailures: c.WebhookFailures, SMSSent: c.SMSSent, SMSHeld: c.SMSHeld}
	out.Attempts = e.sched.Attempts()
	out.SMSGateway = e.SMSGatewayState()
	out.OutboxDepth, out.OutboxOldestDue = e.sched.Oldest()
	out.SchedulerLag = e.sched.Lag()
	out.SchedulerRunning = e.SchedulerRunning()
	out.Upstream = e.up.Stats()
	if ss, ok := e.base.(model.StatsStore); ok {
		st := ss.Stats()
		out.Store = &st
	}
	if sp, ok := e.Space(); ok {
		out.Space = &sp
	}
	if down, ok := e.Notifications(); ok {
		up := down == ""
		out.NotificationsUp = &up
	}
	return out
}
