package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"
)

// The tests of this file hold the unique rules of the contract across the processes of a
// central tier (two `serve --database` on one database): an idempotency key, the login
// lock and a device's sequence numbers are the database's, not a process's.

// send sends a JSON request to s without failing the test (it may run in a goroutine).
func (s *served) send(ctx context.Context, method, path string, body any, headers ...string) answer {
	return request(ctx, s.client, method, s.base+path, body, headers...)
}

// together sends n requests at once, request i to node i%2 of the tier, and returns the
// answers in order.
func (c *central) together(t *testing.T, n int, method, path string, body func(i int) any, headers ...string) []answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := make([]answer, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[i] = c.nodes[i%len(c.nodes)].send(ctx, method, path, body(i), headers...)
		}()
	}
	close(start)
	wg.Wait()
	for i, a := range out {
		if a.err != nil {
			t.Fatalf("request %d (node %d): %v", i, i%len(c.nodes)+1, a.err)
		}
	}
	return out
}

// sameReply checks that n concurrent answers are one write and its replays: every answer
// has the status want and the same body (request_id included; docs/rules.md, Idempotency: a
// repeat answers the original status and body), and exactly one is not marked
// Idempotent-Replayed. It returns the body.
func sameReply(t *testing.T, what string, answers []answer, want int) map[string]any {
	t.Helper()
	var first []byte
	fresh := 0
	for i, a := range answers {
		if a.status != want {
			t.Fatalf("%s: request %d answered %d, want %d: %v", what, i, a.status, want, a.body)
		}
		b, _ := json.Marshal(a.body)
		if first == nil {
			first = b
		} else if !bytes.Equal(b, first) {
			t.Fatalf("%s: request %d answered\n%s\nrequest 0 answered\n%s", what, i, b, first)
		}
		if a.header.Get("Idempotent-Replayed") != "true" {
			fresh++
		}
	}
	if fresh != 1 {
		t.Fatalf("%s: %d answers are not replays, want 1 (the write ran %d times)", what, fresh, fresh)
	}
	return answers[0].body
}

// TestCentral_Consistency runs the tests of this file on one tier of two processes (each
// on records of its own: other keys, users and devices).
func TestCentral_Consistency(t *testing.T) {
	c := serveCentral(t, binary(t), 2)
	t.Run("idempotency", func(t *testing.T) { idempotencyAcrossProcesses(t, c) })
	t.Run("login lock", func(t *testing.T) { loginLockAcrossProcesses(t, c) })
	t.Run("device sequences", func(t *testing.T) { deviceSequencesAcrossProcesses(t, c) })
	t.Run("unique indexes", func(t *testing.T) { uniqueAcrossProcesses(t, c) })
}

// idempotencyAcrossProcesses: 50 requests sharing one idempotency key, sent at once and
// spread over both processes, make one event; the same for a write of another kind (a
// team) keyed by the Idempotency-Key header.
func idempotencyAcrossProcesses(t *testing.T, c *central) {
	a, b := c.nodes[0], c.nodes[1]
	key := a.key()

	answers := c.together(t, 50, "POST", "/v1/events", func(int) any {
		return map[string]any{"type": "FIRE", "priority": "high", "vertical": "emergency",
			"idempotency_key": "central-race-1", "payload": map[string]any{"floor": 3}}
	}, key...)
	ev := sameReply(t, "50 POST /v1/events with one idempotency_key", answers, 201)
	for _, n := range c.nodes {
		var keyed []any
		for _, it := range list(t, n.served, "/v1/events", key) {
			if it["idempotency_key"] == "central-race-1" {
				keyed = append(keyed, it["event_id"])
			}
		}
		if len(keyed) != 1 || keyed[0] != ev["event_id"] {
			t.Fatalf("events of the key after 50 requests: %v, want the one the answers named, %v", keyed, ev["event_id"])
		}
	}

	team := map[string]any{"name": "Race team", "verticals": []string{"emergency"},
		"members": []map[string]any{{"name": "Lead", "phone": "+33611111111"}}}
	answers = c.together(t, 50, "POST", "/v1/teams", func(int) any { return team },
		append(key, "Idempotency-Key", "central-race-team")...)
	tm := sameReply(t, "50 POST /v1/teams with one Idempotency-Key", answers, 201)
	named := 0
	for _, it := range list(t, b.served, "/v1/teams", key) {
		if it["name"] == "Race team" {
			named++
			if it["id"] != tm["id"] {
				t.Fatalf("the team listed is %v, the answers named %v", it["id"], tm["id"])
			}
		}
	}
	if named != 1 {
		t.Fatalf("%d teams after 50 requests with one Idempotency-Key, want 1", named)
	}

	// The same key with another body, on either process: 422 idempotency_key_reused.
	team["name"] = "Another team"
	for _, n := range c.nodes {
		status, _, body := n.call(t, "POST", "/v1/teams", team, append(key, "Idempotency-Key", "central-race-team")...)
		if status != 422 || body["error"] != "idempotency_key_reused" {
			t.Fatalf("a reused key with another body: %d %v", status, body)
		}
	}
}

