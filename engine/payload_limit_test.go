package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// payloadOf returns a JSON object of exactly size bytes.
func payloadOf(size int) json.RawMessage {
	return json.RawMessage(`{"note":"` + strings.Repeat("x", size-len(`{"note":""}`)) + `"}`)
}

// TestEventPayloadLimit: an event's payload holds at most engine.MaxPayloadBytes of JSON,
// in POST /v1/events, in a sync batch (the item is rejected, not the batch) and in a
// device sync (the item is rejected).
func TestEventPayloadLimit(t *testing.T) {
	ctx := context.Background()
	t.Run("Ingest", func(t *testing.T) {
		n := newDeliveryNode(t, false, false)
		ingest := func(key string, payload json.RawMessage) error {
			_, err := n.e.IngestEvent(ctx, n.p, model.EventInput{Type: "FIRE", Priority: "high", Vertical: "emergency",
				IdempotencyKey: key, Payload: payload}, jsonRender(201))
			return err
		}
		if err := ingest("at-limit", payloadOf(engine.MaxPayloadBytes)); err != nil {
			t.Fatalf("a payload of exactly the limit: %v", err)
		}
		e := AssertKind(t, ingest("over", payloadOf(engine.MaxPayloadBytes+1)), model.KindPayloadTooLarge)
		if e.Field != "payload" || !strings.Contains(e.Msg, "65536") {
			t.Fatalf("error %+v", e)
		}
		// The refused event left nothing behind: the key is free.
		if err := ingest("over", payloadOf(100)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("SyncBatchItem", func(t *testing.T) {
		n := newDeliveryNode(t, false, false)
		key := model.Principal{TenantID: n.p.TenantID, TenantActive: true, KeyID: model.NewID(),
			Scopes: []string{model.PermSyncWrite}}
		in := model.SyncBatchInput{CapturedAt: "2026-06-09T10:00:00Z", Events: []model.SyncItemInput{
			{Type: "FIRE", Vertical: "emergency", IdempotencyKey: "big", Payload: payloadOf(engine.MaxPayloadBytes + 1)},
			{Type: "FIRE", Vertical: "emergency", IdempotencyKey: "small", Payload: payloadOf(100)},
		}}
		reply, err := n.e.SyncBatch(ctx, key, in, nil, syncRender)
		if err != nil {
			t.Fatal(err)
		}
		var b model.Batch
		if err := json.Unmarshal(reply.Body, &b); err != nil {
			t.Fatal(err)
		}
		if b.Accepted != 1 || b.Rejected != 1 || b.Items[0].Error == nil || b.Items[0].Error.Code != model.KindPayloadTooLarge ||
			b.Items[0].Error.Field != "payload" || b.Items[1].Status != model.ItemAccepted {
			t.Fatalf("batch: %s", reply.Body)
		}
	})

	t.Run("DeviceSyncItem", func(t *testing.T) {
		f := newDeviceFix(t)
		dev := f.mustRegister(t, f.opA, model.DeviceInput{Name: "tablet", Platform: "android", TeamID: f.teamA.ID})
		event := func(key string, size int) map[string]any {
			return map[string]any{"type": "FIRE", "priority": "low", "vertical": "emergency", "idempotency_key": key,
				"payload": payloadOf(size)}
		}
		at := epoch.Add(-time.Minute)
		res := f.mustSync(t, f.opA, dev.ID, nil, item(1, "event", event("dev-big", engine.MaxPayloadBytes+1), at),
			item(2, "event", event("dev-small", 100), at))
		if r := res.Results[0]; r.Status != model.ItemRejected || r.Error != model.KindPayloadTooLarge || r.Field != "payload.payload" {
			t.Fatalf("big item: %+v", r)
		}
		if r := res.Results[1]; r.Status != model.ItemApplied {
			t.Fatalf("small item: %+v", r)
		}
	})
}
