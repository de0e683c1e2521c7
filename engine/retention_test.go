package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/writes"
	"github.com/fieldrelay/fieldrelay/store"
)

// TestSweepRetention: with a fake clock, the sweep deletes exactly the sync batch records
// and webhook attempts older than each tenant's retention (its own over the node's
// default), in transactions of at most the batch size; events, usage and billing are
// the same after it.
func TestSweepRetention(t *testing.T) {
	clock := model.NewFakeClock(epoch)
	e := engine.New(MustOpenDB(t), engine.Options{Clock: clock, Password: cheapPasswords, Logger: slog.New(slog.DiscardHandler),
		Retention: model.Retention{SyncBatchesDays: 30, DeliveryLogDays: 30}, RetentionBatch: 3})
	ctx := context.Background()
	a, b := MustCreateTenant(t, e, "alpha").Tenant, MustCreateTenant(t, e, "bravo").Tenant
	keyOf := func(tn *model.Tenant) model.Principal {
		return model.Principal{TenantID: tn.ID, TenantActive: true, KeyID: model.NewID(), Scopes: []string{model.PermSyncWrite}}
	}
	batch := func(tn *model.Tenant, name string) string {
		t.Helper()
		in := model.SyncBatchInput{CapturedAt: clock.Now().UTC().Format(time.RFC3339), Events: []model.SyncItemInput{
			{Type: "FIRE", Vertical: "emergency", IdempotencyKey: name}}}
		reply, err := e.SyncBatch(ctx, keyOf(tn), in, nil, syncRender)
		if err != nil {
			t.Fatal(err)
		}
		var sb model.Batch
		if err := json.Unmarshal(reply.Body, &sb); err != nil || sb.Accepted != 1 {
			t.Fatalf("batch %s: %v %s", name, err, reply.Body)
		}
		return sb.ID
	}
	wh := model.NewID()
	attempt := func(tn *model.Tenant) string {
		id := model.NewIDAt(clock.Now())
		MustUpdate(t, e, func(tx model.Tx) error {
			return tx.PutDeliveryAttempt(tn.ID, &model.DeliveryAttempt{ID: id, WebhookID: wh, Status: "failed", At: model.At(clock.Now())})
		})
		return id
	}
	// Day 0: seven batches and attempts in each tenant; day 20: five more; then day 35.
	var oldA, newA, oldB, newB, newAttA []string
	for i := range 7 {
		oldA, oldB = append(oldA, batch(a, fmt.Sprintf("a-old-%d", i))), append(oldB, batch(b, fmt.Sprintf("b-old-%d", i)))
		attempt(a)
	}
	clock.Advance(20 * 24 * time.Hour)
	for i := range 5 {
		newA, newB = append(newA, batch(a, fmt.Sprintf("a-new-%d", i))), append(newB, batch(b, fmt.Sprintf("b-new-%d", i)))
		newAttA = append(newAttA, attempt(a))
	}
	clock.Advance(15 * 24 * time.Hour)
	// Bravo keeps its batches 10 days only.
	set, err := e.UpdateRetention(ctx, adminOf(b, model.NewID()), model.RetentionInput{SyncBatchesDays: ptr(10)}, nil)
	if err != nil || set.Tenant.SyncBatchesDays != 10 || set.Effective != (model.Retention{SyncBatchesDays: 10, DeliveryLogDays: 30}) {
		t.Fatalf("UpdateRetention: %+v %v", set, err)
	}
	_, err = e.UpdateRetention(ctx, adminOf(b, model.NewID()), model.RetentionInput{DeliveryLogDays: ptr(-1)}, nil)
	AssertInvalid(t, err, "delivery_log_days")

	q := model.UsageQuery{Period: model.PeriodDay, From: epoch.Format(model.DayLayout), To: clock.Now().Format(model.DayLayout)}
	usage := func(tn *model.Tenant) (*model.UsageReport, *model.Billing) {
		u, err := e.Usage(ctx, adminOf(tn, model.NewID()), q)
		if err != nil {
			t.Fatal(err)
		}
		bl, err := e.Billing(ctx, adminOf(tn, model.NewID()))
		if err != nil {
			t.Fatal(err)
		}
		return u, bl
	}
	usageA, billA := usage(a)
	usageB, billB := usage(b)

	rep, err := e.SweepRetention(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.SyncBatches != 7+12 || rep.DeliveryAttempts != 7 || rep.MostPerTx != 3 {
		t.Fatalf("sweep: %+v, want 19 batches, 7 attempts, at most 3 per transaction", rep)
	}
	// Alpha's 7 batches and 7 attempts in 3 transactions each (3, 3, 1), bravo's 12 batches
	// in 5 (3, 3, 3, 3, 0) and its attempts (none) in 1.
	if rep.Transactions != 3+3+5+1 {
		t.Fatalf("sweep in %d transactions, want 12", rep.Transactions)
	}
	status := func(tn *model.Tenant, ids []string, kept bool) {
		t.Helper()
		for _, id := range ids {
			_, err := e.SyncStatus(ctx, keyOf(tn), id)
			if kept && err != nil {
				t.Fatalf("batch %s (kept) after the sweep: %v", id, err)
			} else if !kept {
				AssertKind(t, err, model.KindNotFound)
			}
		}
	}
	status(a, oldA, false)
	status(a, newA, true)
	status(b, append(oldB, newB...), false)
	err = e.View(ctx, func(tx model.Tx) error {
		list, _, err := tx.DeliveryAttempts(a.ID, wh, model.Page{})
		var got []string
		for _, at := range list {
			got = append(got, at.ID)
		}
		if err != nil || !reflect.DeepEqual(sorted(got), sorted(newAttA)) {
			t.Fatalf("attempts after the sweep: %v %v, want the recent ones %v", got, err, newAttA)
		}
		for _, tn := range []*model.Tenant{a, b} {
			events, _, err := tx.Events(tn.ID, model.EventFilter{}, model.Page{})
			if err != nil || len(events) != 12 {
				t.Fatalf("events after the sweep: %d %v, want all 12", len(events), err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tn   *model.Tenant
		u    *model.UsageReport
		bill *model.Billing
	}{{a, usageA, billA}, {b, usageB, billB}} {
		u, bl := usage(c.tn)
		if !reflect.DeepEqual(u, c.u) || !reflect.DeepEqual(bl, c.bill) {
			t.Fatalf("usage or billing changed by the sweep:\n%+v\n%+v\n%+v\n%+v", c.u, u, c.bill, bl)
		}
	}
	// A second sweep finds nothing.
	if rep, err := e.SweepRetention(ctx); err != nil || rep.SyncBatches+rep.DeliveryAttempts != 0 {
		t.Fatalf("second sweep: %+v %v", rep, err)
	}
}

// TestSweepRetention_Events: settled events past their retention are pruned with their
// idempotency replies, batch by batch; an event still pending, with a message outstanding
// or with a mission stays, as does every event of a tenant that owes its upstream changes,
// until the upstream has acknowledged them. Billing reads the ledger, which stays.
func TestSweepRetention_Events(t *testing.T) {
	clock := model.NewFakeClock(epoch)
	db := MustOpenDB(t)
	e := engine.New(db, engine.Options{Clock: clock, Password: cheapPasswords, Logger: slog.New(slog.DiscardHandler),
		Retention: model.Retention{EventsDays: 400}, RetentionBatch: 3})
	ctx := context.Background()
	a, b := MustCreateTenant(t, e, "alpha").Tenant, MustCreateTenant(t, e, "bravo").Tenant
	// Bravo syncs upstream: its writes go to its change log.
	MustUpdate(t, e, func(tx model.Tx) error {
		return tx.PutUpstream(&model.UpstreamConfig{TenantID: b.ID, URL: "https://central.example", CreatedAt: model.At(clock.Now())})
	})
	put := func(tn *model.Tenant, i int, edit func(*model.Event)) *model.Event {
		now := model.At(clock.Now())
		ev := &model.Event{ID: model.NewIDAt(now.Time), Type: "FIRE", Priority: "low", Vertical: "emergency",
			IdempotencyKey: fmt.Sprintf("%s-%d", tn.Slug, i), Status: model.EventClosed, ChannelSelected: "rest_full",
			Source: "api", CreatedAt: now, UpdatedAt: now, ClosedAt: &now}
		if edit != nil {
			edit(ev)
		}
		MustUpdate(t, e, func(tx model.Tx) error {
			if err := tx.PutEvent(tn.ID, ev); err != nil {
				return err
			}
			writes.Changed(tx, tn.ID, model.ChangeEvent, ev.ID) // as the use cases do
			return tx.PutEventReply(tn.ID, ev.IdempotencyKey, &model.IdempotencyRecord{Reply: model.Reply{Status: 201,
				Body: []byte(`{"event_id":"` + ev.ID + `"}`)}, CreatedAt: now})
		})
		return ev
	}
	var prunable, kept []*model.Event
	for i := range 7 {
		prunable = append(prunable, put(a, i, nil))
	}
	outstanding := put(a, 11, func(ev *model.Event) { ev.Delivery.Outstanding = 1 })
	MustUpdate(t, e, func(tx model.Tx) error { // the message it waits for
		return tx.PutOutboxEntry(&model.OutboxEntry{ID: model.NewID(), TenantID: a.ID, Kind: model.OutboxWebhook,
			WebhookID: model.NewID(), Name: "event.created", EventID: outstanding.ID, Channel: "rest_full",
			DueAt: model.At(clock.Now().Add(1000 * 24 * time.Hour))})
	})
	// Open events stay whatever their age: pending, and settled but not closed
	// (docs/decisions/0170-open-events.md).
	kept = append(kept, put(a, 10, func(ev *model.Event) { ev.Status, ev.ClosedAt = model.EventPending, nil }), outstanding,
		put(a, 13, func(ev *model.Event) { ev.Status, ev.ClosedAt = model.EventDelivered, nil }),
		put(a, 14, func(ev *model.Event) { ev.Status, ev.ClosedAt = model.EventFailed, nil }))
	withMission := put(a, 12, nil)
	MustUpdate(t, e, func(tx model.Tx) error {
		m := &model.Mission{ID: model.NewIDAt(clock.Now()), EventID: withMission.ID, TeamID: model.NewID(),
			Status: model.MissionCompleted, CreatedAt: model.At(clock.Now()), UpdatedAt: model.At(clock.Now())}
		if err := tx.PutMission(a.ID, m); err != nil {
			return err
		}
		writes.Changed(tx, a.ID, model.ChangeMission, m.ID)
		return tx.PutLedgerEntry(a.ID, &model.LedgerEntry{ID: model.NewIDAt(clock.Now()), Kind: "dispatch", EventID: withMission.ID,
			At: model.At(clock.Now())})
	})
	kept = append(kept, withMission)
	owed := []*model.Event{put(b, 0, nil), put(b, 1, nil)}
	clock.Advance(300 * 24 * time.Hour)
	kept = append(kept, put(a, 20, nil)) // recent
	clock.Advance(101 * 24 * time.Hour)
	billing := func() *model.Billing {
		bl, err := e.Billing(ctx, adminOf(a, model.NewID()))
		if err != nil {
			t.Fatal(err)
		}
		return bl
	}
	before := billing()

	rep, err := e.SweepRetention(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Events != len(prunable) || rep.Deferred != 1 || rep.MostPerTx > 3 {
		t.Fatalf("sweep: %+v, want %d events, bravo deferred, at most 3 per transaction", rep, len(prunable))
	}
	state := func(tn *model.Tenant, evs []*model.Event, present bool) {
		t.Helper()
		err := e.View(ctx, func(tx model.Tx) error {
			for _, ev := range evs {
				_, err := tx.Event(tn.ID, ev.ID)
				reply, rerr := tx.EventReply(tn.ID, ev.IdempotencyKey)
				if rerr != nil {
					return rerr
				}
				if present && (err != nil || reply == nil) || !present && (!model.IsKind(err, model.KindNotFound) || reply != nil) {
					t.Fatalf("event %s (%s): %v, reply %v; want present %v", ev.IdempotencyKey, ev.Status, err, reply, present)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	state(a, prunable, false)
	state(a, kept, true)
	state(b, owed, true)
	if after := billing(); !reflect.DeepEqual(after, before) {
		t.Fatalf("billing changed by the sweep:\n%+v\n%+v", before, after)
	}

	// The upstream acknowledges bravo's changes: its old events go at the next sweep.
	MustUpdate(t, e, func(tx model.Tx) error {
		cfg, err := tx.Upstream(b.ID)
		if err != nil {
			return err
		}
		if cfg.AckedThrough, err = tx.ChangeLogEnd(b.ID); err != nil || cfg.AckedThrough == 0 {
			return fmt.Errorf("bravo's change log: %d %v", cfg.AckedThrough, err)
		}
		return tx.PutUpstream(cfg)
	})
	if rep, err := e.SweepRetention(ctx); err != nil || rep.Events != len(owed) || rep.Deferred != 0 {
		t.Fatalf("sweep after the acknowledgement: %+v %v", rep, err)
	}
	state(b, owed, false)

	// Missions go only when the tenant asks; then the event of a completed one follows.
	set, err := e.UpdateRetention(ctx, adminOf(a, model.NewID()), model.RetentionInput{MissionsDays: ptr(365)}, nil)
	if err != nil || set.Effective.MissionsDays != 365 {
		t.Fatalf("UpdateRetention: %+v %v", set, err)
	}
	if rep, err := e.SweepRetention(ctx); err != nil || rep.Missions != 1 || rep.Events != 1 {
		t.Fatalf("sweep with missions_days: %+v %v, want the mission and its event", rep, err)
	}
	state(a, []*model.Event{withMission}, false)
	err = e.View(ctx, func(tx model.Tx) error {
		if ms, err := tx.MissionsOfEvent(a.ID, withMission.ID); err != nil || len(ms) != 0 {
			t.Fatalf("missions of the event after the sweep: %v %v", ms, err)
		}
		n, err := tx.LedgerCount(a.ID, "dispatch", epoch.Add(-time.Hour), clock.Now())
		if err != nil || n != 1 {
			t.Fatalf("ledger after the sweep: %d %v, want the entry kept", n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if after := billing(); !reflect.DeepEqual(after, before) {
		t.Fatalf("billing changed by the mission sweep:\n%+v\n%+v", before, after)
	}
	if report, err := db.Check(); err != nil || !report.OK {
		t.Fatalf("check after the sweeps: %v\n%s", err, store.FormatCheck(report))
	}
}