// loginLockAcrossProcesses: failed logins spread over both processes count together
// (docs/openapi.yaml, POST /v1/auth/login, 423 Locked: 5 consecutive failures lock the
// account; the fifth still answers 401, every attempt during the lock 423 with Retry-After,
// even with the right password).
func loginLockAcrossProcesses(t *testing.T, c *central) {
	var email, password string
	for _, u := range c.nodes[0].Users {
		if u.Role == "company_tech" { // a user the other subtests do not log in
			email, password = u.Email, u.Password
		}
	}
	if email == "" {
		t.Fatal("no demo company_tech")
	}
	for i := range 5 {
		n := c.nodes[i%2]
		status, _, body := n.call(t, "POST", "/v1/auth/login", map[string]any{"email": email, "password": "wrong password 123"})
		if status != 401 || body["error"] != "invalid_credentials" {
			t.Fatalf("failure %d on node %d: %d %v", i+1, i%2+1, status, body)
		}
	}
	for i, n := range c.nodes {
		status, hdr, body := n.call(t, "POST", "/v1/auth/login", map[string]any{"email": email, "password": password})
		if status != 423 || body["error"] != "account_locked" || hdr.Get("Retry-After") == "" {
			t.Fatalf("the right password on node %d after 5 failures spread over both: %d %v %v", i+1, status, body, hdr)
		}
	}

	// A success resets the count on every process: four failures, a success, four more
	// failures, alternating, lock nothing.
	for _, u := range c.nodes[0].Users {
		if u.Role == "corporate_client" {
			email, password = u.Email, u.Password
		}
	}
	for i := range 9 {
		n := c.nodes[i%2]
		pw, want := "wrong password 123", 401
		if i == 4 {
			pw, want = password, 200
		}
		status, _, body := n.call(t, "POST", "/v1/auth/login", map[string]any{"email": email, "password": pw})
		if status != want {
			t.Fatalf("attempt %d on node %d: %d %v, want %d", i+1, i%2+1, status, body, want)
		}
	}
	status, _, body := c.nodes[1].call(t, "POST", "/v1/auth/login", map[string]any{"email": email, "password": password})
	expect(t, "login after 4 failures, a success and 4 failures", status, 200, body)

	// Five failures at once, spread over both processes, lock as five in a row do: none of
	// the counts is lost to another.
	for _, u := range c.nodes[0].Users {
		if u.Role == "operational_supervisor" {
			email, password = u.Email, u.Password
		}
	}
	for i, a := range c.together(t, 5, "POST", "/v1/auth/login", func(int) any {
		return map[string]any{"email": email, "password": "wrong password 123"}
	}) {
		if a.status != 401 {
			t.Fatalf("concurrent failure %d: %d %v", i+1, a.status, a.body)
		}
	}
	for i, n := range c.nodes {
		status, _, body := n.call(t, "POST", "/v1/auth/login", map[string]any{"email": email, "password": password})
		if status != 423 {
			t.Fatalf("the right password on node %d after 5 concurrent failures: %d %v", i+1, status, body)
		}
	}
}

