package engine_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store"
)

// TestDelivery_DiskFull: while the store refuses writes for want of space, the scheduler
// makes no call (an attempt is recorded before it is made) and does not spin: the message
// is due again after the attempt lease, not at once. Once space is back it is delivered.
func TestDelivery_DiskFull(t *testing.T) {
	var free atomic.Int64
	free.Store(1 << 30)
	db, err := store.Open(t.TempDir(), store.Options{Space: store.SpaceOptions{MinFree: 64 << 20, ProbeEvery: 1,
		Probe: func(string) (int64, error) { return free.Load(), nil }}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	clock := model.NewFakeClock(epoch)
	sender := newFakeSender(false)
	e := engine.New(db, engine.Options{Clock: clock, Sender: sender, Password: cheapPasswords, Logger: slog.New(slog.DiscardHandler)})
	ctx := context.Background()
	ct := MustCreateTenant(t, e, "acme")
	p := model.Principal{TenantID: ct.Tenant.ID, TenantActive: true, Role: model.RoleCompanyAdmin}
	if _, err := e.CreateWebhook(ctx, p, model.WebhookInput{URL: "https://hooks.example/a"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.IngestEvent(ctx, p, model.EventInput{Type: "FIRE", Priority: "high", Vertical: "emergency",
		IdempotencyKey: "k1"}, jsonRender(201)); err != nil {
		t.Fatal(err)
	}

	free.Store(1 << 20)
	_, err = e.IngestEvent(ctx, p, model.EventInput{Type: "FIRE", Priority: "high", Vertical: "emergency", IdempotencyKey: "k2"}, jsonRender(201))
	AssertKind(t, err, model.KindUnavailable)
	for range 3 {
		e.RunDue(ctx)
	}
	if n := len(sender.calls); n != 0 {
		t.Fatalf("%d calls made while no attempt could be recorded", n)
	}
	if n := e.ScheduledCount(); n != 1 {
		t.Fatalf("%d entries scheduled, want the one message, due again later", n)
	}
	clock.Advance(engine.DefaultAttemptLease / 2)
	if e.RunDue(ctx); len(sender.calls) != 0 {
		t.Fatal("the message was tried again before its lease ended")
	}

	free.Store(1 << 30)
	clock.Advance(engine.DefaultAttemptLease)
	e.RunDue(ctx)
	if got := sender.kinds(); len(got) != 1 || got[0] != "webhook" {
		t.Fatalf("event.created calls once space is back: %v, want one webhook", got)
	}
}
