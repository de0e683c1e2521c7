package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// batchCaptured is the captured_at of the test batches: an hour before the node's clock.
const batchCaptured = "2026-06-09T09:11:12.345Z"

// syncItem is a valid item of a sync batch.
func syncItem(key string) map[string]any {
	return map[string]any{"type": "FIRE_ALARM", "vertical": "emergency", "idempotency_key": key,
		"payload": map[string]any{"severity": "high"}}
}

// syncBatch is a batch body holding items.
func syncBatch(items ...any) map[string]any {
	return map[string]any{"device_id": "tablet-7", "captured_at": batchCaptured, "events": items}
}

// keyWith creates an API key of the tenant holding only scopes.
func (n *node) keyWith(f *tenantFix, scopes ...string) string {
	n.t.Helper()
	var key string
	err := func() error {
		nk, err := n.eng.AdminCreateAPIKey(context.Background(), f.tenant.Slug, model.CreateAPIKeyInput{Name: "scoped", Scopes: scopes})
		if err != nil {
			return err
		}
		key = nk.APIKey
		return nil
	}()
	if err != nil {
		n.t.Fatal(err)
	}
	return key
}

// batchItems returns the items of a batch answer.
func (r *response) batchItems() []map[string]any {
	var out []map[string]any
	for _, it := range r.body["items"].([]any) {
		out = append(out, it.(map[string]any))
	}
	return out
}

// wantCounts checks accepted and rejected.
func (r *response) wantCounts(accepted, rejected int) *response {
	r.t.Helper()
	if r.num("accepted") != float64(accepted) || r.num("rejected") != float64(rejected) || r.str("batch_id") == "" {
		r.t.Fatalf("want %d accepted, %d rejected: %s", accepted, rejected, r.raw)
	}
	return r
}

// eventsOf lists the tenant's events by idempotency_key.
func (n *node) eventsOf(key []string) map[string]map[string]any {
	n.t.Helper()
	out := map[string]map[string]any{}
	for _, it := range n.do("GET", "/v1/events?limit=500", nil, key...).want(http.StatusOK).items() {
		out[it["idempotency_key"].(string)] = it
	}
	return out
}

func TestSyncBatch_Auth(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	body := syncBatch(syncItem("auth-1"))

	t.Run("JWTIsAPIKeyRequired", func(t *testing.T) {
		n := n.on(t)
		for _, role := range []string{"company_admin", "company_tech"} {
			n.do("POST", "/v1/sync/batch", body, "Authorization", n.login(f.emails[role])).
				wantErr(http.StatusForbidden, "api_key_required")
		}
	})

	t.Run("KeyWithoutSyncWriteIsForbidden", func(t *testing.T) {
		n := n.on(t)
		n.do("POST", "/v1/sync/batch", body, "x-svc-api-key", n.keyWith(f, "events:write", "events:read")).
			wantErr(http.StatusForbidden, "forbidden")
	})

	t.Run("KeyWithSyncWriteOnly", func(t *testing.T) {
		n := n.on(t)
		n.do("POST", "/v1/sync/batch", body, "x-svc-api-key", n.keyWith(f, "sync:write")).want(http.StatusOK).wantCounts(1, 0)
	})

	t.Run("NoCredentials", func(t *testing.T) {
		n := n.on(t)
		n.do("POST", "/v1/sync/batch", body).wantErr(http.StatusUnauthorized, "unauthorized")
	})
}

