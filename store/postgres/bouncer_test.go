package postgres_test

import (
	"context"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
	"github.com/fieldrelay/fieldrelay/store/storetest"
	"github.com/google/uuid"
)

// The store through PgBouncer in transaction mode (Debian's 1.18: no prepared statement
// outlives a transaction), docs/decisions/0220-notifications-fail-closed.md.

// openThrough opens a store whose pool goes through PgBouncer with the query mode mode and
// whose listener takes listen ("": the same URL).
func openThrough(t *testing.T, url, mode, listen string) *postgres.DB {
	t.Helper()
	through := withMode(t, pgtest.Bouncer(t, url), mode)
	db, err := postgres.Open(context.Background(), through, postgres.Options{MaxConns: 8, ListenURL: listen, SecretKey: pgtest.SecretKey()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// withMode sets the query mode of a URL ("": none).
func withMode(t *testing.T, raw, mode string) string {
	u, err := neturl.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("default_query_exec_mode")
	if mode != "" {
		q.Set("default_query_exec_mode", mode)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// TestConformanceThroughPgBouncer: the conformance suite through PgBouncer, in the mode
// the docs name and in exec (JSON sent as text), the listener connected directly.
func TestConformanceThroughPgBouncer(t *testing.T) {
	for _, mode := range []string{pgtest.PgBouncerMode, "exec"} {
		t.Run(mode, func(t *testing.T) {
			storetest.Conformance(t, func(t *testing.T) model.Store {
				url := pgtest.URL(t)
				return openThrough(t, url, mode, url)
			})
		})
	}
}

// TestPgBouncerWithoutMode: the URL without a query mode through PgBouncer fails at Open
// (pgx's prepared statements meet each other's names on PgBouncer's server sessions) and the
// error names the option to add; or it opens, and then works.
func TestPgBouncerWithoutMode(t *testing.T) {
	url := pgtest.URL(t)
	through := withMode(t, pgtest.Bouncer(t, url), "")
	var errs []error
	for range 4 {
		db, err := postgres.Open(context.Background(), through, postgres.Options{MaxConns: 4, ListenURL: url, SecretKey: pgtest.SecretKey()})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		t.Cleanup(func() { _ = db.Close() })
	}
	for _, err := range errs {
		if !strings.Contains(err.Error(), "default_query_exec_mode=cache_describe") {
			t.Fatalf("Open through PgBouncer without a query mode: %v, want the option named", err)
		}
	}
}

// TestNotificationsThroughPgBouncer: a listener behind PgBouncer hears nothing; the
// heartbeats say so within BeatLate, and the versions are then never trusted (a change
// through another handle is in force at once); a listener connected directly hears them.
func TestNotificationsThroughPgBouncer(t *testing.T) {
	url := pgtest.URL(t)
	direct := openThrough(t, url, pgtest.PgBouncerMode, url)
	cut := openThrough(t, url, pgtest.PgBouncerMode, "")
	if why := direct.NotificationsDown(); why != "" {
		t.Fatalf("the listener connected directly: notifications down: %s", why)
	}
	deadline := time.Now().Add(postgres.BeatLate + time.Second)
	for cut.NotificationsDown() == "" {
		if time.Now().After(deadline) {
			t.Fatalf("the listener behind PgBouncer: notifications not said down within %s", postgres.BeatLate+time.Second)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if why := cut.NotificationsDown(); !strings.Contains(why, "heartbeat") {
		t.Fatalf("reason: %q", why)
	}
	id := uuid.NewString()
	if v1, v2 := cut.Version(id), cut.Version(id); v1 == v2 {
		t.Fatalf("notifications down, yet the version is trusted (%d twice)", v1)
	}
	// The other way: changes through cut reach direct's caches.
	putTenant(t, direct, id, "active")
	v := direct.Version(id)
	putTenant(t, cut, id, "suspended")
	waitVersion(t, "a change through the handle behind PgBouncer", func() uint64 { return direct.Version(id) }, v)
}
