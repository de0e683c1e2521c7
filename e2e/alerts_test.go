package e2e

import (
	"testing"
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