func TestSyncBatch_Limits(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	key := []string{"x-svc-api-key", f.key}

	t.Run("EmptyAndMissing", func(t *testing.T) {
		n := n.on(t)
		n.do("POST", "/v1/sync/batch", syncBatch(), key...).wantErr(http.StatusBadRequest, "validation_error", "events")
		n.do("POST", "/v1/sync/batch", map[string]any{"captured_at": batchCaptured}, key...).
			wantErr(http.StatusBadRequest, "validation_error", "events")
		n.do("POST", "/v1/sync/batch", map[string]any{"events": []any{syncItem("m-1")}}, key...).
			wantErr(http.StatusBadRequest, "validation_error", "captured_at")
		n.do("POST", "/v1/sync/batch", map[string]any{"events": []any{syncItem("m-2")}, "captured_at": "yesterday"}, key...).
			wantErr(http.StatusBadRequest, "validation_error", "captured_at")
		n.do("POST", "/v1/sync/batch", map[string]any{"events": "all of them", "captured_at": batchCaptured}, key...).
			wantErr(http.StatusBadRequest, "validation_error", "events")
		n.do("POST", "/v1/sync/batch", map[string]any{"events": []any{syncItem("m-3")}, "captured_at": batchCaptured,
			"device_id": strings.Repeat("d", 256)}, key...).wantErr(http.StatusBadRequest, "validation_error", "device_id")
		n.do("POST", "/v1/sync/batch", `{"events": [`, key...).wantErr(http.StatusBadRequest, "invalid_json")
		if len(n.eventsOf(key)) != 0 {
			t.Fatal("a refused batch stored events")
		}
	})

	t.Run("TooManyItems", func(t *testing.T) {
		n := n.on(t)
		items := make([]any, 1001)
		for i := range items {
			items[i] = syncItem(fmt.Sprintf("many-%d", i))
		}
		res := n.do("POST", "/v1/sync/batch", syncBatch(items...), key...).wantErr(http.StatusRequestEntityTooLarge, "payload_too_large")
		if msg := res.str("message"); !strings.Contains(msg, "1000") || !strings.Contains(msg, "8 MiB") {
			t.Fatalf("message does not name both limits: %q", msg)
		}
		if len(n.eventsOf(key)) != 0 {
			t.Fatal("a refused batch stored events")
		}
		n.do("POST", "/v1/sync/batch", syncBatch(items[:1000]...), key...).want(http.StatusOK).wantCounts(1000, 0)
	})

	t.Run("BodyOver8MiB", func(t *testing.T) {
		pad := strings.Repeat("x", 9<<20)
		body := `{"captured_at":"` + batchCaptured + `","events":[{"type":"X","vertical":"gov","idempotency_key":"big","payload":{"note":"` + pad + `"}}]}`
		req := httptest.NewRequest("POST", "/v1/sync/batch", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-svc-api-key", f.key)
		w := httptest.NewRecorder()
		n.handler(t).ServeHTTP(w, req)
		var res struct{ Error, Message string }
		_ = json.Unmarshal(w.Body.Bytes(), &res)
		if w.Code != http.StatusRequestEntityTooLarge || res.Error != "payload_too_large" ||
			!strings.Contains(res.Message, "1000") || !strings.Contains(res.Message, "8 MiB") {
			t.Fatalf("status %d: %s", w.Code, w.Body.String())
		}
	})
}

func TestSyncBatch_Items(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	key := []string{"x-svc-api-key", f.key}
	n.do("POST", "/v1/zones", zoneBody("PAR"), key...).want(http.StatusCreated)
	future := n.clock.Now().Add(3 * time.Minute).UTC().Format(time.RFC3339)
	nearFuture := n.clock.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	ownCapture := "2026-06-09T08:00:00.5+02:00" // 06:00:00.500Z

	with := func(k string, kv ...any) map[string]any {
		it := syncItem(k)
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(it, kv[i].(string))
			} else {
				it[kv[i].(string)] = kv[i+1]
			}
		}
		return it
	}
	items := []any{
		with("ok-plain"),                                   // 0
		with("bad-no-type", "type", nil),                   // 1
		with("ok-critical", "priority", "critical"),        // 2
		with("bad-type-int", "type", 7),                    // 3
		with("bad-priority", "priority", "urgent"),         // 4
		with("ok-zone", "zone_code", "PAR"),                // 5
		with("bad-zone", "zone_code", "nowhere"),           // 6
		with("bad-vertical", "vertical", "mining"),         // 7
		with("ok-own-capture", "captured_at", ownCapture),  // 8
		with("bad-future", "captured_at", future),          // 9
		with("ok-near-future", "captured_at", nearFuture),  // 10
		with("bad-capture", "captured_at", "last tuesday"), // 11
		"not an object",                          // 12
		with("bad-payload", "payload", []int{1}), // 13
		with("ok-bad-lat", "payload", map[string]any{"lat": 91, "lng": 2}), // 14: accepted, lat ignored
		with("", "idempotency_key", nil),                                   // 15
		with("bad-key-int", "idempotency_key", 12),                         // 16
	}
	wantField := map[int]string{1: "type", 3: "type", 4: "priority", 6: "zone_code", 7: "vertical", 9: "captured_at",
		11: "captured_at", 12: "", 13: "payload", 15: "idempotency_key", 16: "idempotency_key"}
	res := n.do("POST", "/v1/sync/batch", syncBatch(items...), key...).want(http.StatusOK).wantCounts(6, 11)
	batchID := res.str("batch_id")
	got := res.batchItems()
	if len(got) != len(items) {
		t.Fatalf("%d item results for %d items: %s", len(got), len(items), res.raw)
	}
	for i, it := range got {
		if it["index"] != float64(i) {
			t.Fatalf("item %d: index %v", i, it["index"])
		}
		field, bad := wantField[i]
		if !bad {
			if it["status"] != "accepted" || it["event_id"] == nil || it["error"] != nil {
				t.Fatalf("item %d: %v", i, it)
			}
			// Only the item with a payload field in a form the parser cannot use has warnings.
			w, _ := it["payload_warnings"].([]any)
			if _, has := it["payload_warnings"]; has != (i == 14) || i == 14 && (len(w) != 1 || !strings.HasPrefix(w[0].(string), "payload.lat ")) {
				t.Fatalf("item %d: payload_warnings %v", i, it["payload_warnings"])
			}
			continue
		}
		e, _ := it["error"].(map[string]any)
		if it["status"] != "rejected" || it["event_id"] != nil || e == nil || e["code"] != "validation_error" || e["message"] == "" {
			t.Fatalf("item %d: %v", i, it)
		}
		if got, _ := e["field"].(string); got != field {
			t.Fatalf("item %d: field %q, want %q: %v", i, got, field, e)
		}
	}

	events := n.eventsOf(key)
	if len(events) != 6 {
		t.Fatalf("%d events stored, want 6", len(events))
	}
	if ev := events["ok-bad-lat"]; ev["lat"] != nil || ev["zone_code"] != nil {
		t.Fatalf("an ignored latitude was used: %v", ev)
	}
	// The warnings are kept: in the batch's status, and in the item's event reply.
	status := n.do("GET", "/v1/sync/status?batch_id="+batchID, nil, key...).want(http.StatusOK)
	if w, _ := status.batchItems()[14]["payload_warnings"].([]any); len(w) != 1 {
		t.Fatalf("sync status item 14: %v", status.batchItems()[14])
	}
	replay := n.do("POST", "/v1/events", map[string]any{"type": "X", "priority": "low", "vertical": "gov",
		"idempotency_key": "ok-bad-lat"}, key...).want(http.StatusCreated)
	if w, _ := replay.body["payload_warnings"].([]any); len(w) != 1 || replay.str("event_id") != got[14]["event_id"] {
		t.Fatalf("reply of the item's idempotency_key: %s", replay.raw)
	}
	for k, ev := range events {
		if !strings.HasPrefix(k, "ok-") || ev["source"] != "sync_batch" || ev["batch_id"] != batchID || ev["device_id"] != "tablet-7" {
			t.Fatalf("event %s: %v", k, ev)
		}
	}
	if c := events["ok-plain"]["captured_at"]; c != batchCaptured {
		t.Fatalf("the batch's captured_at is not kept: %v", c)
	}
	if c := events["ok-own-capture"]["captured_at"]; c != "2026-06-09T06:00:00.500Z" {
		t.Fatalf("the item's captured_at does not win: %v", c)
	}
	if p := events["ok-plain"]["priority"]; p != "normal" {
		t.Fatalf("default priority: %v", p)
	}
	if p := events["ok-critical"]["priority"]; p != "critical" {
		t.Fatalf("priority: %v", p)
	}
	if z := events["ok-zone"]["zone_code"]; z != "PAR" {
		t.Fatalf("zone: %v", z)
	}

	t.Run("FutureBatchCapture", func(t *testing.T) {
		n := n.on(t)
		b := syncBatch(syncItem("fb-1"), with("fb-2", "captured_at", batchCaptured))
		b["captured_at"] = future
		res := n.do("POST", "/v1/sync/batch", b, key...).want(http.StatusOK).wantCounts(1, 1)
		if it := res.batchItems()[0]; it["status"] != "rejected" || it["error"].(map[string]any)["field"] != "captured_at" {
			t.Fatalf("an item inheriting a future captured_at: %v", it)
		}
	})
}