// uniqueAcrossProcesses: writes that a unique rule allows once, sent at once to both
// processes without an idempotency key: a zone code and a user's email are taken by one
// (201) and the others answer 409 conflict; a device's hardware_id registers one device
// (201), which the others answer (200).
func uniqueAcrossProcesses(t *testing.T, c *central) {
	key := c.nodes[0].key()
	count := func(what string, answers []answer, created, other int, code string) map[string]any {
		t.Helper()
		var first map[string]any
		n := 0
		for i, a := range answers {
			switch {
			case a.status == created:
				n++
				first = a.body
			case a.status != other || (code != "" && a.body["error"] != code):
				t.Fatalf("%s: request %d answered %d %v", what, i, a.status, a.body)
			}
		}
		if n != 1 {
			t.Fatalf("%s: %d answered %d, want 1", what, n, created)
		}
		return first
	}
	zone := map[string]any{"code": "RACE-01", "name": "Race zone", "boundary": map[string]any{"type": "Polygon",
		"coordinates": [][][]float64{{{2.2, 48.8}, {2.4, 48.8}, {2.4, 49.0}, {2.2, 49.0}, {2.2, 48.8}}}}}
	count("20 POST /v1/zones of one code", c.together(t, 20, "POST", "/v1/zones", func(int) any { return zone }, key...),
		201, 409, "conflict")

	admin := c.nodes[0].login(t, "company_admin")
	user := map[string]any{"email": "race@demo.example", "name": "Race", "role": "field_operator", "password": "race password 123"}
	count("6 POST /v1/tenant/users of one email", c.together(t, 6, "POST", "/v1/tenant/users", func(int) any { return user }, admin...),
		201, 409, "conflict")

	op := c.nodes[0].login(t, "field_operator")
	var teamID string
	for _, tm := range list(t, c.nodes[0].served, "/v1/teams", key) {
		if tm["name"] == "SAMU Lyon 1" {
			teamID, _ = tm["id"].(string)
		}
	}
	reg := map[string]any{"name": "race tablet", "platform": "android", "team_id": teamID, "hardware_id": "imei-race"}
	answers := c.together(t, 20, "POST", "/v1/devices/register", func(int) any { return reg }, op...)
	dev := count("20 POST /v1/devices/register of one hardware_id", answers, 201, 200, "")
	for i, a := range answers {
		if a.body["device_id"] != dev["device_id"] {
			t.Fatalf("register %d: device %v, another answer %v", i, a.body["device_id"], dev["device_id"])
		}
	}
}

// deviceSequencesAcrossProcesses: the same device item (device_id,
// sequence_number) sent at once to both processes is applied once; the other answers say
// duplicate, and the item's event exists once.
func deviceSequencesAcrossProcesses(t *testing.T, c *central) {
	a := c.nodes[0]
	op := a.login(t, "field_operator")
	var teamID string
	for _, tm := range list(t, a.served, "/v1/teams", a.key()) {
		if tm["name"] == "SAMU Lyon 1" { // the operator's team
			teamID, _ = tm["id"].(string)
		}
	}
	status, _, body := a.call(t, "POST", "/v1/devices/register", map[string]any{"name": "tablet", "platform": "android",
		"team_id": teamID, "hardware_id": "imei-central-1"}, op...)
	expect(t, "register", status, 201, body)
	deviceID := body["device_id"].(string)
	captured := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339Nano)

	for seq := 1; seq <= 3; seq++ {
		item := map[string]any{"sequence_number": seq, "kind": "event", "captured_at": captured,
			"payload": map[string]any{"type": "FLOOD", "priority": "high", "vertical": "emergency",
				"idempotency_key": fmt.Sprintf("device-central-%d", seq)}}
		answers := c.together(t, 10, "POST", "/v1/devices/sync", func(int) any {
			return map[string]any{"device_id": deviceID, "items": []any{item}}
		}, op...)
		applied := 0
		for i, ans := range answers {
			if ans.status != 200 {
				t.Fatalf("sequence %d, request %d: %d %v", seq, i, ans.status, ans.body)
			}
			res := ans.body["results"].([]any)
			switch st := res[0].(map[string]any)["status"]; st {
			case "applied":
				applied++
			case "duplicate":
			default:
				t.Fatalf("sequence %d, request %d: item %v", seq, i, res[0])
			}
			if ans.body["applied_through"] != float64(seq) {
				t.Fatalf("sequence %d, request %d: applied_through %v", seq, i, ans.body["applied_through"])
			}
		}
		if applied != 1 {
			t.Fatalf("sequence %d sent 10 times over both processes was applied %d times", seq, applied)
		}
	}
	for _, n := range c.nodes {
		mine := 0
		for _, ev := range list(t, n.served, "/v1/events", n.key()) {
			if ev["device_id"] == deviceID {
				mine++
			}
		}
		if mine != 3 {
			t.Fatalf("%d events of the device from 3 device items, want 3", mine)
		}
	}
}
