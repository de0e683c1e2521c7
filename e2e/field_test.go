package e2e

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/server/outbound"
)

// missionHooks records the webhook messages a tenant receives, after checking their
// signatures.
type missionHooks struct {
	t      *testing.T
	mu     sync.Mutex
	secret string
	msgs   []map[string]any
}

func (h *missionHooks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := outbound.VerifyWebhook(h.secret, r.Header, body); err != nil {
		h.t.Errorf("a webhook whose signature does not verify: %v", err)
	}
	var msg map[string]any
	_ = json.Unmarshal(body, &msg)
	h.msgs = append(h.msgs, msg)
}

// named returns the payloads of the messages called name.
func (h *missionHooks) named(name string) []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]any
	for _, m := range h.msgs {
		if m["event"] == name {
			p, _ := m["payload"].(map[string]any)
			out = append(out, p)
		}
	}
	return out
}

// TestField_MissionLifecycle: through the binary, a supervisor dispatches the demo's Lyon
// team to an event; its webhook notification makes the mission SENT; the field operator
// moves it ACK → ON_ROUTE → ON_SITE → COMPLETED; every mission.status_updated arrives
// signed; the team is available again and the event closed. Another tenant sees none of it.
// It runs on both stores (eachStore).
func TestField_MissionLifecycle(t *testing.T) {
	bin := binary(t)
	eachStore(t, func(t *testing.T, st nodeStore) { missionLifecycle(t, bin, st) })
}

func missionLifecycle(t *testing.T, bin string, store nodeStore) {
	hooks := &missionHooks{t: t}
	rcv := httptest.NewTLSServer(hooks)
	defer rcv.Close()
	caFile := filepath.Join(t.TempDir(), "receiver.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rcv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", caFile)
	s := store.serveDemo(t, bin, "--allow-loopback-webhooks")
	key := s.key()
	sup, op := s.login(t, "operational_supervisor"), s.login(t, "field_operator")

	status, _, body := s.call(t, "POST", "/v1/webhooks", map[string]any{"url": rcv.URL + "/hooks",
		"events": []string{"team.dispatched", "mission.*"}}, key...)
	expect(t, "webhook", status, 201, body)
	hooks.mu.Lock()
	hooks.secret = body["secret"].(string)
	hooks.mu.Unlock()

	status, _, body = s.call(t, "POST", "/v1/events", map[string]any{"type": "CARDIAC_ARREST", "priority": "critical",
		"vertical": "healthcare", "idempotency_key": "field-1", "zone_code": "lyon",
		"payload": map[string]any{"lat": 45.764, "lng": 4.8357, "required_equipment": []string{"defibrillator"}}}, key...)
	expect(t, "event", status, 201, body)
	eventID := body["event_id"].(string)

	// The operator's team: the demo's first team (its first member is the operator).
	status, _, body = s.call(t, "GET", "/v1/teams", nil, sup...)
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

	status, _, body = s.call(t, "POST", "/v1/teams/dispatch", map[string]any{"event_id": eventID, "team_id": teamID,
		"notes": "entrance on rue de la Republique"}, sup...)
	expect(t, "dispatch", status, 201, body)
	missionID := body["mission_id"].(string)
	pollUntil(t, s.served, "the mission SENT", func() bool {
		_, _, m := s.call(t, "GET", "/v1/missions/"+missionID, nil, sup...)
		return m["status"] == "SENT"
	})
	if got := hooks.named("team.dispatched"); len(got) != 1 || got[0]["mission_id"] != missionID {
		t.Fatalf("team.dispatched: %v", got)
	}

	for _, next := range []string{"ACK", "ON_ROUTE", "ON_SITE", "COMPLETED"} {
		status, _, body = s.call(t, "PATCH", "/v1/missions/"+missionID+"/status", map[string]any{"status": next,
			"feedback": map[string]any{"note": "step " + next}}, op...)
		expect(t, "move to "+next, status, 200, body)
	}
	status, _, body = s.call(t, "PATCH", "/v1/missions/"+missionID+"/status", map[string]any{"status": "FAILED"}, op...)
	if status != 409 || body["error"] != "mission_closed" {
		t.Fatalf("a move of a completed mission: %d %v", status, body)
	}
	pollUntil(t, s.served, "four mission.status_updated", func() bool { return len(hooks.named("mission.status_updated")) == 4 })
	// Messages are delivered by a pool of workers, in no promised order (the four moves come
	// a round trip apart, and a PostgreSQL store's attempts take longer than a bbolt
	// store's): each move has one message, and their move times follow the moves.
	byStatus := map[any]map[string]any{}
	for _, p := range hooks.named("mission.status_updated") {
		if byStatus[p["status"]] != nil {
			t.Fatalf("two mission.status_updated of %v", p["status"])
		}
		byStatus[p["status"]] = p
	}
	var last time.Time
	for i, want := range []string{"ACK", "ON_ROUTE", "ON_SITE", "COMPLETED"} {
		p := byStatus[want]
		fb, _ := p["feedback"].(map[string]any)
		at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(p["at"]))
		if p["mission_id"] != missionID || fb["note"] != "step "+want || err != nil || at.Before(last) {
			t.Fatalf("mission.status_updated %d (%s): %v", i, want, p)
		}
		last = at
	}
	_, _, m := s.call(t, "GET", "/v1/missions/"+missionID, nil, sup...)
	for _, k := range []string{"ack_at", "on_route_at", "on_site_at", "completed_at"} {
		if m[k] == nil {
			t.Fatalf("mission %s not set: %v", k, m)
		}
	}
	if m["failed_at"] != nil {
		t.Fatalf("failed_at set: %v", m)
	}
	_, _, tm := s.call(t, "GET", "/v1/teams/"+teamID, nil, sup...)
	if tm["status"] != "available" {
		t.Fatalf("team after completion: %v", tm["status"])
	}
	_, _, ev := s.call(t, "GET", "/v1/events/"+eventID, nil, key...)
	if ev["status"] != "closed" || ev["closed_at"] == nil {
		t.Fatalf("event after completion: %v %v", ev["status"], ev["closed_at"])
	}

	// Another tenant: 404 on every mission, team and dispatch of the demo tenant.
	var other map[string]any
	if err := json.Unmarshal(store.cli(t, bin, "", "tenant", "create", "--json", "--name", "Other",
		"--slug", "other", "--email", "ops@other.example", "--country", "FR"), &other); err != nil {
		t.Fatal(err)
	}
	otherKey := []string{"x-svc-api-key", other["api_key"].(string)}
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/v1/missions/" + missionID, nil},
		{"PATCH", "/v1/missions/" + missionID + "/status", map[string]any{"status": "FAILED"}},
		{"GET", "/v1/teams/" + teamID, nil},
		{"PATCH", "/v1/teams/" + teamID, map[string]any{"name": "x"}},
		{"POST", "/v1/teams/dispatch", map[string]any{"event_id": eventID, "team_id": teamID}},
	} {
		status, _, body := s.call(t, c.method, c.path, c.body, otherKey...)
		if status != 404 {
			t.Errorf("tenant B %s %s: %d %v", c.method, c.path, status, body)
		}
	}
	_, _, list := s.call(t, "GET", "/v1/missions", nil, otherKey...)
	if list["count"] != float64(0) {
		t.Errorf("tenant B lists missions: %v", list)
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("exit: %v", err)
	}
}