func TestSyncBatch_Duplicates(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	key := []string{"x-svc-api-key", f.key}

	first := n.do("POST", "/v1/sync/batch", syncBatch(syncItem("d-1"), syncItem("d-2"), syncItem("d-1"),
		map[string]any{"type": "X"}), key...).want(http.StatusOK).wantCounts(3, 1)
	items := first.batchItems()
	if items[0]["status"] != "accepted" || items[2]["status"] != "duplicate" || items[2]["event_id"] != items[0]["event_id"] {
		t.Fatalf("duplicate within the batch: %s", first.raw)
	}
	if first.num("duplicates") != 1 {
		t.Fatalf("duplicates: %s", first.raw)
	}

	t.Run("ResendSameCounts", func(t *testing.T) {
		n := n.on(t)
		again := n.do("POST", "/v1/sync/batch", syncBatch(syncItem("d-1"), syncItem("d-2"), syncItem("d-1"),
			map[string]any{"type": "X"}), key...).want(http.StatusOK).wantCounts(3, 1)
		if again.str("batch_id") == first.str("batch_id") || again.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("a resend without Idempotency-Key must be a new batch: %s", again.raw)
		}
		for i, it := range again.batchItems() {
			want := "duplicate"
			if i == 3 {
				want = "rejected"
			}
			if it["status"] != want || (i < 3 && it["event_id"] != items[i]["event_id"]) {
				t.Fatalf("item %d of the resend: %v", i, it)
			}
		}
		if len(n.eventsOf(key)) != 2 {
			t.Fatal("a resend created events")
		}
	})

	t.Run("SharedWithPostEvents", func(t *testing.T) {
		n := n.on(t)
		posted := n.do("POST", "/v1/events", eventBody("d-api"), key...).want(http.StatusCreated)
		res := n.do("POST", "/v1/sync/batch", syncBatch(syncItem("d-api")), key...).want(http.StatusOK).wantCounts(1, 0)
		if it := res.batchItems()[0]; it["status"] != "duplicate" || it["event_id"] != posted.str("event_id") {
			t.Fatalf("an item repeating a POST /v1/events key: %v", it)
		}
		// A key first seen in a batch answers POST /v1/events with its original event.
		replay := n.do("POST", "/v1/events", eventBody("d-2"), key...).want(http.StatusCreated)
		if replay.str("event_id") != items[1]["event_id"] || replay.header.Get("Idempotent-Replayed") != "true" ||
			replay.str("request_id") != first.str("request_id") {
			t.Fatalf("POST /v1/events after a batch: %s", replay.raw)
		}
	})

	t.Run("DuplicateWhateverItsBody", func(t *testing.T) {
		n := n.on(t)
		res := n.do("POST", "/v1/sync/batch", syncBatch(map[string]any{"idempotency_key": "d-1", "priority": "urgent"}),
			key...).want(http.StatusOK).wantCounts(1, 0)
		if it := res.batchItems()[0]; it["status"] != "duplicate" || it["event_id"] != items[0]["event_id"] {
			t.Fatalf("an invalid repeat of a known key: %v", it)
		}
	})
}

