package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store"
)

// syncRender renders replies as plain JSON.
var syncRender = model.SyncRender{
	Batch: func(v any) (model.Reply, error) {
		b, err := json.Marshal(v)
		return model.Reply{Status: 200, Body: b}, err
	},
	Event: func(v any) (model.Reply, error) {
		b, err := json.Marshal(v)
		return model.Reply{Status: 201, Body: b}, err
	},
}

// failingStore is a real store whose transactions refuse to store the event of one
// idempotency_key, as a rule met only after the event's outbox entries were written would.
type failingStore struct {
	*store.DB
	key string
}

func (s failingStore) Batch(ctx context.Context, tenantID string, fn func(model.Tx) error) error {
	return s.DB.Batch(ctx, tenantID, func(tx model.Tx) error { return fn(failingTx{tx, s.key}) })
}

type failingTx struct {
	model.Tx
	key string
}

func (t failingTx) PutEvent(tenantID string, ev *model.Event) error {
	if ev.IdempotencyKey == t.key {
		return model.Invalid("payload", "refused by the test store")
	}
	return t.Tx.PutEvent(tenantID, ev)
}

// TestSyncBatch_ItemFailingAfterWrites: an item that fails only once it has written (here
// its webhook message) is rejected alone and leaves nothing behind; its siblings are
// accepted.
func TestSyncBatch_ItemFailingAfterWrites(t *testing.T) {
	e := engine.New(failingStore{MustOpenDB(t), "bad"}, engine.Options{Clock: model.NewFakeClock(epoch),
		Password: cheapPasswords, Logger: slog.New(slog.DiscardHandler)})
	ct := MustCreateTenant(t, e, "acme")
	mustDo(t, func() error {
		_, err := e.CreateWebhook(context.Background(), adminOf(ct.Tenant, model.NewID()), model.WebhookInput{URL: "https://hooks.example/a"}, nil)
		return err
	})
	key := model.Principal{TenantID: ct.Tenant.ID, TenantActive: true, KeyID: model.NewID(),
		Scopes: []string{model.PermSyncWrite}}
	in := model.SyncBatchInput{CapturedAt: "2026-06-09T10:00:00Z", Events: []model.SyncItemInput{
		{Type: "FIRE", Vertical: "emergency", IdempotencyKey: "good-1"},
		{Type: "FIRE", Vertical: "emergency", IdempotencyKey: "bad"},
		{Type: "FIRE", Vertical: "emergency", IdempotencyKey: "good-2"},
	}}
	reply, err := e.SyncBatch(context.Background(), key, in, nil, syncRender)
	if err != nil {
		t.Fatal(err)
	}
	var b model.Batch
	if err := json.Unmarshal(reply.Body, &b); err != nil {
		t.Fatal(err)
	}
	if b.Accepted != 2 || b.Rejected != 1 || b.Items[1].Status != model.ItemRejected || b.Items[1].Error == nil ||
		b.Items[1].Error.Field != "payload" || b.Items[0].Status != model.ItemAccepted || b.Items[2].Status != model.ItemAccepted {
		t.Fatalf("batch: %s", reply.Body)
	}
	good := map[string]bool{*b.Items[0].EventID: true, *b.Items[2].EventID: true}
	delivered, processed := 0, 0
	MustUpdate(t, e, func(tx model.Tx) error {
		refs, err := tx.DueOutbox()
		if err != nil {
			return err
		}
		for _, r := range refs {
			o, err := tx.OutboxEntry(r.TenantID, r.ID)
			if err != nil {
				return err
			}
			switch {
			case o.EventID != "" && !good[o.EventID]:
				t.Errorf("an outbox entry of the rejected item was kept: %+v", o)
			case o.EventID != "":
				delivered++
			case o.Name == engine.HookSyncBatchProcessed:
				processed++
			}
		}
		if rec, err := tx.EventReply(ct.Tenant.ID, "bad"); err != nil || rec != nil {
			t.Errorf("the rejected item's key names an event: %v %v", rec, err)
		}
		return nil
	})
	if delivered != 2 || processed != 1 {
		t.Fatalf("%d event messages (want 2), %d sync.batch_processed (want 1)", delivered, processed)
	}
}

// TestSyncBatch_UserTokenRefused: the use case itself refuses a user, whatever its role.
func TestSyncBatch_UserTokenRefused(t *testing.T) {
	n := newDeliveryNode(t, false, false)
	in := model.SyncBatchInput{CapturedAt: "2026-06-09T10:00:00Z", Events: []model.SyncItemInput{
		{Type: "FIRE", Vertical: "emergency", IdempotencyKey: "u-1"}}}
	_, err := n.e.SyncBatch(context.Background(), n.p, in, nil, syncRender)
	AssertKind(t, err, model.KindAPIKeyRequired)
}

// TestSyncBatch_ConfigReadOnce: a batch reads its tenant's configuration once, also when
// the cache is stale (a zone was just made): each item read it again before, until the
// transaction committed (four statements an item, round trips on PostgreSQL).
func TestSyncBatch_ConfigReadOnce(t *testing.T) {
	cs := &countingStore{Store: MustOpenDB(t)}
	e := engine.New(cs, engine.Options{Clock: model.NewFakeClock(epoch), Password: cheapPasswords,
		Logger: slog.New(slog.DiscardHandler)})
	ct := MustCreateTenant(t, e, "acme")
	mustDo(t, func() error {
		_, err := e.CreateZone(context.Background(), tenantAdmin(ct.Tenant.ID), model.ZoneInput{Code: "north", Name: "North",
			Boundary: polygon(square(4, 45, 1))}, nil)
		return err
	})
	key := model.Principal{TenantID: ct.Tenant.ID, TenantActive: true, KeyID: model.NewID(),
		Scopes: []string{model.PermSyncWrite}}
	in := model.SyncBatchInput{CapturedAt: "2026-06-09T10:00:00Z"}
	for i := range 5 {
		in.Events = append(in.Events, model.SyncItemInput{Type: "FIRE", Vertical: "emergency", ZoneCode: "north",
			IdempotencyKey: fmt.Sprintf("k%d", i)})
	}
	cs.mu.Lock()
	cs.zones = 0
	cs.mu.Unlock()
	reply, err := e.SyncBatch(context.Background(), key, in, nil, syncRender)
	if err != nil {
		t.Fatal(err)
	}
	var b model.Batch
	if err := json.Unmarshal(reply.Body, &b); err != nil || b.Accepted != 5 {
		t.Fatalf("batch: %s (%v)", reply.Body, err)
	}
	if cs.zones != 1 {
		t.Errorf("a batch of 5 events read the tenant's zones %d times, want once", cs.zones)
	}
}
