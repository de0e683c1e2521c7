package store_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store"
)

// TestDB_Space: below MinFree, Update and Batch answer DiskFull at once (an unavailable
// with Retry-After) without running their function, reads go on, Space says why, and
// writes are taken again as soon as a probe finds room; each change of state is told once.
func TestDB_Space(t *testing.T) {
	var free atomic.Int64
	free.Store(100 << 20)
	var mu sync.Mutex
	var changes []model.Space
	db, err := store.Open(t.TempDir(), store.Options{Space: store.SpaceOptions{MinFree: 10 << 20, WarnFree: 50 << 20,
		ProbeEvery: time.Nanosecond, // every write probes
		Probe:      func(string) (int64, error) { return free.Load(), nil },
		OnChange: func(s model.Space) {
			mu.Lock()
			changes = append(changes, s)
			mu.Unlock()
		}}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	put := func(tx model.Tx) error { return tx.PutMeta("k", []byte("v")) }
	if err := db.Update(ctx, put); err != nil {
		t.Fatalf("a write with room: %v", err)
	}
	if s := db.Space(); s.Full || s.Low || s.FreeBytes != 100<<20 {
		t.Fatalf("Space with room: %+v", s)
	}

	free.Store(30 << 20)
	if err := db.Update(ctx, put); err != nil {
		t.Fatalf("a write below WarnFree: %v", err)
	}
	if s := db.Space(); s.Full || !s.Low {
		t.Fatalf("Space below WarnFree: %+v", s)
	}

	free.Store(1 << 20)
	ran := false
	for name, write := range map[string]func(context.Context, func(model.Tx) error) error{"Update": db.Update,
		"Batch": func(ctx context.Context, fn func(model.Tx) error) error { return db.Batch(ctx, "", fn) }} {
		err := write(ctx, func(tx model.Tx) error { ran = true; return put(tx) })
		var e *model.Error
		if !model.IsKind(err, model.KindUnavailable) || !errors.As(err, &e) || e.RetryAfter != model.DiskFullRetryAfter {
			t.Fatalf("%s below MinFree: %v, want unavailable with Retry-After", name, err)
		}
	}
	if ran {
		t.Fatal("a refused write ran its function")
	}
	if s := db.Space(); !s.Full || !s.Low {
		t.Fatalf("Space below MinFree: %+v", s)
	}
	if err := db.View(ctx, func(tx model.Tx) error { _, err := tx.Meta("k"); return err }); err != nil {
		t.Fatalf("a read on a full disk: %v", err)
	}

	free.Store(200 << 20)
	if err := db.Batch(ctx, "", put); err != nil {
		t.Fatalf("a write once space is back: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []model.Space{{FreeBytes: 30 << 20, Low: true}, {FreeBytes: 1 << 20, Low: true, Full: true}, {FreeBytes: 200 << 20}}
	if len(changes) != len(want) {
		t.Fatalf("changes told: %+v, want %+v", changes, want)
	}
	for i := range want {
		if changes[i] != want[i] {
			t.Fatalf("change %d: %+v, want %+v", i, changes[i], want[i])
		}
	}
}
