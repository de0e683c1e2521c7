package delivery

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/smscodec"
)

// attempt makes one attempt of an outbox entry: it records the attempt (and a lease that
// makes it due again should the node die mid-call; a webhook call on a store the node has
// alone only reads the entry) and makes the call outside any transaction. It returns the
// outcome of the call, which the caller writes back (writeOutcome); nil when there is none
// to write (no call made, or the node is stopping). The writes go through the group
// commit, so the attempts of many workers share fsyncs; their functions may run more than
// once.
func (s *Scheduler) attempt(ctx context.Context, r dueRef) *outcome {
	var o *model.OutboxEntry
	var msg model.WebhookMessage
	var mail *model.IssuedToken // in memory only: never stored, never logged
	// prepare reads the entry and decides the attempt within tx. With record false it
	// writes nothing and answers errNeedsWrite when the attempt needs a write before its
	// call.
	prepare := func(tx model.Tx, record bool) error {
		o, mail = nil, nil
		entry, err := tx.OutboxEntry(r.TenantID, r.ID)
		if model.IsKind(err, model.KindNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		now := s.Clock.Now()
		// The heap said the entry is due, on the monotonic reading: the wall clock's now
		// may have stepped back since and read the entry's stored due time as ahead. Only
		// an entry whose stored due time moved from the one the heap waited for (leased or
		// rescheduled meanwhile) is judged by the wall clock.
		moved := !entry.DueAt.Equal(r.DueAt)
		if entry.DueAt.After(now) && (moved || s.Shared && entry.LeasedBy != "" && entry.LeasedBy != s.RunID) {
			if entry.LeasedBy == "" || entry.LeasedBy == s.RunID {
				if !record {
					return errNeedsWrite
				}
				ref := model.OutboxRef{TenantID: entry.TenantID, ID: entry.ID, DueAt: entry.DueAt.Time}
				tx.OnCommit(func() { s.add(ref) })
				return nil
			}
			if s.Shared {
				// Leased by another process's run until DueAt: its attempt is in flight.
				// Should that process die, a poll finds the entry once the lease ends.
				return nil
			}
			// Leased by an earlier run of this node, which died mid-call: retried now.
		}
		if !record && (entry.Kind != model.OutboxWebhook || entry.LeasedBy != "") {
			return errNeedsWrite
		}
		if entry.Kind == model.OutboxReinforce || entry.Kind == model.OutboxOverdue {
			// A check, not a call: it runs here, and its entry ends.
			// The check judges the mission at the wall time the scheduler's elapsed time
			// says it is: the due time it waited for and how late it runs.
			at := now
			if !moved {
				at = r.DueAt.Add(r.late)
			}
			check := s.Reinforce
			if entry.Kind == model.OutboxOverdue {
				check = s.Overdue
			}
			if err := check(tx, entry.TenantID, entry.MissionID, at); err != nil {
				return err
			}
			return tx.DeleteOutboxEntry(entry.TenantID, entry.ID)
		}
		if entry.Kind == model.OutboxWebhook {
			wh, err := tx.Webhook(entry.TenantID, entry.WebhookID)
			if err != nil && !model.IsKind(err, model.KindNotFound) {
				return err
			}
			if wh == nil || wh.Status != WebhookActive && entry.Name != HookWebhookTest {
				// The subscription is gone or disabled: the message fails now. A test
				// message still goes to a disabled one: checking it is its purpose.
				if !record {
					return errNeedsWrite
				}
				entry.Attempts++
				return s.settle(tx, entry, model.SendResult{Err: errors.New("the subscription is deleted or disabled")}, 0, true)
			}
			msg = model.WebhookMessage{URL: wh.URL, ID: entry.ID, Timestamp: now, Secret: wh.Secret, Body: entry.Body}
		}
		if entry.Kind == model.OutboxSMS {
			held, err := smsHold(tx, entry, now)
			if err != nil {
				return err
			}
			if held != nil {
				// The recipient's rate limit: the message ends now, without a call.
				entry.Attempts++
				if s.Held != nil {
					tx.OnCommit(s.Held)
				}
				return s.settle(tx, entry, model.SendResult{Err: held}, 0, true)
			}
		}
		if entry.Kind == model.OutboxMail {
			if mail, err = s.Mail.Prepare(tx, entry); err != nil {
				return err
			}
			if mail == nil { // the user is gone: nothing to send
				return tx.DeleteOutboxEntry(entry.TenantID, entry.ID)
			}
		}
		entry.Attempts++
		entry.DueAt = model.At(now.Add(s.Lease))
		o = entry
		if !record {
			return nil
		}
		entry.LeasedBy = s.RunID
		return tx.PutOutboxEntry(entry)
	}
	// On a store the node has alone, a webhook call needs no record before it: should the
	// node die mid-call, the entry is still due in the store and its next run makes the
	// call again at once, as a lease would have it (docs/decisions/0129-delivery-rate.md).
	// A read then spares the call a commit. While the store refuses writes
	// (a full disk), the record is tried first, so that no call is made whose outcome
	// cannot be written.
	err := errNeedsWrite
	if !s.Shared && (s.Full == nil || !s.Full()) {
		err = s.Store.View(ctx, func(tx model.Tx) error { return prepare(tx, false) })
	}
	if errors.Is(err, errNeedsWrite) {
		err = s.Store.Batch(ctx, r.TenantID, func(tx model.Tx) error { return prepare(tx, true) })
	}
	if err != nil {
		s.Log.Error("outbox: recording an attempt", "tenant", r.TenantID, "entry", r.ID, "err", err)
		s.add(model.OutboxRef{TenantID: r.TenantID, ID: r.ID, DueAt: s.Clock.Now().Add(s.Lease)})
		return nil
	}
	if o == nil {
		return nil
	}
	// The call is timed through the engine's clock: the system clock's monotonic reading
	// in a node, a fake clock that the test's sender moves in tests.
	var res model.SendResult
	start := s.Clock.Now()
	switch o.Kind {
	case model.OutboxWebhook:
		res = s.Sender.SendWebhook(ctx, msg)
	case model.OutboxSMS:
		res = s.Sender.SendSMS(ctx, model.OutboundSMS{TenantID: o.TenantID, ID: o.ID, To: o.To, Body: o.Text})
	case model.OutboxMail:
		res = s.Mail.Send(ctx, mail)
	}
	took := s.Clock.Now().Sub(start)
	if ctx.Err() != nil && !succeeded(o, res) {
		return nil // shutting down: the lease makes it due again after restart
	}
	s.countAttempt(o.Kind, succeeded(o, res))
	if o.Kind == model.OutboxSMS && res.MessageID != "" {
		s.Log.Info("outbox: the SMS gateway accepted a message", "tenant", o.TenantID, "entry", o.ID,
			"attempt", o.Attempts, "gateway_message_id", res.MessageID)
	}
	return &outcome{o: o, res: res, took: took}
}

// outcome is the outcome of an attempt's call, not yet written: the entry as the attempt
// recorded it (or read it, when it recorded nothing), the call's result and how long the
// call took.
type outcome struct {
	o    *model.OutboxEntry
	res  model.SendResult
	took time.Duration
}

// writeOutcome writes an attempt's outcome back through the group commit. Until it is
// committed the entry is still due in the store, as the attempt found it (or leased):
// should the node die first, the message is sent again, with the same webhook-id
// (docs/decisions/0250-outcomes-written-behind.md).
func (s *Scheduler) writeOutcome(ctx context.Context, oc *outcome) {
	o, res, took := oc.o, oc.res, oc.took
	stale := false
	err := s.recordOutcome(ctx, o.TenantID, func(tx model.Tx) error {
		stale = false
		entry, err := tx.OutboxEntry(o.TenantID, o.ID)
		if model.IsKind(err, model.KindNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		recorded := o.Attempts // the attempt's record, or the entry as read when none was written
		if o.LeasedBy == "" {
			recorded--
		}
		if entry.LeasedBy != o.LeasedBy || entry.Attempts != recorded {
			// The lease ended before the call did and another run took the message
			// over: the outcome is that run's to write.
			stale = true
			return nil
		}
		entry.Attempts = o.Attempts
		return s.settle(tx, entry, res, took, false)
	})
	if stale {
		s.Log.Warn("outbox: an attempt outlived its lease; another run took the message over",
			"tenant", o.TenantID, "entry", o.ID, "attempt", o.Attempts)
	}
	if err != nil {
		// The attempt stays leased in the store: the call is made again when the lease
		// ends, with the same webhook-id.
		s.Log.Error("outbox: recording an outcome", "tenant", o.TenantID, "entry", o.ID, "err", err)
		s.add(model.OutboxRef{TenantID: o.TenantID, ID: o.ID, DueAt: o.DueAt.Time})
	}
}

// errNeedsWrite says an attempt needs a write before its call (attempt).
var errNeedsWrite = errors.New("the attempt needs a write before its call")

// outcomePauses are the pauses between the tries of writing an attempt's outcome. A call
// made is not made again for a transaction that failed: on a shared store, transactions
// that touch the same rows (a webhook's health, a day's usage) fail under contention
// after the store's own retries, and a later try usually succeeds.
var outcomePauses = []time.Duration{50 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond, time.Second}

// recordOutcome runs fn through the group commit, tried again after each of
// outcomePauses while it fails (without pauses once ctx ends: the node is stopping).
func (s *Scheduler) recordOutcome(ctx context.Context, tenantID string, fn func(model.Tx) error) error {
	for i := 0; ; i++ {
		err := s.Store.Batch(context.WithoutCancel(ctx), tenantID, fn)
		if err == nil || i == len(outcomePauses) {
			return err
		}
		s.Log.Warn("outbox: recording an outcome, trying again", "err", err)
		t := time.NewTimer(outcomePauses[i])
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// settle writes the outcome of an attempt: the attempt log of a webhook, the next due
// time or the end of the message, the subscription's health and the event's delivery.
// took is how long the call took (0 when none was made); final forces the message to end
// (its subscription is gone).
func (s *Scheduler) settle(tx model.Tx, o *model.OutboxEntry, res model.SendResult, took time.Duration, final bool) error {
	now := s.Clock.Now()
	ok := succeeded(o, res)
	o.LeasedBy = ""
	o.LastStatus = res.StatusCode
	o.LastError = ""
	if !ok {
		o.LastError = failureText(res)
	}
	settled := ok || final
	// A test message is a probe: one attempt, and no effect on the subscription's health
	// but the 410 that disables any subscription (docs/rules.md, Webhooks).
	probe := o.Name == HookWebhookTest
	var wh *model.Webhook
	if o.Kind == model.OutboxWebhook && !final {
		var err error
		if wh, err = tx.Webhook(o.TenantID, o.WebhookID); model.IsKind(err, model.KindNotFound) {
			wh, settled = nil, true
		} else if err != nil {
			return err
		}
	}
	if wh != nil && res.Gone() {
		wh.Status, wh.DisabledReason = WebhookDisabled, "the receiver answered 410 Gone"
		settled = true
	}
	if !settled && (probe || res.Permanent || o.Attempts > len(s.Retry)) {
		settled = true
	}
	var next *model.Time
	if !settled {
		delay := s.Retry[o.Attempts-1]
		if res.RetryAfter > delay {
			delay = res.RetryAfter
		}
		n := model.At(now.Add(delay))
		o.DueAt, next = n, &n
	}
	if wh != nil {
		at := model.At(now)
		write := (!probe || res.Gone()) && !quietHealth(wh, ok, settled, res, now)
		if !probe {
			if ok {
				wh.LastSuccessAt, wh.FailedMessages = &at, 0
			} else if settled {
				wh.FailedMessages++
				if wh.Status == WebhookActive && wh.FailedMessages >= WebhookDisableMessages && now.Sub(wh.FailingSince()) >= WebhookDisableAfter {
					wh.Status, wh.DisabledReason = WebhookDisabled, "no success for 5 days"
				}
			}
		}
		if write {
			wh.UpdatedAt = at
			if err := tx.PutWebhook(o.TenantID, wh); err != nil {
				return err
			}
		}
		status := "failed"
		if ok {
			status = "succeeded"
		}
		if err := tx.PutDeliveryAttempt(o.TenantID, &model.DeliveryAttempt{ID: s.NewID(at.Time), WebhookID: o.WebhookID,
			MessageID: o.ID, Event: o.Name, Attempt: o.Attempts, Status: status, StatusCode: res.StatusCode,
			Error: o.LastError, DurationMs: durationMs(took), At: at, NextAttemptAt: next}); err != nil {
			return err
		}
	}
	if settled {
		if err := tx.DeleteOutboxEntry(o.TenantID, o.ID); err != nil {
			return err
		}
	} else if err := s.Enqueue(tx, o); err != nil {
		return err
	}
	if o.Kind == model.OutboxSMS {
		if err := settleSMSRecord(tx, o, res, ok, settled, model.At(now)); err != nil {
			return err
		}
	}
	if err := s.Count(tx, o.TenantID, now, settledUsage(o, ok, settled)); err != nil {
		return err
	}
	if ok && o.MissionID != "" {
		// The team's notification arrived: the mission is SENT.
		if err := s.MissionSent(tx, o); err != nil {
			return err
		}
	}
	if o.Delivers() {
		return s.Settled(tx, o, ok, settled)
	}
	return nil
}

// webhookWriteEvery is how often, at most, the deliveries of one subscription rewrite it
// when only its times move (docs/decisions/0106-shared-outbox.md
// and docs/decisions/0129-delivery-rate.md).
const webhookWriteEvery = time.Second

// quietHealth reports whether an attempt's outcome leaves the subscription's record wh
// (read before settle changes it) as it is: an outcome that changes neither its status
// nor its failed messages (a success after a success, a failure that will be retried),
// within webhookWriteEvery of the time it would move (last_success_at for a success,
// updated_at for a failure). Every delivery to one subscription would otherwise write the
// same record: on a shared store the deliveries of all processes would wait on each
// other, and on any store each write costs the commit loop and makes every ingest reload
// the tenant's directory. A time ahead of now (the wall clock stepped back) is rewritten.
func quietHealth(wh *model.Webhook, ok, settled bool, res model.SendResult, now time.Time) bool {
	recent := func(t time.Time) bool { d := now.Sub(t); return d >= 0 && d < webhookWriteEvery }
	switch {
	case res.Gone():
		return false
	case ok:
		return wh.FailedMessages == 0 && wh.LastSuccessAt != nil && recent(wh.LastSuccessAt.Time)
	default:
		return !settled && recent(wh.UpdatedAt.Time)
	}
}

// succeeded reports whether an attempt's call succeeded: a 2xx answer, or a mail the
// Mailer took (a mail has no HTTP status).
func succeeded(o *model.OutboxEntry, res model.SendResult) bool {
	if o.Kind == model.OutboxMail {
		return res.Err == nil
	}
	return res.OK()
}

// settledUsage is what an attempt's outcome adds to usage: the segments of an SMS the
// gateway accepted, a webhook message that ended without success.
func settledUsage(o *model.OutboxEntry, ok, settled bool) model.UsageDelta {
	var d model.UsageDelta
	if ok && o.Kind == model.OutboxSMS {
		// Gateways bill per segment: a text longer than one SMS counts each part.
		_, n := smscodec.Segments(o.Text)
		d.SMS = uint64(n)
	}
	if !ok && settled && o.Kind == model.OutboxWebhook {
		d.WebhookFailed = 1
	}
	return d
}

// durationMs is a call's duration in whole milliseconds, rounded up: a call that took any
// time reads at least 1 ms, so a fast receiver is not shown as no call at all.
func durationMs(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// failureText describes a failed attempt for the logs and the attempt log.
func failureText(res model.SendResult) string {
	if res.Err != nil {
		return res.Err.Error()
	}
	msg := "the receiver answered HTTP " + strconv.Itoa(res.StatusCode)
	if res.Detail != "" {
		msg += ": " + res.Detail
	}
	if res.Permanent {
		msg += " (not retried: the gateway will never accept this message)"
	}
	return msg
}
