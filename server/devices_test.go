package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// list returns a JSON array field of the answer as objects.
func (r *response) list(k string) []map[string]any {
	var out []map[string]any
	arr, _ := r.body[k].([]any)
	for _, it := range arr {
		m, _ := it.(map[string]any)
		out = append(out, m)
	}
	return out
}

func TestDevices_Register(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	other := n.addTenant("other", "core")
	s := newMissionSeed(n, f)
	key := []string{"x-svc-api-key", f.key}
	op := []string{"Authorization", n.login(f.emails["field_operator"])}

	body := map[string]any{"name": "Tablet 7", "platform": "android", "team_id": s.teamA.ID, "hardware_id": "imei-42"}
	res := n.do("POST", "/v1/devices/register", body, key...).want(http.StatusCreated)
	id := res.str("device_id")
	if len(id) != 36 || id[14] != '7' || res.str("name") != "Tablet 7" || res.str("platform") != "android" ||
		res.str("team_id") != s.teamA.ID || res.str("hardware_id") != "imei-42" || res.body["zone_code"] != nil ||
		len(res.str("registered_at")) != len("2026-06-09T10:11:12.345Z") {
		t.Fatalf("register: %s", res.raw)
	}
	// The same hardware_id again: 200, the same device, whoever asks in the team.
	again := n.do("POST", "/v1/devices/register", map[string]any{"name": "other name", "platform": "ios",
		"team_id": s.teamA.ID, "hardware_id": "imei-42"}, op...).want(http.StatusOK)
	if again.str("device_id") != id || again.str("name") != "Tablet 7" {
		t.Fatalf("again: %s", again.raw)
	}
	// Another tenant registering the same hardware gets its own device.
	if o := n.do("POST", "/v1/devices/register", body, "x-svc-api-key", other.key).want(http.StatusBadRequest); o.str("field") != "team_id" {
		t.Fatalf("another tenant's team: %s", o.raw)
	}
	delete(body, "team_id")
	if o := n.do("POST", "/v1/devices/register", body, "x-svc-api-key", other.key).want(http.StatusCreated); o.str("device_id") == id {
		t.Fatalf("tenants share a device: %s", o.raw)
	}

	for _, c := range []struct {
		body  any
		field string
	}{
		{map[string]any{"platform": "android"}, "name"},
		{map[string]any{"name": "x"}, "platform"},
		{map[string]any{"name": 7, "platform": "android"}, "name"},
		{map[string]any{"name": "x", "platform": "android", "zone_code": "nowhere"}, "zone_code"},
	} {
		n.do("POST", "/v1/devices/register", c.body, key...).wantErr(http.StatusBadRequest, "validation_error", c.field)
	}
	// A field operator registers for its own team only.
	n.do("POST", "/v1/devices/register", map[string]any{"name": "x", "platform": "p", "team_id": s.teamB.ID}, op...).
		wantErr(http.StatusForbidden, "forbidden")
	sup := []string{"Authorization", n.login(f.emails["operational_supervisor"])}
	n.do("POST", "/v1/devices/register", map[string]any{"name": "x", "platform": "p"}, sup...).wantErr(http.StatusForbidden, "forbidden")
}

