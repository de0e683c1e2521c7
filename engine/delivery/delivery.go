// Package delivery is the outbox of a node and what delivers it: the scheduler that holds
// the due entries in a heap and hands them to a pool of workers (scheduler.go), the
// attempt of each entry (a webhook call, an SMS, an account mail, a reinforcement check)
// and the writing of its outcome: the attempt log, the retries, the subscription's health,
// the SMS record (attempt.go, sms.go).
//
// A Scheduler is built from its parts (Parts): the store, the clock, the sender, and what
// the attempts need of the engine's use cases as functions (a reinforcement check, an
// account mail, the event's delivery, the mission's notification, the usage counters). It
// never sees the engine: engine/layering_test.go holds it.
package delivery

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// DefaultRetrySchedule is the delay before each retry of a message after its first try
// (docs/rules.md, Webhooks).
var DefaultRetrySchedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute,
	2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// Webhook subscription statuses.
const (
	WebhookActive   = "active"
	WebhookDisabled = "disabled"
)

// HookEventCreated names the message of a new event: a subscription that wants it is a
// way out for the events that wait for one.
const HookEventCreated = "event.created"

// HookWebhookTest names the message of POST /v1/webhooks/:id/test. It goes to the one
// subscription asked, whatever its events filter, so it is no name to subscribe to.
const HookWebhookTest = "webhook.test"

// Auto-disable rule: a subscription with no success for this long and at least this many
// failed messages is disabled.
const (
	WebhookDisableAfter    = 5 * 24 * time.Hour
	WebhookDisableMessages = 10
)

// Tx is what delivery reads and writes of a transaction itself: the outbox, the webhook
// subscriptions and their attempt log, the SMS records. The engine's functions it calls
// (Parts) get the transaction as the store gave it.
type Tx interface {
	model.TxCommit
	OutboxEntry(tenantID, id string) (*model.OutboxEntry, error)
	PutOutboxEntry(o *model.OutboxEntry) error
	DeleteOutboxEntry(tenantID, id string) error
	DueOutbox() ([]model.OutboxRef, error)
	DueOutboxBefore(until time.Time, limit int) ([]model.OutboxRef, error)
	Webhook(tenantID, id string) (*model.Webhook, error)
	PutWebhook(tenantID string, w *model.Webhook) error
	PutDeliveryAttempt(tenantID string, a *model.DeliveryAttempt) error
	PutSMSOutbound(tenantID string, m *model.SMSOutbound) error
	SMSOutbound(tenantID, id string) (*model.SMSOutbound, error)
	CountSMSSentTo(tenantID, to string, since time.Time) (int, error)
}

var _ Tx = model.Tx(nil)

// Mail is the account mail of the outbox (model.OutboxMail): Prepare issues, within tx,
// the token an entry sends (nil when its user is gone: nothing to send); Send mails it,
// outside any transaction.
type Mail interface {
	Prepare(tx model.Tx, o *model.OutboxEntry) (*model.IssuedToken, error)
	Send(ctx context.Context, t *model.IssuedToken) model.SendResult
}

// Parts are what a Scheduler is built from.
type Parts struct {
	// Store is the engine's store (with its pre-commit hooks); Shared says other
	// processes share it: entries leased by other runs are theirs until the lease ends,
	// and the outbox is polled (model.SharedStore).
	Store  model.Store
	Shared bool
	Clock  model.Clock
	Log    *slog.Logger
	// Sender makes the webhook and SMS calls.
	Sender model.Sender
	// Retry is the delay before each retry (DefaultRetrySchedule when empty); Lease how
	// long an attempt in flight holds its message (DefaultAttemptLease when zero); RunID
	// names this run in the leases; Workers bounds the calls made at once.
	Retry   []time.Duration
	Lease   time.Duration
	RunID   string
	Workers int
	// NewID makes the time-ordered id of an attempt record.
	NewID func(at time.Time) string
	// Full reports whether the store refuses writes (a full disk); nil: never.
	Full func() bool
	// Held runs after the commit of an SMS held back by its recipient's rate limit.
	Held func()

	// Mail prepares and sends the account mail of the outbox.
	Mail Mail
	// Reinforce runs the reinforcement check of a mission (model.OutboxReinforce) at the
	// time the scheduler says it is.
	Reinforce func(tx model.Tx, tenantID, missionID string, at time.Time) error
	// Overdue runs the on-site check of an acknowledged mission (model.OutboxOverdue) at
	// the time the scheduler says it is.
	Overdue func(tx model.Tx, tenantID, missionID string, at time.Time) error
	// MissionSent records that the notification of a team, o, arrived: the mission is
	// SENT.
	MissionSent func(tx model.Tx, o *model.OutboxEntry) error
	// Settled moves the delivery of the event of a message that delivers one
	// (OutboxEntry.Delivers): ok says the call succeeded, settled that the message ended.
	Settled func(tx model.Tx, o *model.OutboxEntry, ok, settled bool) error
	// Count adds to the usage counters of a tenant within tx.
	Count func(tx model.TxCommit, tenantID string, at time.Time, d model.UsageDelta) error
}

const statAttempts = 2 * 2 // kind × outcome

// countAttempt counts a delivery call's outcome.
func (s *Scheduler) countAttempt(kind string, ok bool) {
	k := slices.Index(model.StatAttemptKinds, kind)
	if k < 0 {
		return
	}
	o := 1
	if ok {
		o = 0
	}
	s.attempts[k*2+o].Add(1)
}

// Attempts counts the delivery calls made since start, by kind (Label1: webhook, sms) and
// outcome (Label2), for /metrics.
func (s *Scheduler) Attempts() []model.LabeledCount {
	var out []model.LabeledCount
	for ki, k := range model.StatAttemptKinds {
		for oi, o := range model.StatAttemptOutcome {
			out = append(out, model.LabeledCount{Label1: k, Label2: o, N: s.attempts[ki*2+oi].Load()})
		}
	}
	return out
}

// Lag is how late the scheduler started its latest attempt.
func (s *Scheduler) Lag() time.Duration { return time.Duration(s.lagNanos.Load()) }

// Enqueue writes o into the outbox and hands it to the scheduler once tx commits.
func (s *Scheduler) Enqueue(tx Tx, o *model.OutboxEntry) error {
	if err := tx.PutOutboxEntry(o); err != nil {
		return err
	}
	if o.Kind == model.OutboxSMS && o.Attempts == 0 {
		if err := newSMSRecord(tx, o); err != nil {
			return err
		}
	}
	// The delay is read now, when the due time was decided, not after the commit: a step
	// of the wall clock meanwhile does not move it.
	ref := model.OutboxRef{TenantID: o.TenantID, ID: o.ID, DueAt: o.DueAt.Time}
	at := s.monoDue(o.DueAt.Time)
	tx.OnCommit(func() { s.addAt(ref, at) })
	return nil
}