func TestSyncBatch_IdempotencyKey(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	key := []string{"x-svc-api-key", f.key}
	body := syncBatch(syncItem("i-1"), map[string]any{"type": "X"})
	first := n.do("POST", "/v1/sync/batch", body, append(key, "Idempotency-Key", "batch-1")...).want(http.StatusOK).wantCounts(1, 1)
	again := n.do("POST", "/v1/sync/batch", body, append(key, "Idempotency-Key", "batch-1")...).want(http.StatusOK)
	if string(again.raw) != string(first.raw) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %s vs %s", again.raw, first.raw)
	}
	other := syncBatch(syncItem("i-2"))
	n.do("POST", "/v1/sync/batch", other, append(key, "Idempotency-Key", "batch-1")...).
		wantErr(http.StatusUnprocessableEntity, "idempotency_key_reused")
	// The body field does the same as the header.
	other["idempotency_key"] = "batch-2"
	b1 := n.do("POST", "/v1/sync/batch", other, key...).want(http.StatusOK)
	b2 := n.do("POST", "/v1/sync/batch", other, key...).want(http.StatusOK)
	if b1.str("batch_id") != b2.str("batch_id") {
		t.Fatalf("body idempotency_key: %s vs %s", b1.raw, b2.raw)
	}
	// Only one batch record per key.
	if st := n.do("GET", "/v1/sync/status?batch_id="+first.str("batch_id"), nil, key...).want(http.StatusOK); st.num("accepted") != 1 {
		t.Fatalf("status: %s", st.raw)
	}
	if len(n.eventsOf(key)) != 2 {
		t.Fatal("a replay created events")
	}
}

