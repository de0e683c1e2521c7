package e2e

import (
	"io"
	"net"
	neturl "net/url"
	"sync"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/store/postgres"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
)

// The central tier through PgBouncer when the notifications do not flow: revocation fails
// closed within the bound of docs/decisions/0220-notifications-fail-closed.md (no heartbeat
// for postgres.BeatLate, checked every quarter second).

// notifyBound is how soon a change through one process is in force on another whose
// listener hears nothing: BeatLate and one check, with slack for a loaded machine.
const notifyBound = postgres.BeatLate + time.Second

// blackhole forwards TCP connections to a target until cut, then drops every byte both
// ways without closing anything: a network that goes silent.
type blackhole struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
}

// newBlackhole starts a forwarder to target on a loopback port, closed at the end of the
// test.
func newBlackhole(t *testing.T, target string) *blackhole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackhole{ln: ln, target: target}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go b.forward(c)
		}
	}()
	return b
}

func (b *blackhole) forward(c net.Conn) {
	s, err := net.Dial("tcp", b.target)
	if err != nil {
		_ = c.Close()
		return
	}
	go b.copy(s, c)
	b.copy(c, s)
}

// copy copies from src to dst until src fails; once cut, what it reads goes nowhere.
func (b *blackhole) copy(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !b.isCut() {
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (b *blackhole) isCut() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cut
}

func (b *blackhole) silence() {
	b.mu.Lock()
	b.cut = true
	b.mu.Unlock()
}

// via returns raw with its host replaced by the blackhole's address.
func (b *blackhole) via(t *testing.T, raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = b.ln.Addr().String()
	return u.String()
}

// readyNotifications returns the notifications field of a process's /readyz.
func readyNotifications(t *testing.T, n *demoNode) (string, string) {
	t.Helper()
	status, _, body := n.call(t, "GET", "/readyz", nil)
	expect(t, "GET /readyz", status, 200, body)
	s, _ := body["notifications"].(string)
	r, _ := body["notifications_reason"].(string)
	return s, r
}

// TestCentral_KeyRevokedListenerCut: two processes through PgBouncer, the second's listener
// through a network that goes silent. While its heartbeats come back its caches are used
// (/readyz: notifications up); once silenced, a key revoked through the first process at
// that moment (its notification lost) is refused by the second within notifyBound, and
// /readyz and /metrics say the notifications are down.
func TestCentral_KeyRevokedListenerCut(t *testing.T) {
	bin := binary(t)
	url := pgtest.URL(t)
	app := servingRole(t, bin, url)
	pooled := pgtest.Bouncer(t, app)
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	hole := newBlackhole(t, u.Host)
	c := serveCentralVia(t, bin, url, pooled, 1, "--database-listen-url", app)
	a := c.nodes[0]
	b := &demoNode{served: serve(t, bin, t.TempDir(), false, "--database", pooled, "--database-listen-url", hole.via(t, app),
		"--internal-secret", "a-secret-of-sixteen-characters"), APIKey: a.APIKey, Users: a.Users}
	for _, n := range []*demoNode{a, b} {
		if st, why := readyNotifications(t, n); st != "up" {
			t.Fatalf("notifications %q (%s) on a process whose listener hears them", st, why)
		}
	}

	admin := a.login(t, "company_admin")
	status, _, created := a.call(t, "POST", "/v1/tenant/api-keys", map[string]any{"name": "cut"}, admin...)
	expect(t, "POST /v1/tenant/api-keys", status, 201, created)
	key := []string{"x-svc-api-key", created["api_key"].(string)}
	id := created["key"].(map[string]any)["id"].(string)
	for _, n := range []*demoNode{a, b} {
		status, _, body := n.call(t, "GET", "/v1/events", nil, key...)
		expect(t, "GET /v1/events with the new key", status, 200, body)
	}

	hole.silence()
	status, _, body := a.call(t, "DELETE", "/v1/tenant/api-keys/"+id, nil, admin...)
	if status != 200 && status != 204 {
		t.Fatalf("DELETE /v1/tenant/api-keys/:id: %d %v", status, body)
	}
	revoked := time.Now()
	for {
		status, _, _ := b.call(t, "GET", "/v1/events", nil, key...)
		if status == 401 {
			break
		}
		if time.Since(revoked) > notifyBound {
			t.Fatalf("the revoked key still works on the process whose listener hears nothing after %s", notifyBound)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("revoked key refused by the other process after %s with its listener cut", time.Since(revoked).Round(time.Millisecond))

	// The key may be refused before the heartbeats are late (a cache entry dropped when
	// the notifications came back after a moment of load): /readyz says down within the
	// bound all the same.
	for {
		st, why := readyNotifications(t, b)
		if st == "down" && why != "" {
			break
		}
		if time.Since(revoked) > notifyBound {
			t.Fatalf("/readyz of the process whose listener hears nothing: notifications %q (%q) after %s, want down with a reason", st, why, notifyBound)
		}
		time.Sleep(50 * time.Millisecond)
	}
	families, text := scrapeMetrics(t, b.served, "a-secret-of-sixteen-characters")
	f := families["fieldrelay_database_notifications_up"]
	if f == nil || len(f.GetMetric()) != 1 || f.GetMetric()[0].GetGauge().GetValue() != 0 {
		t.Fatalf("fieldrelay_database_notifications_up on the process whose listener hears nothing, want 0:\n%s", text)
	}
}
