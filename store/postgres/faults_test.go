package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
)

// TestDatabaseOutage: while PostgreSQL is stopped, transactions and rate-window takes
// fail at once as unavailable (with a Retry-After); once it is back, the same store
// works again without being reopened, and every write it committed before is there.
func TestDatabaseOutage(t *testing.T) {
	pg := pgtest.Own(t)
	db := open(t, pg.URL(t))
	ctx := context.Background()
	tn := model.NewID()
	update(t, db, func(tx model.Tx) error {
		return tx.PutTenant(&model.Tenant{ID: tn, Name: "Acme", Slug: "acme", Status: "active"})
	})
	update(t, db, func(tx model.Tx) error { return tx.PutMeta("before", []byte("outage")) })

	pg.Stop(t)
	for i, op := range []func() error{
		func() error { return db.View(ctx, func(tx model.Tx) error { _, err := tx.Meta("before"); return err }) },
		func() error {
			return db.Update(ctx, func(tx model.Tx) error { return tx.PutMeta("during", []byte("x")) })
		},
		func() error { _, err := db.TakeRate(ctx, tn, time.Now().Truncate(time.Minute), 1); return err },
	} {
		began := time.Now()
		err := op()
		if took := time.Since(began); took > 3*time.Second {
			t.Errorf("op %d took %v with the database down", i, took)
		}
		var me *model.Error
		if !errors.As(err, &me) || me.Kind != model.KindUnavailable || me.RetryAfter <= 0 {
			t.Fatalf("op %d with the database down: %v, want unavailable with a Retry-After", i, err)
		}
	}

	pg.Start(t)
	// The pool's connections died with the server: the first transaction after it
	// gets a new one.
	var got []byte
	if err := db.View(ctx, func(tx model.Tx) (err error) { got, err = tx.Meta("before"); return err }); err != nil || string(got) != "outage" {
		t.Fatalf("after the restart: %q, %v", got, err)
	}
	update(t, db, func(tx model.Tx) error { return tx.PutMeta("after", []byte("y")) })
	if _, err := db.TakeRate(ctx, tn, time.Now().Truncate(time.Minute), 1); err != nil {
		t.Fatal(err)
	}
}

// TestConnectionLost: connections of the pool that the server closed (a restart, a
// failover, an administrator) fail the transaction that finds them, which runs again
// once on a new connection: the caller sees no error.
func TestConnectionLost(t *testing.T) {
	url := pgtest.URL(t)
	a, b := open(t, url), open(t, url)
	ctx := context.Background()
	update(t, a, func(tx model.Tx) error { return tx.PutMeta("k", []byte("v")) })
	for range 3 {
		var n int
		if err := b.Pool().QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n); err != nil || n == 0 {
			t.Fatalf("terminating a's connections: %d, %v", n, err)
		}
		// At once: the pool pings a connection only after a second idle.
		var got []byte
		if err := a.View(ctx, func(tx model.Tx) (err error) { got, err = tx.Meta("k"); return err }); err != nil || string(got) != "v" {
			t.Fatalf("after the connections were cut: %q, %v", got, err)
		}
	}
}