func TestSyncBatch_Status(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	other := n.addTenant("other", "core")
	key := []string{"x-svc-api-key", f.key}
	posted := n.do("POST", "/v1/sync/batch", syncBatch(syncItem("s-1"), map[string]any{"type": "X", "idempotency_key": "s-2"}),
		key...).want(http.StatusOK).wantCounts(1, 1)
	id := posted.str("batch_id")
	path := "/v1/sync/status?batch_id=" + id

	t.Run("OK", func(t *testing.T) {
		n := n.on(t)
		res := n.do("GET", path, nil, key...).want(http.StatusOK)
		if res.str("batch_id") != id || res.str("device_id") != "tablet-7" || res.str("captured_at") != batchCaptured ||
			!timeRE.MatchString(res.str("received_at")) || res.num("accepted") != 1 || res.num("rejected") != 1 {
			t.Fatalf("status: %s", res.raw)
		}
		items := res.batchItems()
		if len(items) != 2 || items[0]["idempotency_key"] != "s-1" || items[0]["status"] != "accepted" ||
			items[0]["event_id"] != posted.batchItems()[0]["event_id"] || items[1]["status"] != "rejected" ||
			items[1]["error"].(map[string]any)["field"] != "vertical" || items[1]["index"] != 1.0 {
			t.Fatalf("status items: %s", res.raw)
		}
	})

	t.Run("Permissions", func(t *testing.T) {
		n := n.on(t)
		n.do("GET", path, nil, "x-svc-api-key", n.keyWith(f, "sync:write")).want(http.StatusOK)
		n.do("GET", path, nil, "x-svc-api-key", n.keyWith(f, "events:read")).want(http.StatusOK)
		n.do("GET", path, nil, "Authorization", n.login(f.emails["operational_supervisor"])).want(http.StatusOK)
		n.do("GET", path, nil, "x-svc-api-key", n.keyWith(f, "zones:read")).wantErr(http.StatusForbidden, "forbidden")
	})

	t.Run("NotFound", func(t *testing.T) {
		n := n.on(t)
		n.do("GET", path, nil, "x-svc-api-key", other.key).wantErr(http.StatusNotFound, "not_found")
		n.do("GET", "/v1/sync/status?batch_id="+model.NewID(), nil, key...).wantErr(http.StatusNotFound, "not_found")
	})

	t.Run("BadID", func(t *testing.T) {
		n := n.on(t)
		n.do("GET", "/v1/sync/status", nil, key...).wantErr(http.StatusBadRequest, "validation_error", "batch_id")
		n.do("GET", "/v1/sync/status?batch_id=42", nil, key...).wantErr(http.StatusBadRequest, "validation_error", "batch_id")
	})
}

