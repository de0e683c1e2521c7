package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// within polls check every 10 ms until it reports true, failing the test when a second
// passes first (issue 17: a change through one process is in force on every other within
// 1 s).
func within(t *testing.T, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 1 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCentral_KeyRevokedEverywhere: an API key revoked through one process is refused at
// once by it and within 1 s by the other, which had it cached.
func TestCentral_KeyRevokedEverywhere(t *testing.T) {
	bin := binary(t)
	c := serveCentral(t, bin, 2)
	a, b := c.nodes[0], c.nodes[1]
	admin := a.login(t, "company_admin")
	status, _, created := a.call(t, "POST", "/v1/tenant/api-keys", map[string]any{"name": "feed"}, admin...)
	expect(t, "POST /v1/tenant/api-keys", status, 201, created)
	key := []string{"x-svc-api-key", created["api_key"].(string)}
	id := created["key"].(map[string]any)["id"].(string)
	for _, n := range c.nodes { // each process caches the key
		status, _, body := n.call(t, "GET", "/v1/events", nil, key...)
		expect(t, "GET /v1/events with the new key", status, 200, body)
	}
	status, _, body := a.call(t, "DELETE", "/v1/tenant/api-keys/"+id, nil, admin...)
	if status != 200 && status != 204 {
		t.Fatalf("DELETE /v1/tenant/api-keys/:id: %d %v", status, body)
	}
	if status, _, body := a.call(t, "GET", "/v1/events", nil, key...); status != 401 {
		t.Fatalf("the revoking process still takes the key: %d %v", status, body)
	}
	within(t, "the key refused by the other process", func() bool {
		status, _, _ := b.call(t, "GET", "/v1/events", nil, key...)
		return status == 401
	})
}

// TestCentral_UserSuspendedEverywhere: a user suspended through one process can no longer
// use its token on the other within 1 s.
func TestCentral_UserSuspendedEverywhere(t *testing.T) {
	bin := binary(t)
	c := serveCentral(t, bin, 2)
	a, b := c.nodes[0], c.nodes[1]
	admin := a.login(t, "company_admin")
	sup := b.login(t, "operational_supervisor")
	status, _, body := b.call(t, "GET", "/v1/events", nil, sup...)
	expect(t, "GET /v1/events as the supervisor", status, 200, body)

	status, _, users := a.call(t, "GET", "/v1/tenant/users", nil, admin...)
	expect(t, "GET /v1/tenant/users", status, 200, users)
	var id string
	for _, u := range users["data"].([]any) {
		if u := u.(map[string]any); u["rbac_level"] == "operational_supervisor" {
			id = u["id"].(string)
		}
	}
	status, _, body = a.call(t, "PATCH", "/v1/tenant/users/"+id, map[string]any{"status": "suspended"}, admin...)
	expect(t, "PATCH /v1/tenant/users/:id", status, 200, body)
	within(t, "the suspended user refused by the other process", func() bool {
		status, _, _ := b.call(t, "GET", "/v1/events", nil, sup...)
		return status == 401
	})
}

// sse is a client of GET /v1/stream: its messages arrive on msgs.
type sse struct {
	msgs   chan sseMsg
	cancel context.CancelFunc
}

type sseMsg struct {
	id, name string
	data     map[string]any
	raw      string // the data as sent
}

// stream opens GET /v1/stream on a process with the headers (name, value pairs).
func stream(t *testing.T, n *demoNode, headers ...string) *sse {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", n.base+"/v1/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if res.StatusCode != 200 {
		cancel()
		t.Fatalf("GET /v1/stream: %d", res.StatusCode)
	}
	s := &sse{msgs: make(chan sseMsg, 1000), cancel: cancel}
	t.Cleanup(func() { cancel(); res.Body.Close() })
	go func() {
		defer close(s.msgs)
		sc := bufio.NewScanner(res.Body)
		var m sseMsg
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if m.name != "" {
					s.msgs <- m
				}
				m = sseMsg{}
			case strings.HasPrefix(line, "id: "):
				m.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				m.name = line[7:]
			case strings.HasPrefix(line, "data: "):
				m.raw = line[6:]
				_ = json.Unmarshal([]byte(m.raw), &m.data)
			}
		}
	}()
	return s
}

// next returns the next message named name (others are skipped), failing after d.
func (s *sse) next(t *testing.T, name string, d time.Duration) sseMsg {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case m, ok := <-s.msgs:
			if !ok {
				t.Fatalf("the stream ended before a %s", name)
			}
			if m.name == name {
				return m
			}
		case <-timeout:
			t.Fatalf("no %s within %s", name, d)
		}
	}
}

// seqOf reads the number of a stream id of the PostgreSQL store ("db-<seq>").
func seqOf(t *testing.T, id string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(strings.TrimPrefix(id, "db-"), 10, 64)
	if err != nil || !strings.HasPrefix(id, "db-") {
		t.Fatalf("stream id %q is not db-<seq>", id)
	}
	return n
}

