package e2e

import (
	"fmt"
	"net/url"
	"testing"
)

// TestEvents_OpenAndSearchFindOldIncidents: an old open high event stays findable after 400
// newer ones (a 320-event sync batch and 80 POSTs): GET /v1/events?open=true&priority=high
// and ?q= find it on their first page, where the newest-first list of 300 does not hold it
// (docs/decisions/0170-open-events.md, docs/decisions/0171-event-search.md).
func TestEvents_OpenAndSearchFindOldIncidents(t *testing.T) {
	n := serveDemo(t, binary(t), t.TempDir())
	key := n.key()
	status, _, body := n.call(t, "POST", "/v1/events", map[string]any{"type": "GAS_LEAK", "priority": "high",
		"vertical": "emergency", "idempotency_key": "old-gas-leak",
		"payload": map[string]any{"description": "Gas leak in the bakery cellar", "address": "4 Quai Nord"}}, key...)
	expect(t, "POST the old event", status, 201, body)
	oldID := body["event_id"].(string)

	var items []map[string]any
	for i := range 320 {
		items = append(items, map[string]any{"type": "NOISE", "priority": "high", "vertical": "emergency",
			"idempotency_key": fmt.Sprintf("batch-%d", i), "payload": map[string]any{"description": "music too loud"}})
	}
	status, _, body = n.call(t, "POST", "/v1/sync/batch", map[string]any{"events": items, "device_id": "tablet-7",
		"captured_at": "2026-06-09T10:00:00Z"}, key...)
	expect(t, "POST /v1/sync/batch", status, 200, body)
	if body["accepted"].(float64) != 320 {
		t.Fatalf("sync batch: %v", body)
	}
	for i := range 80 {
		status, _, body = n.call(t, "POST", "/v1/events", map[string]any{"type": "NOISE", "priority": "high",
			"vertical": "emergency", "idempotency_key": fmt.Sprintf("api-%d", i), "payload": map[string]any{}}, key...)
		expect(t, "POST a newer event", status, 201, body)
	}

	reader := n.login(t, "operational_supervisor")
	page := func(query string) []any {
		t.Helper()
		status, _, body := n.call(t, "GET", "/v1/events?"+query, nil, reader...)
		expect(t, "GET /v1/events?"+query, status, 200, body)
		return body["data"].([]any)
	}
	holds := func(evs []any) int {
		for i, ev := range evs {
			if ev.(map[string]any)["event_id"] == oldID {
				return i
			}
		}
		return -1
	}
	if i := holds(page("limit=300")); i >= 0 {
		t.Fatalf("the newest 300 hold the old event at %d: the test does not reproduce the lost incident", i)
	}
	if i := holds(page("open=true&priority=high&limit=50")); i != 0 {
		t.Fatalf("open=true&priority=high: the old event is at %d of the first page; want first (oldest first)", i)
	}
	if i := holds(page("open=true&limit=50")); i != 0 {
		t.Fatalf("open=true: the old event is at %d of the first page; want first", i)
	}
	for _, q := range []string{"gas leak", "BAKERY", "quai nord", "old-gas"} {
		evs := page("q=" + url.QueryEscape(q) + "&limit=50")
		if holds(evs) < 0 || len(evs) != 1 {
			t.Fatalf("q=%s: %d events, old event at %d; want it alone", q, len(evs), holds(evs))
		}
	}
	if evs := page("q=tablet&open=true&priority=high&limit=50"); len(evs) != 50 || holds(evs) >= 0 {
		t.Fatalf("q=tablet (the batch's device) with open and priority: %d events, old at %d; want a full page of the batch", len(evs), holds(evs))
	}
	status, _, body = n.call(t, "GET", "/v1/events?q=--", nil, reader...)
	expect(t, "GET /v1/events?q=--", status, 400, body)
	status, _, body = n.call(t, "GET", "/v1/events?open=yes", nil, reader...)
	expect(t, "GET /v1/events?open=yes", status, 400, body)
}
