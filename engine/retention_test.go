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
