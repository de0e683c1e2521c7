package e2e

import (
	"testing"
	"time"
)

// TestField_CrewLearnsOfChanges (issue 27): through the binary, on both stores. A phone of
// SAMU Lyon 1 (its device credential only) acknowledges its mission; a backup team sent to
// the same event reaches the phone, naming the backup team; the supervisor and the phone
// write to each other (the phone's message offline, in order with a move, sent twice:
// written once); a field operator may not stand a team down; the supervisor does, and the
// phone's queue holds one mission_update with the mission FAILED, the reason, the
// supervisor's name and role, and every change it had not yet received; ack_through
// clears it.
func TestField_CrewLearnsOfChanges(t *testing.T) {
	bin := binary(t)
	eachStore(t, func(t *testing.T, st nodeStore) { crewLearnsOfChanges(t, bin, st) })
}

func crewLearnsOfChanges(t *testing.T, bin string, store nodeStore) {
	s := store.serveDemo(t, bin)
	key := s.key()
	sup, op := s.login(t, "operational_supervisor"), s.login(t, "field_operator")
	samu, pompiers := demoTeam(t, s, "SAMU Lyon 1", sup), demoTeam(t, s, "Pompiers Lyon Nord", sup)

	status, _, body := s.call(t, "POST", "/v1/devices/register", map[string]any{"name": "Camille's phone", "platform": "web",
		"team_id": samu, "hardware_id": "crew-e2e"}, op...)
	expect(t, "register", status, 201, body)
	phone := body["device_id"].(string)
	status, _, body = s.call(t, "POST", "/v1/devices/"+phone+"/credential", nil, op...)
	expect(t, "credential", status, 201, body)
	cred := []string{"Authorization", "Bearer " + body["credential"].(string)}
	sync := func(what string, req map[string]any) map[string]any {
		t.Helper()
		req["device_id"] = phone
		if req["items"] == nil {
			req["items"] = []any{}
		}
		status, _, body := s.call(t, "POST", "/v1/devices/sync", req, cred...)
		expect(t, what, status, 200, body)
		return body
	}
	// queued returns the phone's pending items of a kind and the last queue_sequence.
	queued := func(body map[string]any, kind string) ([]map[string]any, float64) {
		var out []map[string]any
		last := 0.0
		for _, it := range body["queue"].([]any) {
			q := it.(map[string]any)
			last = q["queue_sequence"].(float64)
			if q["kind"] == kind {
				out = append(out, q)
			}
		}
		return out, last
	}

	status, _, body = s.call(t, "POST", "/v1/events", map[string]any{"type": "ROAD_ACCIDENT", "priority": "high",
		"vertical": "emergency", "idempotency_key": "crew-e2e-1", "payload": map[string]any{"lat": 45.764, "lng": 4.8357}}, key...)
	expect(t, "event", status, 201, body)
	eventID := body["event_id"].(string)
	status, _, body = s.call(t, "POST", "/v1/teams/dispatch", map[string]any{"event_id": eventID, "team_id": samu}, sup...)
	expect(t, "dispatch", status, 201, body)
	missionID := body["mission_id"].(string)

	// The phone receives its mission and acknowledges it (the queue and the move).
	body = sync("first sync", map[string]any{})
	missions, last := queued(body, "mission")
	if len(missions) != 1 {
		t.Fatalf("the phone's queue: %v", body["queue"])
	}
	sync("ack", map[string]any{"ack_through": last})
	now := func() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000Z") }
	body = sync("ACK", map[string]any{"items": []any{map[string]any{"sequence_number": 1,
		"kind": "mission_status", "captured_at": now(), "payload": map[string]any{"mission_id": missionID, "status": "ACK"}}}})
	if updates, _ := queued(body, "mission_update"); len(updates) != 0 {
		t.Fatalf("the phone is told of its own ACK: %v", updates)
	}

	// A backup on the same event reaches the phone, naming the backup team.
	status, _, body = s.call(t, "POST", "/v1/teams/dispatch", map[string]any{"event_id": eventID, "team_id": pompiers}, sup...)
	expect(t, "backup", status, 201, body)
	backupID := body["mission_id"].(string)
	body = sync("after the backup", map[string]any{})
	updates, _ := queued(body, "mission_update")
	if len(updates) != 1 {
		t.Fatalf("no backup update: %v", body["queue"])
	}
	c := updates[0]["changes"].([]any)[0].(map[string]any)
	if c["what"] != "backup" || c["team_name"] != "Pompiers Lyon Nord" || c["mission_id"] != backupID ||
		updates[0]["mission"].(map[string]any)["id"] != missionID {
		t.Fatalf("backup update: %v", updates[0])
	}

	// The supervisor writes (twice with one key: once); the phone answers offline, in
	// order with a move, and its sync is sent twice.
	msg := map[string]any{"text": "Second patient on the bridge"}
	status, _, first := s.call(t, "POST", "/v1/missions/"+missionID+"/messages", msg, append(sup, "Idempotency-Key", "crew-msg-1")...)
	expect(t, "message", status, 201, first)
	status, _, again := s.call(t, "POST", "/v1/missions/"+missionID+"/messages", msg, append(sup, "Idempotency-Key", "crew-msg-1")...)
	expect(t, "message again", status, 201, again)
	if first["id"] != again["id"] || first["author_name"] != "Sofia Supervisor" || first["role"] != "operational_supervisor" {
		t.Fatalf("message: %v, again %v", first, again)
	}
	offline := map[string]any{"items": []any{
		// Written on the phone a while before it synced: a captured_at in the node's very
		// millisecond would read as not before the node's clock and not be kept.
		map[string]any{"sequence_number": 2, "kind": "message", "captured_at": time.Now().Add(-5 * time.Second).UTC().Format("2006-01-02T15:04:05.000Z"),
			"payload": map[string]any{"mission_id": missionID, "text": "Seen, 5 minutes"}},
		map[string]any{"sequence_number": 3, "kind": "mission_status", "captured_at": now(),
			"payload": map[string]any{"mission_id": missionID, "status": "ON_ROUTE"}},
	}}
	for _, what := range []string{"offline answer", "offline answer again"} {
		body = sync(what, offline)
		if body["applied_through"] != float64(3) {
			t.Fatalf("%s: %v", what, body)
		}
	}
	status, _, body = s.call(t, "GET", "/v1/missions/"+missionID+"/messages", nil, sup...)
	expect(t, "messages", status, 200, body)
	if body["count"] != float64(2) {
		t.Fatalf("messages: %v", body)
	}
	answer := body["data"].([]any)[1].(map[string]any)
	if answer["text"] != "Seen, 5 minutes" || answer["channel"] != "device" || answer["captured_at"] == nil ||
		answer["author_name"] != "Camille Martin" {
		t.Fatalf("the phone's answer: %v", answer)
	}

	// A field operator may not stand a team down; a stand-down needs a reason.
	standDown := map[string]any{"status": "FAILED", "feedback": map[string]any{"stood_down": true, "reason": "Patient taken by a private ambulance"}}
	status, _, body = s.call(t, "PATCH", "/v1/missions/"+missionID+"/status", standDown, op...)
	expect(t, "stand-down by a field operator", status, 403, body)
	if body["error"] != "forbidden" {
		t.Fatalf("stand-down by a field operator: %v", body)
	}
	status, _, body = s.call(t, "PATCH", "/v1/missions/"+missionID+"/status", map[string]any{"status": "FAILED",
		"feedback": map[string]any{"stood_down": true}}, sup...)
	expect(t, "stand-down without a reason", status, 400, body)
	status, _, body = s.call(t, "PATCH", "/v1/missions/"+missionID+"/status", standDown, sup...)
	expect(t, "stand-down", status, 200, body)

	body = sync("after the stand-down", map[string]any{})
	updates, last = queued(body, "mission_update")
	if len(updates) != 1 {
		t.Fatalf("updates after the stand-down: %v", body["queue"])
	}
	u := updates[0]
	if m := u["mission"].(map[string]any); m["status"] != "FAILED" || m["feedback"].(map[string]any)["reason"] != "Patient taken by a private ambulance" {
		t.Fatalf("the update's mission: %v", m)
	}
	changes := u["changes"].([]any)
	whats := []string{}
	for _, c := range changes {
		whats = append(whats, c.(map[string]any)["what"].(string))
	}
	if len(whats) != 3 || whats[0] != "backup" || whats[1] != "message" || whats[2] != "status" {
		t.Fatalf("changes not yet received: %v", whats)
	}
	sd := changes[2].(map[string]any)
	by := sd["by"].(map[string]any)
	if sd["to"] != "FAILED" || sd["from"] != "ON_ROUTE" || sd["stood_down"] != true || sd["reason"] != "Patient taken by a private ambulance" ||
		by["name"] != "Sofia Supervisor" || by["role"] != "operational_supervisor" || sd["channel"] != "api" {
		t.Fatalf("stand-down change: %v", sd)
	}
	_, _, tm := s.call(t, "GET", "/v1/teams/"+samu, nil, sup...)
	if tm["status"] != "available" {
		t.Fatalf("the team stood down is %v", tm["status"])
	}
	body = sync("ack", map[string]any{"ack_through": last})
	if q := body["queue"].([]any); len(q) != 0 {
		t.Fatalf("queue after the ack: %v", q)
	}
	status, _, body = s.call(t, "GET", "/v1/devices/"+phone+"/queue", nil, cred...)
	expect(t, "queue", status, 200, body)
	if body["count"] != float64(0) {
		t.Fatalf("GET queue after the ack: %v", body)
	}
}
