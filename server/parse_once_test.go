package server_test

import (
	"net/http"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/server"
)

// TestBodyParsedOnce counts the parses of each request's body (server.BodyParses: the
// decode of its input, and the canonical JSON of an idempotency fingerprint, which a
// write computes only when it has a key; docs/decisions/0146-one-way-through-request.md).
// The body's idempotency_key is found by the decode of the input, not by a
// decode of its own. No test of the package runs in parallel, so the count is this
// test's.
func TestBodyParsedOnce(t *testing.T) {
	n := newNode(t)
	f := n.addTenant("acme", "core")
	s := newMissionSeed(n, f)
	ms := s.missions(s.teamA, s.event("parse-once-1"), 4)
	sup := []string{"Authorization", n.login(f.emails[model.RoleOperationalSupervisor])}
	status := func(i int) string { return "/v1/missions/" + ms[i] + "/status" }
	for _, c := range []struct {
		name, method, path string
		body               any
		headers            []string
		status             int
		parses             int64
	}{
		{"EventWithItsKey", "POST", "/v1/events", eventBody("parse-once-2"), []string{"x-svc-api-key", f.key}, http.StatusCreated, 1},
		{"EventReplayed", "POST", "/v1/events", eventBody("parse-once-2"), []string{"x-svc-api-key", f.key}, http.StatusCreated, 1},
		{"MissionStatusNoKey", "PATCH", status(0), `{"status":"ACK"}`, sup, http.StatusOK, 1},
		{"MissionStatusBodyKey", "PATCH", status(1), `{"status":"ACK", "idempotency_key":"po-1"}`, sup, http.StatusOK, 2},
		{"MissionStatusBodyKeyReplayed", "PATCH", status(1), `{"idempotency_key":"po-1","status":"ACK"}`, sup, http.StatusOK, 2},
		{"MissionStatusHeaderKey", "PATCH", status(2), `{"status":"ACK"}`, append(sup, "Idempotency-Key", "po-2"), http.StatusOK, 2},
		{"MissionStatusBadKey", "PATCH", status(3), `{"status":"ACK","idempotency_key":5}`, sup, http.StatusBadRequest, 1},
		{"TeamNoKey", "POST", "/v1/teams", `{"name":"Once","verticals":["emergency"]}`, sup, http.StatusCreated, 1},
		{"TeamBodyKey", "POST", "/v1/teams", `{"name":"Twice","verticals":["emergency"],"idempotency_key":"po-3"}`, sup,
			http.StatusCreated, 2},
		{"TeamBodyKeyReplayed", "POST", "/v1/teams", `{"idempotency_key":"po-3","name":"Twice","verticals":["emergency"]}`, sup,
			http.StatusCreated, 2},
		{"TeamBadKey", "POST", "/v1/teams", `{"name":"Bad","verticals":["emergency"],"idempotency_key":5}`, sup,
			http.StatusBadRequest, 1},
		{"DispatchNoKey", "POST", "/v1/teams/dispatch", map[string]any{"event_id": s.event("parse-once-3"), "team_id": s.teamB.ID},
			sup, http.StatusCreated, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := server.BodyParses()
			n.do(c.method, c.path, c.body, c.headers...).want(c.status)
			if got := server.BodyParses() - before; got != c.parses {
				t.Fatalf("the body was parsed %d times, want %d", got, c.parses)
			}
		})
	}
}
