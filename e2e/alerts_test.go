package e2e

import (
	"fmt"
	"testing"
	"time"
)

// TestAlerts_SharedAckAndClosedByCause: a high event nobody was sent to raises an alert;
// one user acknowledges it and another sees who and when; a second acknowledgement
// answers the first; the dispatch that ends its cause closes it
// (docs/decisions/0172-shared-alerts.md).
func TestAlerts_SharedAckAndClosedByCause(t *testing.T) {
	n := serveDemo(t, binary(t), t.TempDir())
	sup, admin := n.login(t, "operational_supervisor"), n.login(t, "company_admin")
	st, _, body := n.call(t, "POST", "/v1/events", map[string]any{"type": "GAS_LEAK", "priority": "high", "vertical": "emergency",
		"idempotency_key": "alert-1", "zone_code": "lyon", "payload": map[string]any{"lat": 45.76, "lng": 4.83}}, n.key()...)
	expect(t, "POST the event", st, 201, body)
	if body["dispatch"] != nil {
		t.Fatalf("the demo dispatched the event by itself: %v", body)
	}
	eventID := body["event_id"].(string)

	open := func(who []string) []any {
		t.Helper()
		st, _, body := n.call(t, "GET", "/v1/alerts?event_id="+eventID, nil, who...)
		expect(t, "GET /v1/alerts", st, 200, body)
		return body["data"].([]any)
	}
	alerts := open(sup)
	if len(alerts) != 1 {
		t.Fatalf("open alerts of the event = %v; want one", alerts)
	}
	a := alerts[0].(map[string]any)
	if a["kind"] != "event_undispatched" || a["status"] != "open" || a["acked_at"] != nil || a["message"] != "High event not dispatched: Gas leak in lyon" {
		t.Fatalf("the alert = %v", a)
	}
	id := a["id"].(string)

	email, pass := n.demoUser(t, "operational_supervisor")
	st, _, body = n.call(t, "POST", "/v1/auth/login", map[string]any{"email": email, "password": pass})
	expect(t, "login", st, 200, body)
	supID := body["user"].(map[string]any)["id"]
	st, _, body = n.call(t, "POST", "/v1/alerts/"+id+"/ack", nil, sup...)
	expect(t, "ack", st, 200, body)
	ackedAt := body["acked_at"]
	if body["acked_by"] != supID || ackedAt == nil || body["status"] != "open" {
		t.Fatalf("the acknowledged alert = %v; want acked by %v, still open", body, supID)
	}
	seen := open(admin)[0].(map[string]any)
	if seen["acked_by"] != supID || seen["acked_at"] != ackedAt {
		t.Fatalf("the alert as another user sees it = %v; want acked by %v at %v", seen, supID, ackedAt)
	}
	st, _, body = n.call(t, "POST", "/v1/alerts/"+id+"/ack", nil, admin...)
	expect(t, "ack again", st, 200, body)
	if body["acked_by"] != supID || body["acked_at"] != ackedAt {
		t.Fatalf("a second ack = %v; want the first kept", body)
	}
	st, _, body = n.call(t, "POST", "/v1/alerts/"+id+"/ack", nil, n.login(t, "corporate_client")...)
	expect(t, "ack by a role that does not dispatch", st, 403, body)

	// The dispatch ends the cause: the alert closes.
	st, _, body = n.call(t, "GET", "/v1/teams", nil, sup...)
	expect(t, "teams", st, 200, body)
	teamID := body["data"].([]any)[0].(map[string]any)["id"].(string)
	st, _, body = n.call(t, "POST", "/v1/teams/dispatch", map[string]any{"event_id": eventID, "team_id": teamID}, sup...)
	expect(t, "dispatch", st, 201, body)
	if left := open(admin); len(left) != 0 {
		t.Fatalf("open alerts after the dispatch = %v; want none", left)
	}
	st, _, body = n.call(t, "GET", "/v1/alerts?status=closed&event_id="+eventID, nil, admin...)
	expect(t, "closed alerts", st, 200, body)
	if c := body["data"].([]any); len(c) != 1 || c[0].(map[string]any)["closed_at"] == nil || c[0].(map[string]any)["acked_by"] != supID {
		t.Fatalf("closed alerts = %v", c)
	}
}

