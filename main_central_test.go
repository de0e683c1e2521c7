package main

import (
	"testing"

	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
)

// TestMain starts the PostgreSQL cluster of the central-tier tests on first use and stops
// it when the tests end (pgtest skips them without PostgreSQL, and fails them under CI=true).
func TestMain(m *testing.M) { pgtest.Main(m) }

// central is a central tier for a test: n serve processes of the real binary sharing one
// fresh PostgreSQL database, each with its own --data directory, over plain HTTP.
type central struct {
	url   string // the database
	nodes []*demoNode
}

// serveCentral starts n processes on one new database; the first creates the demo tenant
// (--demo), whose credentials every node shares. extra flags go to every process.
func serveCentral(t *testing.T, bin string, n int, extra ...string) *central {
	t.Helper()
	return serveCentralOn(t, bin, pgtest.URL(t), n, extra...)
}

// serveCentralOn is serveCentral on a given database (one of a cluster of the test's own,
// pgtest.Own, that the test stops and starts).
func serveCentralOn(t *testing.T, bin, url string, n int, extra ...string) *central {
	t.Helper()
	c := &central{url: url}
	db := []string{"--database", c.url}
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
