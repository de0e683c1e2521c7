package e2e

import (
	"encoding/json"
	"testing"
	"time"
)

// TestSync_BatchThroughBinary: through the binary, a device's API key posts a batch of
// events captured offline (one of them invalid, one a repeat), reads the batch's status and
// finds the accepted events in the list with their batch, device and capture time; the
// same batch sent again creates nothing.
// It runs on both stores (eachStore).
func TestSync_BatchThroughBinary(t *testing.T) {
	bin := binary(t)
	eachStore(t, func(t *testing.T, st nodeStore) { syncBatch(t, bin, st) })
}

func syncBatch(t *testing.T, bin string, store nodeStore) {
	var created struct {
		APIKey string `json:"api_key"`
	}
	out := store.cli(t, bin, "", "tenant", "create", "--name", "Acme Rescue", "--slug", "acme",
		"--email", "ops@acme.example", "--country", "fr", "--json")
	if err := json.Unmarshal(out, &created); err != nil {
		t.Fatalf("tenant create: %v %s", err, out)
	}
	// A key for the devices: sync:write only.
	var dev struct {
		APIKey string `json:"api_key"`
	}
	out = store.cli(t, bin, "", "apikey", "create", "--tenant", "acme", "--name", "tablets",
		"--scopes", "sync:write", "--json")
	if err := json.Unmarshal(out, &dev); err != nil || dev.APIKey == "" {
		t.Fatalf("apikey create: %v %s", err, out)
	}
	s := store.serve(t, bin, false)
	key := []string{"x-svc-api-key", created.APIKey}
	devKey := []string{"x-svc-api-key", dev.APIKey}

	captured := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	own := captured.Add(-10 * time.Minute)
	batch := map[string]any{"device_id": "tablet-7", "captured_at": captured.Format(time.RFC3339Nano), "events": []any{
		map[string]any{"type": "FLOOD", "vertical": "emergency", "idempotency_key": "e2e-sync-1",
			"payload": map[string]any{"severity": "high"}},
		map[string]any{"type": "FLOOD", "vertical": "emergency", "idempotency_key": "e2e-sync-2", "priority": "critical",
			"captured_at": own.Format(time.RFC3339Nano)},
		map[string]any{"type": "FLOOD", "vertical": "mining", "idempotency_key": "e2e-sync-3"},
		map[string]any{"type": "FLOOD", "vertical": "emergency", "idempotency_key": "e2e-sync-1"},
	}}
	status, _, body := s.call(t, "POST", "/v1/sync/batch", batch, devKey...)
	expect(t, "sync batch", status, 200, body)
	if body["accepted"] != 3.0 || body["rejected"] != 1.0 || body["batch_id"] == nil {
		t.Fatalf("batch answer: %v", body)
	}
	batchID := body["batch_id"].(string)

	status, _, body = s.call(t, "GET", "/v1/sync/status?batch_id="+batchID, nil, devKey...)
	expect(t, "sync status", status, 200, body)
	items, _ := body["items"].([]any)
	if body["batch_id"] != batchID || body["device_id"] != "tablet-7" || len(items) != 4 {
		t.Fatalf("status: %v", body)
	}
	want := []string{"accepted", "accepted", "rejected", "duplicate"}
	for i, it := range items {
		if st := it.(map[string]any)["status"]; st != want[i] {
			t.Fatalf("item %d is %v, want %s: %v", i, st, want[i], body)
		}
	}

	status, _, body = s.call(t, "GET", "/v1/events?limit=50", nil, key...)
	expect(t, "list events", status, 200, body)
	got := map[string]map[string]any{}
	for _, it := range body["data"].([]any) {
		ev := it.(map[string]any)
		got[ev["idempotency_key"].(string)] = ev
	}
	if len(got) != 2 || got["e2e-sync-3"] != nil {
		t.Fatalf("events: %v", body)
	}
	for k, ev := range got {
		if ev["source"] != "sync_batch" || ev["batch_id"] != batchID || ev["device_id"] != "tablet-7" {
			t.Fatalf("event %s: %v", k, ev)
		}
	}
	if got["e2e-sync-1"]["captured_at"] != captured.Format("2006-01-02T15:04:05.000Z") ||
		got["e2e-sync-2"]["captured_at"] != own.Format("2006-01-02T15:04:05.000Z") || got["e2e-sync-1"]["priority"] != "normal" {
		t.Fatalf("captured_at or priority not kept: %v", got)
	}

	// The same batch again: a new batch, the same counts, nothing created.
	status, _, body = s.call(t, "POST", "/v1/sync/batch", batch, devKey...)
	expect(t, "sync batch again", status, 200, body)
	if body["accepted"] != 3.0 || body["rejected"] != 1.0 || body["batch_id"] == batchID {
		t.Fatalf("resent batch: %v", body)
	}
	status, _, body = s.call(t, "GET", "/v1/events?limit=50", nil, key...)
	expect(t, "list events again", status, 200, body)
	if body["count"] != 2.0 {
		t.Fatalf("a resent batch created events: %v", body)
	}
}
