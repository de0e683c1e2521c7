package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
	"github.com/google/uuid"
)

// putTenant creates or changes a tenant through db.
func putTenant(t *testing.T, db *postgres.DB, id, status string) {
	t.Helper()
	err := db.Update(context.Background(), func(tx model.Tx) error {
		return tx.PutTenant(&model.Tenant{ID: id, Name: "T", Slug: "t-" + id[:8], Email: id[:8] + "@example.com",
			LicenseType: "pro", Status: status})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitVersion polls v until it differs from old, for at most a second.
func waitVersion(t *testing.T, what string, v func() uint64, old uint64) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for v() == old {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the version stayed %d for a second", what, old)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestVersionAcrossHandles: a directory change committed through one handle moves the
// versions of the tenant and of all tenants on another handle of the same database, at
// once on the first; a transaction that rolls back moves nothing elsewhere.
func TestVersionAcrossHandles(t *testing.T) {
	url := pgtest.URL(t)
	a, b := open(t, url), open(t, url)
	id := uuid.NewString()
	putTenant(t, a, id, "active")
	waitVersion(t, "tenant created through a", func() uint64 { return b.Version(id) }, 0)

	vb, vball, va := b.Version(id), b.Version(""), a.Version(id)
	other := uuid.NewString()
	vbOther := b.Version(other)
	putTenant(t, a, id, "suspended")
	if a.Version(id) == va {
		t.Fatal("the version on the handle that committed did not move at once")
	}
	waitVersion(t, "tenant suspended through a", func() uint64 { return b.Version(id) }, vb)
	waitVersion(t, "all tenants", func() uint64 { return b.Version("") }, vball)
	if b.Version(other) != vbOther {
		t.Fatal("another tenant's version moved")
	}

	// A rolled back change announces nothing: after a later committed change of another
	// tenant is seen, the first tenant's version has not moved.
	vb = b.Version(id)
	_ = a.Update(context.Background(), func(tx model.Tx) error {
		if err := tx.PutTenant(&model.Tenant{ID: id, Name: "T", Slug: "t-" + id[:8], Email: id[:8] + "@example.com",
			LicenseType: "pro", Status: "active"}); err != nil {
			return err
		}
		return model.Errorf(model.KindConflict, "roll back")
	})
	putTenant(t, a, other, "active")
	waitVersion(t, "another tenant", func() uint64 { return b.Version(other) }, vbOther)
	if b.Version(id) != vb {
		t.Fatal("a rolled back change moved the version on the other handle")
	}
}

// TestVersionListenerReconnects: when the listener's connection is cut, versions stop
// being trusted (each call a new number) until it is back, then every counter has moved,
// and changes through the other handle are seen again.
func TestVersionListenerReconnects(t *testing.T) {
	url := pgtest.URL(t)
	a, b := open(t, url), open(t, url)
	id := uuid.NewString()
	putTenant(t, a, id, "active")
	waitVersion(t, "tenant created through a", func() uint64 { return b.Version(id) }, 0)
	before := b.Version(id)

	// Cut b's listener: the session that LISTENs in b's database, seen from a.
	var n int
	err := a.Pool().QueryRow(context.Background(), `SELECT count(pg_terminate_backend(l.pid))
		FROM pg_stat_activity l WHERE l.datname = current_database() AND l.application_name = $1`,
		postgres.ListenerApplicationName).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("terminated %d listening sessions, want 2 (one per handle)", n)
	}
	// Down or back: either way the version is not the one before.
	deadline := time.Now().Add(3 * time.Second)
	for {
		v1, v2 := b.Version(id), b.Version(id)
		if v1 == v2 && v1 != before && v1 < 1<<63 {
			break // back, and bumped
		}
		if v1 == before && v1 == v2 {
			if time.Now().After(deadline) {
				t.Fatal("the listener was cut but the version stayed trusted")
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the listener did not come back within 3 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	vb := b.Version(id)
	putTenant(t, a, id, "suspended")
	waitVersion(t, "change after the reconnection", func() uint64 { return b.Version(id) }, vb)
}