// TestAlerts_TimersAndEscalationSettings: through the binary, the dispatch settings carry
// on_site_timeout_min (30 until set) and alert_escalation_min (0, off, until set); a user
// gets a phone and on_duty on create and update (a phone not in E.164 is refused); a team
// says since when it is in its status; an alert carries escalated_at. The minutes
// themselves run on the engine's fake clock (TestMissionTimers_*, TestWatch_*): the
// binary has no clock a test can move (docs/decisions/0260-mission-timers.md,
// docs/decisions/0263-alert-escalation.md).
func TestAlerts_TimersAndEscalationSettings(t *testing.T) {
	n := serveDemo(t, binary(t), t.TempDir())
	admin, sup := n.login(t, "company_admin"), n.login(t, "operational_supervisor")
	st, _, body := n.call(t, "PATCH", "/v1/tenant/dispatch-settings", map[string]any{"dispatch_mode": false}, admin...)
	expect(t, "dispatch settings", st, 200, body)
	if body["on_site_timeout_min"] != 30.0 || body["alert_escalation_min"] != 0.0 {
		t.Fatalf("defaults: %v", body)
	}
	st, _, body = n.call(t, "PATCH", "/v1/tenant/dispatch-settings", map[string]any{"on_site_timeout_min": 20, "alert_escalation_min": 5}, admin...)
	expect(t, "set the timers", st, 200, body)
	if body["on_site_timeout_min"] != 20.0 || body["alert_escalation_min"] != 5.0 {
		t.Fatalf("settings: %v", body)
	}
	st, _, body = n.call(t, "PATCH", "/v1/tenant/dispatch-settings", map[string]any{"alert_escalation_min": 1441}, admin...)
	expect(t, "escalation out of range", st, 400, body)
	if body["field"] != "alert_escalation_min" {
		t.Fatalf("out of range: %v", body)
	}

	st, _, body = n.call(t, "POST", "/v1/tenant/users", map[string]any{"email": "duty@demo.example", "name": "On Duty",
		"role": "operational_supervisor", "password": "a long enough password", "phone": "+33612345678", "on_duty": true}, admin...)
	expect(t, "create a supervisor on duty", st, 201, body)
	if body["phone"] != "+33612345678" || body["on_duty"] != true {
		t.Fatalf("created user: %v", body)
	}
	id := body["id"].(string)
	st, _, body = n.call(t, "PATCH", "/v1/tenant/users/"+id, map[string]any{"on_duty": false, "phone": ""}, admin...)
	expect(t, "off duty", st, 200, body)
	if body["phone"] != "" || body["on_duty"] != false {
		t.Fatalf("updated user: %v", body)
	}
	st, _, body = n.call(t, "PATCH", "/v1/tenant/users/"+id, map[string]any{"phone": "0612345678"}, admin...)
	expect(t, "a phone not in E.164", st, 400, body)
	if body["field"] != "phone" {
		t.Fatalf("bad phone: %v", body)
	}

	st, _, body = n.call(t, "POST", "/v1/events", map[string]any{"type": "FIRE", "priority": "high", "vertical": "emergency",
		"idempotency_key": "timers-1", "zone_code": "lyon", "payload": map[string]any{"lat": 45.76, "lng": 4.83}}, n.key()...)
	expect(t, "POST the event", st, 201, body)
	eventID := body["event_id"].(string)
	st, _, body = n.call(t, "GET", "/v1/alerts?event_id="+eventID, nil, sup...)
	expect(t, "alerts", st, 200, body)
	if a := body["data"].([]any); len(a) != 1 || a[0].(map[string]any)["escalated_at"] != nil {
		t.Fatalf("alerts: %v", a)
	} else if _, ok := a[0].(map[string]any)["escalated_at"]; !ok {
		t.Fatalf("an alert without escalated_at: %v", a[0])
	}
	st, _, body = n.call(t, "GET", "/v1/teams?status=available", nil, sup...)
	expect(t, "teams", st, 200, body)
	team := body["data"].([]any)[0].(map[string]any)
	st, _, body = n.call(t, "POST", "/v1/teams/dispatch", map[string]any{"event_id": eventID, "team_id": team["id"],
		"confirm_empty_team": true}, sup...)
	expect(t, "dispatch", st, 201, body)
	st, _, body = n.call(t, "GET", "/v1/teams/"+team["id"].(string), nil, sup...)
	expect(t, "the team", st, 200, body)
	since, err := time.Parse(time.RFC3339, fmt.Sprint(body["status_since"]))
	if body["status"] != "on_mission" || err != nil || time.Since(since) > time.Minute || time.Since(since) < 0 {
		t.Fatalf("team on a mission since %v (%v): %v", body["status_since"], err, body)
	}
}
