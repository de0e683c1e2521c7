package e2e

import (
	"testing"
	"time"
)

// TestField_DeviceOffline: through the binary, a field operator registers a tablet of the
// demo's SAMU Lyon 1 team; while it is silent an event of its zone arrives and a
// supervisor dispatches the team (no webhook, no SMS gateway: the device queue is the
// team's only way to hear of it). The device syncs, finds the event and the mission in its
// queue, acknowledges them (the mission is SENT by channel device, the event delivered),
// then reports ACK, ON_ROUTE, ON_SITE and COMPLETED captured while offline, the last three
// first (held above the gap) and ACK after: the mission shows the captured times.
// It runs on both stores (eachStore).
func TestField_DeviceOffline(t *testing.T) {
	bin := binary(t)
	eachStore(t, func(t *testing.T, st nodeStore) { deviceOffline(t, bin, st) })
}

func deviceOffline(t *testing.T, bin string, store nodeStore) {
	s := store.serveDemo(t, bin)
	key := s.key()
	sup, op := s.login(t, "operational_supervisor"), s.login(t, "field_operator")

	status, _, body := s.call(t, "GET", "/v1/teams", nil, sup...)
	expect(t, "teams", status, 200, body)
	var teamID string
	for _, it := range body["data"].([]any) {
		if tm := it.(map[string]any); tm["name"] == "SAMU Lyon 1" {
			teamID = tm["id"].(string)
		}
	}
	if teamID == "" {
		t.Fatalf("no SAMU Lyon 1 team: %v", body)
	}

	reg := map[string]any{"name": "SAMU Lyon 1 tablet", "platform": "android", "team_id": teamID, "zone_code": "lyon",
		"hardware_id": "imei-356938035643809"}
	status, _, body = s.call(t, "POST", "/v1/devices/register", reg, op...)
	expect(t, "register", status, 201, body)
	deviceID := body["device_id"].(string)
	status, _, body = s.call(t, "POST", "/v1/devices/register", reg, op...)
	expect(t, "register again", status, 200, body)
	if body["device_id"] != deviceID {
		t.Fatalf("a second device for the same hardware: %v", body)
	}

	// The device is silent: an event of its zone, and a dispatch of its team.
	status, _, body = s.call(t, "POST", "/v1/events", map[string]any{"type": "CARDIAC_ARREST", "priority": "high",
		"vertical": "healthcare", "idempotency_key": "device-e2e-1", "zone_code": "lyon",
		"payload": map[string]any{"lat": 45.764, "lng": 4.8357}}, key...)
	expect(t, "event", status, 201, body)
	eventID := body["event_id"].(string)
	status, _, body = s.call(t, "POST", "/v1/teams/dispatch", map[string]any{"event_id": eventID, "team_id": teamID}, sup...)
	expect(t, "dispatch", status, 201, body)
	missionID := body["mission_id"].(string)

	sync := func(what string, req map[string]any) map[string]any {
		t.Helper()
		req["device_id"] = deviceID
		status, _, body := s.call(t, "POST", "/v1/devices/sync", req, op...)
		expect(t, what, status, 200, body)
		return body
	}
	body = sync("sync", map[string]any{"items": []any{}})
	queue := body["queue"].([]any)
	var missionSeq float64
	for _, it := range queue {
		q := it.(map[string]any)
		if q["kind"] == "mission" && q["mission"].(map[string]any)["id"] == missionID {
			missionSeq = q["queue_sequence"].(float64)
		}
	}
	if len(queue) != 2 || missionSeq == 0 {
		t.Fatalf("the queue does not carry the event and the mission: %v", body)
	}
	body = sync("ack", map[string]any{"items": []any{}, "ack_through": 2})
	if q := body["queue"].([]any); len(q) != 0 {
		t.Fatalf("queue after the ack: %v", q)
	}
	_, _, m := s.call(t, "GET", "/v1/missions/"+missionID, nil, sup...)
	if m["status"] != "SENT" || m["channel_used"] != "device" {
		t.Fatalf("mission after the ack: %v", m)
	}
	_, _, ev := s.call(t, "GET", "/v1/events/"+eventID, nil, key...)
	if ev["status"] != "delivered" {
		t.Fatalf("event after the ack: %v", ev["status"])
	}
	history := m["history"].([]any)
	sentAt, err := time.Parse(time.RFC3339Nano, history[len(history)-1].(map[string]any)["at"].(string))
	if err != nil {
		t.Fatal(err)
	}

	// Offline, the crew works the mission; the four moves are captured 10 ms apart after
	// SENT, and the test waits (by asking) until the last of them is in the past.
	for time.Since(sentAt) < 100*time.Millisecond {
		s.call(t, "GET", "/v1/devices/"+deviceID+"/queue", nil, op...)
	}
	moves := []string{"ACK", "ON_ROUTE", "ON_SITE", "COMPLETED"}
	captured := make([]string, len(moves))
	items := make([]any, len(moves))
	for i, mv := range moves {
		captured[i] = sentAt.Add(time.Duration(10*(i+1)) * time.Millisecond).UTC().Format("2006-01-02T15:04:05.000Z")
		items[i] = map[string]any{"sequence_number": i + 1, "kind": "mission_status", "captured_at": captured[i],
			"payload": map[string]any{"mission_id": missionID, "status": mv, "feedback": map[string]any{"step": mv}}}
	}
	body = sync("late moves", map[string]any{"items": items[1:]})
	if body["applied_through"] != float64(0) || len(body["gaps"].([]any)) != 1 {
		t.Fatalf("moves above the gap: %v", body)
	}
	for _, r := range body["results"].([]any) {
		if r.(map[string]any)["status"] != "pending" {
			t.Fatalf("a move above the gap: %v", r)
		}
	}
	body = sync("ACK", map[string]any{"items": items[:1]})
	if body["applied_through"] != float64(4) || len(body["released"].([]any)) != 3 {
		t.Fatalf("after the ACK: %v", body)
	}

	_, _, m = s.call(t, "GET", "/v1/missions/"+missionID, nil, sup...)
	if m["status"] != "COMPLETED" {
		t.Fatalf("mission: %v", m)
	}
	for i, k := range []string{"ack_at", "on_route_at", "on_site_at", "completed_at"} {
		if m[k] != captured[i] {
			t.Fatalf("%s = %v, want the captured %s", k, m[k], captured[i])
		}
	}
	for _, mv := range m["history"].([]any)[2:] {
		if src := mv.(map[string]any)["source"]; src != "device" {
			t.Fatalf("a move of source %v: %v", src, mv)
		}
	}
	_, _, tm := s.call(t, "GET", "/v1/teams/"+teamID, nil, sup...)
	if tm["status"] != "available" {
		t.Fatalf("team after completion: %v", tm["status"])
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("exit: %v", err)
	}
}