// TestDevices_Sync checks the contract's answers to bad input, and that a bad item never
// blocks a good one.
func TestDevices_Sync(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	other := n.addTenant("other", "core")
	s := newMissionSeed(n, f)
	key := []string{"x-svc-api-key", f.key}
	op := []string{"Authorization", n.login(f.emails["field_operator"])}
	dev := n.do("POST", "/v1/devices/register", map[string]any{"name": "t", "platform": "android", "team_id": s.teamA.ID}, op...).
		want(http.StatusCreated).str("device_id")
	devB := n.do("POST", "/v1/devices/register", map[string]any{"name": "b", "platform": "android", "team_id": s.teamB.ID}, key...).
		want(http.StatusCreated).str("device_id")
	otherDev := n.do("POST", "/v1/devices/register", map[string]any{"name": "o", "platform": "android"}, "x-svc-api-key", other.key).
		want(http.StatusCreated).str("device_id")
	past := n.clock.Now().Add(-time.Hour).UTC().Format("2006-01-02T15:04:05.000Z")
	ev := func(seq any, k string) map[string]any {
		return map[string]any{"sequence_number": seq, "kind": "event", "captured_at": past, "payload": eventBody(k)}
	}

	t.Run("BadRequests", func(t *testing.T) {
		n := n.on(t)
		for _, c := range []struct {
			body  any
			code  string
			field string
		}{
			{map[string]any{}, "validation_error", "device_id"},
			{map[string]any{"items": []any{}}, "validation_error", "device_id"},
			{map[string]any{"device_id": 5, "items": []any{}}, "validation_error", "device_id"},
			{map[string]any{"device_id": "abc", "items": []any{}}, "validation_error", "device_id"},
			{map[string]any{"device_id": dev}, "validation_error", "items"},
			{map[string]any{"device_id": dev, "items": "none"}, "validation_error", "items"},
			{map[string]any{"device_id": dev, "items": []any{}, "ack_through": 1.5}, "validation_error", "ack_through"},
			{`{"device_id": "` + dev + `", "items": [], "ack_through": 1e30}`, "validation_error", "ack_through"},
			{map[string]any{"device_id": dev, "items": []any{}, "ack_through": "2"}, "validation_error", "ack_through"},
			{map[string]any{"device_id": dev, "items": []any{}, "ack_through": -1}, "validation_error", "ack_through"},
			{map[string]any{"device_id": dev, "items": []any{}, "ack_through": 9}, "validation_error", "ack_through"},
		} {
			n.do("POST", "/v1/devices/sync", c.body, op...).wantErr(http.StatusBadRequest, c.code, c.field)
		}
		n.do("POST", "/v1/devices/sync", `{"device_id":`, op...).wantErr(http.StatusBadRequest, "invalid_json")
		n.do("POST", "/v1/devices/sync", map[string]any{"device_id": "0190b8a0-0000-7000-8000-000000000000", "items": []any{}}, op...).
			wantErr(http.StatusNotFound, "not_found")
		n.do("POST", "/v1/devices/sync", map[string]any{"device_id": otherDev, "items": []any{}}, key...).wantErr(http.StatusNotFound, "not_found")
		n.do("POST", "/v1/devices/sync", map[string]any{"device_id": devB, "items": []any{}}, op...).wantErr(http.StatusNotFound, "not_found")
		sup := []string{"Authorization", n.login(f.emails["operational_supervisor"])}
		n.do("POST", "/v1/devices/sync", map[string]any{"device_id": dev, "items": []any{}}, sup...).wantErr(http.StatusForbidden, "forbidden")
		big := `{"device_id":"` + dev + `","items":[],"pad":"` + strings.Repeat("x", 8<<20) + `"}`
		n.do("POST", "/v1/devices/sync", big, op...).wantErr(http.StatusRequestEntityTooLarge, "payload_too_large")
		// Under 8 MiB but over the 1 MiB of other writes: accepted.
		mid := `{"device_id":"` + dev + `","items":[],"pad":"` + strings.Repeat("x", 2<<20) + `"}`
		n.do("POST", "/v1/devices/sync", mid, op...).want(http.StatusOK)
	})

	t.Run("BadItemsNeverBlock", func(t *testing.T) {
		n := n.on(t)
		res := n.do("POST", "/v1/devices/sync", map[string]any{"device_id": dev, "items": []any{
			ev(1.5, "x-1"), ev("3", "x-2"), ev(0, "x-3"), ev(nil, "x-4"),
			map[string]any{"sequence_number": 1, "kind": "teleport", "captured_at": past, "payload": map[string]any{}},
			map[string]any{"sequence_number": 2, "kind": "event", "captured_at": past, "payload": "FIRE"},
			map[string]any{"sequence_number": 3, "kind": "event", "captured_at": past},
			map[string]any{"sequence_number": 4, "kind": "event", "payload": eventBody("x-5")},
			map[string]any{"sequence_number": 5, "kind": "event", "captured_at": 17, "payload": eventBody("x-6")},
			map[string]any{"sequence_number": 6, "kind": "event", "captured_at": past, "payload": map[string]any{"type": "X"}},
			ev(7, "good-7"),
		}}, op...).want(http.StatusOK)
		results := res.list("results")
		wantFields := []string{"sequence_number", "sequence_number", "sequence_number", "sequence_number",
			"kind", "payload", "payload", "captured_at", "captured_at", "payload.priority"}
		for i, field := range wantFields {
			r := results[i]
			if r["status"] != "rejected" || r["error"] != "validation_error" || r["field"] != field || r["message"] == "" || r["index"] != float64(i) {
				t.Fatalf("item %d: %v", i, r)
			}
			if i < 4 && r["sequence_number"] != nil {
				t.Fatalf("item %d takes a sequence: %v", i, r)
			}
		}
		good := results[10]
		if good["status"] != "applied" || good["sequence_number"] != float64(7) || good["event_id"] == nil {
			t.Fatalf("good item: %v", good)
		}
		if res.num("applied_through") != 7 || len(res.list("gaps")) != 0 || res.num("gap_count") != 0 {
			t.Fatalf("answer: %s", res.raw)
		}
		// The device's event is an event of the API, with source device; POST /v1/events with
		// its key answers the original.
		evRes := n.do("GET", "/v1/events/"+good["event_id"].(string), nil, key...).want(http.StatusOK)
		if evRes.str("source") != "device" || evRes.str("device_id") != dev || evRes.str("captured_at") != past {
			t.Fatalf("device event: %s", evRes.raw)
		}
		replay := n.do("POST", "/v1/events", eventBody("good-7"), key...).want(http.StatusCreated)
		if replay.str("event_id") != good["event_id"] || replay.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("POST /v1/events with the device event's key: %s", replay.raw)
		}
	})

	t.Run("GapsAndPending", func(t *testing.T) {
		n := n.on(t)
		res := n.do("POST", "/v1/devices/sync", map[string]any{"device_id": dev, "items": []any{ev(10, "g-10"), ev(12, "g-12")}}, op...).
			want(http.StatusOK)
		if res.num("applied_through") != 7 || res.raw == nil {
			t.Fatalf("answer: %s", res.raw)
		}
		gaps := res.body["gaps"].([]any)
		if len(gaps) != 3 || gaps[0] != float64(8) || gaps[1] != float64(9) || gaps[2] != float64(11) {
			t.Fatalf("gaps: %v", gaps)
		}
		for _, r := range res.list("results") {
			if r["status"] != "pending" {
				t.Fatalf("held item: %v", r)
			}
		}
		res = n.do("POST", "/v1/devices/sync", map[string]any{"device_id": dev, "items": []any{ev(8, "g-8"), ev(9, "g-9"), ev(10, "g-10"), ev(11, "g-11")}}, op...).
			want(http.StatusOK)
		st := []string{}
		for _, r := range res.list("results") {
			outcome, _ := r["outcome"].(string)
			st = append(st, r["status"].(string)+"/"+outcome)
		}
		if got := strings.Join(st, " "); got != "applied/ applied/ duplicate/applied applied/" {
			t.Fatalf("statuses: %s", got)
		}
		// 10 and 12 were held: this sync released them (10 was also sent again).
		rel := res.list("released")
		if res.num("applied_through") != 12 || len(rel) != 2 || rel[0]["sequence_number"] != float64(10) || rel[1]["sequence_number"] != float64(12) {
			t.Fatalf("answer: %s", res.raw)
		}
	})

	t.Run("IdempotencyKey", func(t *testing.T) {
		n := n.on(t)
		body := map[string]any{"device_id": dev, "items": []any{ev(13, "i-13")}}
		first := n.do("POST", "/v1/devices/sync", body, append(op, "Idempotency-Key", "sync-13")...).want(http.StatusOK)
		again := n.do("POST", "/v1/devices/sync", body, append(op, "Idempotency-Key", "sync-13")...).want(http.StatusOK)
		if again.header.Get("Idempotent-Replayed") != "true" || string(again.raw) != string(first.raw) {
			t.Fatalf("replay: %s", again.raw)
		}
		body["items"] = []any{}
		n.do("POST", "/v1/devices/sync", body, append(op, "Idempotency-Key", "sync-13")...).wantErr(http.StatusUnprocessableEntity, "idempotency_key_reused")
	})

	// An event item whose payload has a field in a form the parser cannot use is applied,
	// with the warnings POST /v1/events would give: when applied at once, when released
	// from behind a gap, in a duplicate's answer and in the reply of its idempotency_key.
	t.Run("PayloadWarnings", func(t *testing.T) {
		n := n.on(t)
		dev := n.do("POST", "/v1/devices/register", map[string]any{"name": "w", "platform": "android", "team_id": s.teamA.ID}, op...).
			want(http.StatusCreated).str("device_id")
		warned := func(seq int, k string) map[string]any {
			it := ev(seq, k)
			it["payload"].(map[string]any)["payload"] = map[string]any{"location": "Lyon gare", "severity": "urgent"}
			return it
		}
		check := func(r map[string]any, status string) {
			t.Helper()
			w, _ := r["payload_warnings"].([]any)
			if r["status"] != status || len(w) != 2 || !strings.HasPrefix(w[0].(string), "payload.location ") ||
				!strings.HasPrefix(w[1].(string), "payload.severity ") {
				t.Fatalf("result: %v", r)
			}
		}
		res := n.do("POST", "/v1/devices/sync", map[string]any{"device_id": dev, "items": []any{warned(1, "w-1"), warned(3, "w-3")}}, op...).
			want(http.StatusOK)
		check(res.list("results")[0], "applied")
		if r := res.list("results")[1]; r["status"] != "pending" || r["payload_warnings"] != nil {
			t.Fatalf("held item: %v", r)
		}
		res = n.do("POST", "/v1/devices/sync", map[string]any{"device_id": dev, "items": []any{ev(2, "w-2"), warned(1, "w-1")}}, op...).
			want(http.StatusOK)
		if r := res.list("results")[0]; r["status"] != "applied" || r["payload_warnings"] != nil {
			t.Fatalf("item without warnings: %v", r)
		}
		dup := res.list("results")[1]
		check(dup, "duplicate")
		check(res.list("released")[0], "applied")
		replay := n.do("POST", "/v1/events", eventBody("w-3"), key...).want(http.StatusCreated)
		if w, _ := replay.body["payload_warnings"].([]any); len(w) != 2 || replay.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("reply of the item's idempotency_key: %s", replay.raw)
		}
	})
}