func TestSyncBatch_Webhook(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	key := []string{"x-svc-api-key", f.key}
	n.do("POST", "/v1/webhooks", map[string]any{"url": "https://93.184.216.34/hook", "events": []string{"sync.*"}},
		key...).want(http.StatusCreated)
	res := n.do("POST", "/v1/sync/batch", syncBatch(syncItem("w-1"), syncItem("w-1"), map[string]any{"type": "X"}),
		key...).want(http.StatusOK).wantCounts(2, 1)

	var bodies []json.RawMessage
	err := n.eng.View(context.Background(), func(tx model.Tx) error {
		refs, err := tx.DueOutbox()
		if err != nil {
			return err
		}
		for _, r := range refs {
			o, err := tx.OutboxEntry(r.TenantID, r.ID)
			if err != nil {
				return err
			}
			if o.Name == "sync.batch_processed" {
				bodies = append(bodies, o.Body)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(bodies) != 1 {
		t.Fatalf("%d sync.batch_processed messages, want 1", len(bodies))
	}
	var env struct {
		Event   string         `json:"event"`
		Payload map[string]any `json:"payload"`
	}
	if err := json.Unmarshal(bodies[0], &env); err != nil {
		t.Fatal(err)
	}
	if env.Event != "sync.batch_processed" || env.Payload["batch_id"] != res.str("batch_id") ||
		env.Payload["accepted"] != 2.0 || env.Payload["rejected"] != 1.0 {
		t.Fatalf("webhook: %s", bodies[0])
	}
}

func TestSyncBatch_AutoDispatch(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	admin := []string{"Authorization", n.login(f.emails["company_admin"])}
	key := []string{"x-svc-api-key", f.key}
	n.do("PATCH", "/v1/tenant/dispatch-settings", map[string]any{"dispatch_mode": true, "dispatch_threshold": 0.2}, admin...).want(http.StatusOK)
	team := n.dispatchTeam(f, "Near", 48.9, 2.3)
	near := func(k string) map[string]any {
		it := syncItem(k)
		it["payload"] = map[string]any{"lat": 48.9, "lng": 2.3}
		return it
	}
	res := n.do("POST", "/v1/sync/batch", syncBatch(near("a-1"), near("a-2"), map[string]any{"type": "X"}), key...).
		want(http.StatusOK).wantCounts(2, 1)
	items := res.batchItems()
	d, _ := items[0]["dispatch"].(map[string]any)
	if d == nil || d["team_id"] != team.ID {
		t.Fatalf("the first item was not auto-dispatched: %s", res.raw)
	}
	mission := n.do("GET", "/v1/missions/"+d["mission_id"].(string), nil, admin...).want(http.StatusOK)
	if mission.str("event_id") != items[0]["event_id"] || mission.str("dispatched_by") != model.NilID {
		t.Fatalf("mission: %s", mission.raw)
	}
	// The only team is busy now: the second item needs a supervisor.
	if items[1]["requires_manual"] != true || items[1]["dispatch"] != nil {
		t.Fatalf("second item: %v", items[1])
	}
	if items[2]["dispatch"] != nil || items[2]["requires_manual"] != nil {
		t.Fatalf("a rejected item was dispatched: %v", items[2])
	}
}

func TestSyncBatch_CountedInUsage(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	key := []string{"x-svc-api-key", f.key}
	n.do("POST", "/v1/sync/batch", syncBatch(syncItem("use-1"), syncItem("use-2")), key...).want(http.StatusOK).wantCounts(2, 0)
	n.do("POST", "/v1/sync/batch", syncBatch(syncItem("use-1")), key...).want(http.StatusOK).wantCounts(1, 0)
	day := n.clock.Now().UTC().Format("2006-01-02")
	res := n.do("GET", "/v1/tenant/usage?period=day&from="+day+"&to="+day, nil, key...).want(http.StatusOK)
	d := usagePeriod(t, res, day)
	if got := numAt(d, "sync_batches"); got != 2 {
		t.Fatalf("sync_batches = %v, want 2: %s", got, res.raw)
	}
	if got := numAt(d, "events.total"); got != 2 {
		t.Fatalf("events.total = %v, want 2 (a duplicate item creates nothing): %s", got, res.raw)
	}
}
