package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
)

// TestCentral_StartsBeforeDatabase: serve --database started while PostgreSQL is down
// (a supervisor starting both) does not exit: /healthz answers 200, /readyz and the API
// 503 with Retry-After and the reason; once PostgreSQL starts, the process is ready by
// itself and serves (docs/decisions/0221-serve-before-database.md).
func TestCentral_StartsBeforeDatabase(t *testing.T) {
	bin := binary(t)
	pg := pgtest.Own(t)
	url := servingRole(t, bin, pg.URL(t))
	pg.Stop(t)
	data := t.TempDir()
	s := startAt(t, bin, data, freeAddr(t), false, "--database", url, "--demo")

	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := s.client.Get(s.base + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Fatalf("/healthz while the database is down: %d", res.StatusCode)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz does not answer while the database is down: %v\n%s", err, s.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, path := range []string{"/readyz", "/v1/events"} {
		a := s.send(t.Context(), "GET", path, nil)
		if a.err != nil || a.status != http.StatusServiceUnavailable || a.body["error"] != "unavailable" ||
			a.header.Get("Retry-After") == "" || !strings.Contains(a.body["message"].(string), "cannot open the database") {
			t.Fatalf("GET %s while the database is down: %d %v %v %v", path, a.status, a.body, a.header, a.err)
		}
	}

	pg.Start(t)
	began := time.Now()
	s.waitReady(t, data, false)
	t.Logf("ready %s after the database started", time.Since(began).Round(time.Millisecond))
	d := &demoNode{served: s}
	d.readCredentials(t, data)
	status, _, ev := d.call(t, "POST", "/v1/events", map[string]any{"type": "FIRE", "priority": "high",
		"vertical": "emergency", "idempotency_key": "after-start"}, d.key()...)
	expect(t, "POST /v1/events once the database is up", status, 201, ev)
}