// TestDevices_Queue: a mission dispatched to the device's team reaches its queue; the
// acknowledgement makes it SENT; GET /v1/devices/:id/queue shows what is pending.
func TestDevices_Queue(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	other := n.addTenant("other", "core")
	s := newMissionSeed(n, f)
	key := []string{"x-svc-api-key", f.key}
	op := []string{"Authorization", n.login(f.emails["field_operator"])}
	dev := n.do("POST", "/v1/devices/register", map[string]any{"name": "t", "platform": "android", "team_id": s.teamA.ID}, op...).
		want(http.StatusCreated).str("device_id")
	ev := s.event("q-1")
	mission := n.do("POST", "/v1/teams/dispatch", map[string]any{"event_id": ev, "team_id": s.teamA.ID}, key...).
		want(http.StatusCreated).str("mission_id")

	q := n.do("GET", "/v1/devices/"+dev+"/queue", nil, op...).want(http.StatusOK)
	items := q.items()
	if q.str("device_id") != dev || q.num("count") != 1 || items[0]["kind"] != "mission" || items[0]["queue_sequence"] != float64(1) ||
		items[0]["queued_at"] == nil {
		t.Fatalf("queue: %s", q.raw)
	}
	if m := items[0]["mission"].(map[string]any); m["id"] != mission || m["status"] != "CREATED" {
		t.Fatalf("queued mission: %v", m)
	}
	res := n.do("POST", "/v1/devices/sync", map[string]any{"device_id": dev, "items": []any{}}, op...).want(http.StatusOK)
	if len(res.list("queue")) != 1 || res.num("queue_pending") != 1 {
		t.Fatalf("sync queue: %s", res.raw)
	}
	res = n.do("POST", "/v1/devices/sync", map[string]any{"device_id": dev, "items": []any{}, "ack_through": 1}, op...).want(http.StatusOK)
	if len(res.list("queue")) != 0 || res.num("ack_through") != 1 {
		t.Fatalf("after the ack: %s", res.raw)
	}
	m := n.do("GET", "/v1/missions/"+mission, nil, key...).want(http.StatusOK)
	if m.str("status") != "SENT" || m.str("channel_used") != "device" {
		t.Fatalf("mission after the ack: %s", m.raw)
	}
	if q := n.do("GET", "/v1/devices/"+dev+"/queue", nil, key...).want(http.StatusOK); q.num("count") != 0 {
		t.Fatalf("queue after the ack: %s", q.raw)
	}
	n.do("GET", "/v1/devices/"+dev+"/queue", nil, "x-svc-api-key", other.key).wantErr(http.StatusNotFound, "not_found")
	n.do("GET", "/v1/devices/nope/queue", nil, key...).wantErr(http.StatusNotFound, "not_found")
	n.do("GET", "/v1/devices/"+dev+"/queue?limit=0", nil, key...).wantErr(http.StatusBadRequest, "validation_error", "limit")
	corp := []string{"Authorization", n.login(f.emails["corporate_client"])}
	n.do("GET", "/v1/devices/"+dev+"/queue", nil, corp...).wantErr(http.StatusNotFound, "not_found")
}