// postEvent posts an event through a process and returns its id.
func postEvent(t *testing.T, n *demoNode, key string) string {
	t.Helper()
	status, _, ev := n.call(t, "POST", "/v1/events", map[string]any{"type": "FIRE", "priority": "low",
		"vertical": "emergency", "idempotency_key": key}, n.key()...)
	expect(t, "POST /v1/events", status, 201, ev)
	return ev["event_id"].(string)
}

// TestCentral_StreamAcrossProcesses: the stream of one process shows, within 1 s, an event
// posted to the other; a client that read an id on one resumes with it on the other and
// gets the changes after it, in order, and only those, and the same bytes again after the
// events changed (docs/decisions/0227-event-stored-once.md).
func TestCentral_StreamAcrossProcesses(t *testing.T) {
	bin := binary(t)
	c := serveCentral(t, bin, 2)
	a, b := c.nodes[0], c.nodes[1]
	onB := stream(t, b, b.key()...)
	if m := onB.next(t, "ready", 5*time.Second); m.data["resumed"] != false {
		t.Fatalf("ready: %v", m.data)
	}
	e1 := postEvent(t, a, "feed-1")
	m := onB.next(t, "event.created", time.Second)
	if m.data["event_id"] != e1 || m.id == "" {
		t.Fatalf("the stream of the other process showed %s %v, want event.created of %s", m.id, m.data, e1)
	}
	x := m.id
	onB.cancel()

	e2, e3 := postEvent(t, b, "feed-2"), postEvent(t, a, "feed-3")
	onA := stream(t, a, append(a.key(), "Last-Event-ID", x)...)
	if m := onA.next(t, "ready", 5*time.Second); m.data["resumed"] != true {
		t.Fatalf("ready on resume: %v", m.data)
	}
	var got, raw []string
	last := seqOf(t, x)
	for len(got) < 2 {
		m := onA.next(t, "event.created", 2*time.Second)
		if seqOf(t, m.id) <= last {
			t.Fatalf("ids out of order: %s after %d", m.id, last)
		}
		got, raw, last = append(got, m.data["event_id"].(string)), append(raw, m.raw), seqOf(t, m.id)
	}
	if got[0] != e2 || got[1] != e3 {
		t.Fatalf("resumed after %s on the other process: %v, want [%s %s] (e1 %s)", x, got, e2, e3, e1)
	}
	onA.cancel()

	// e2 closed: a resume from the same id tells its creation in the same bytes as before.
	status, _, body := a.call(t, "POST", "/v1/events/"+e2+"/close", map[string]any{"disposition": "resolved"}, a.key()...)
	expect(t, "POST /v1/events/"+e2+"/close", status, 200, body)
	again := stream(t, b, append(b.key(), "Last-Event-ID", x)...)
	again.next(t, "ready", 5*time.Second)
	for i := range raw {
		if m := again.next(t, "event.created", 2*time.Second); m.raw != raw[i] {
			t.Fatalf("event.created of %s after a change of the event:\n%s\nwas first sent as\n%s", got[i], m.raw, raw[i])
		}
	}

	// An id that the database never gave is not resumed: the client is told to reload.
	bogus := stream(t, b, append(b.key(), "Last-Event-ID", "db-99999999999999999")...)
	if m := bogus.next(t, "ready", 5*time.Second); m.data["resumed"] != false {
		t.Fatalf("ready for an unknown id: %v", m.data)
	}
	bogus.next(t, "reset", time.Second)
}

// TestCentral_TenantSuspendedByAdminCommand: a tenant suspended by `fieldrelay tenant
// suspend --database` (no serving process involved) is refused by every process within 1 s.
func TestCentral_TenantSuspendedByAdminCommand(t *testing.T) {
	bin := binary(t)
	c := serveCentral(t, bin, 2)
	status, _, me := c.nodes[0].call(t, "GET", "/v1/tenant/me", nil, c.nodes[0].key()...)
	expect(t, "GET /v1/tenant/me", status, 200, me)
	slug, _ := me["slug"].(string)
	if slug == "" {
		t.Fatalf("GET /v1/tenant/me: no slug in %v", me)
	}
	for _, n := range c.nodes { // each process caches the key and its tenant
		status, _, body := n.call(t, "GET", "/v1/events", nil, n.key()...)
		expect(t, "GET /v1/events", status, 200, body)
	}
	mustRun(t, bin, "", "tenant", "suspend", "--database", c.url, slug)
	for i, n := range c.nodes {
		var last int
		var body map[string]any
		within(t, "process "+strconv.Itoa(i+1)+" refusing the suspended tenant", func() bool {
			last, _, body = n.call(t, "GET", "/v1/events", nil, n.key()...)
			return last != 200
		})
		if last != 403 {
			t.Fatalf("process %d: a suspended tenant's request: %d %v", i+1, last, body)
		}
	}
}
