package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
)

// central is a central tier for a test: n serve processes of the real binary sharing one
// fresh PostgreSQL database, each with its own --data directory, over plain HTTP.
type central struct {
	url   string // the database, reached directly (the admin commands' and the test's)
	nodes []*demoNode
}

// serveCentral starts n processes on one new database, as operators run them: through
// PgBouncer in transaction mode (Debian's, started by pgtest), with the query mode that
// docs/operations.md names and the listener of notifications on the database itself
// (--database-listen-url). The first creates the demo tenant (--demo), whose credentials
// every node shares. extra flags go to every process.
func serveCentral(t *testing.T, bin string, n int, extra ...string) *central {
	t.Helper()
	url := pgtest.URL(t)
	app := servingRole(t, bin, url)
	return serveCentralVia(t, bin, url, pgtest.Bouncer(t, app), n, append([]string{"--database-listen-url", app}, extra...)...)
}

// servingRole migrates the database of url as its owner with `fieldrelay migrate --grant`
// and returns url as pgtest.AppRole, neither superuser nor owner, as which the tier's
// processes serve (docs/decisions/0223-least-privilege.md).
func servingRole(t *testing.T, bin, url string) string {
	t.Helper()
	app := pgtest.AppURL(t, url) // the role first: --grant wants it
	mustRun(t, bin, "", "migrate", "--database", url, "--grant", pgtest.AppRole)
	return app
}

// serveCentralOn is serveCentral on a given database reached directly (one of a cluster of
// the test's own, pgtest.Own, that the test stops and starts), as the serving role too.
func serveCentralOn(t *testing.T, bin, url string, n int, extra ...string) *central {
	t.Helper()
	return serveCentralVia(t, bin, url, servingRole(t, bin, url), n, extra...)
}

// serveCentralVia starts n processes with --database via on the database url (the
// owner's: the admin commands' and the test's).
func serveCentralVia(t *testing.T, bin, url, via string, n int, extra ...string) *central {
	t.Helper()
	c := &central{url: url}
	db := []string{"--database", via, "--secret-key-file", secretKeyFile}
	first := serveDemo(t, bin, t.TempDir(), append(db, extra...)...)
	c.nodes = append(c.nodes, first)
	for range n - 1 {
		s := serve(t, bin, t.TempDir(), false, append(db, extra...)...)
		c.nodes = append(c.nodes, &demoNode{served: s, APIKey: first.APIKey, Users: first.Users})
	}
	return c
}

// TestCentral_SharedRecords: an event posted through one process is read through the other.
func TestCentral_SharedRecords(t *testing.T) {
	bin := binary(t)
	c := serveCentral(t, bin, 2)
	a, b := c.nodes[0], c.nodes[1]
	status, _, ev := a.call(t, "POST", "/v1/events", map[string]any{"type": "FIRE", "priority": "high",
		"vertical": "emergency", "idempotency_key": "central-1"}, a.key()...)
	expect(t, "POST /v1/events on node 1", status, 201, ev)
	status, _, got := b.call(t, "GET", "/v1/events/"+ev["event_id"].(string), nil, b.key()...)
	expect(t, "GET /v1/events/:id on node 2", status, 200, got)
}

// answer is a request's outcome as a goroutine records it (no t.Fatal off the test's
// goroutine).
type answer struct {
	status int
	header http.Header
	body   map[string]any
	took   time.Duration
	err    error
}

// request sends a JSON request with client and decodes the answer.
func request(ctx context.Context, client *http.Client, method, url string, body any, headers ...string) answer {
	var rd bytes.Buffer
	if body != nil {
		_ = json.NewEncoder(&rd).Encode(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, &rd)
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	began := time.Now()
	res, err := client.Do(req)
	if err != nil {
		return answer{err: err, took: time.Since(began)}
	}
	defer res.Body.Close()
	a := answer{status: res.StatusCode, header: res.Header}
	err = json.NewDecoder(res.Body).Decode(&a.body)
	a.took = time.Since(began)
	if err != nil {
		a.err = fmt.Errorf("%s %s: %d, the body is not JSON: %w", method, url, res.StatusCode, err)
	}
	return a
}
