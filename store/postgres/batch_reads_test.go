package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
)

// TestBatchGroupReadsOnce (docs/decisions/0231-group-reads.md,
// docs/decisions/0232-begin-commit-pipelined.md): the idempotency replies that the calls of
// a group declare, and the tenant's stream head, are read for the whole group with the
// tenant's lock, so a group of n ingests takes a bounded number of round trips, not one a
// call; and what they answer is what each call's own read would: a reply stored before,
// none for a new key, and, for a key two calls of the group share, the reply the first of
// them wrote. The group's stream changes follow the tenant's earlier one without a gap.
func TestBatchGroupReadsOnce(t *testing.T) {
	ctx := context.Background()
	// Two connections: one committer, so the group queues behind a held call.
	db, rec := openRecorded(t)
	a, b := model.NewID(), model.NewID()
	now := time.Now()
	update(t, db, func(tx model.Tx) error {
		for i, tn := range []string{a, b} {
			if err := tx.PutTenant(&model.Tenant{ID: tn, Name: "Acme", Slug: fmt.Sprintf("reads-%d-%s", i, tn[:8]), Status: "active"}); err != nil {
				return err
			}
		}
		if err := db.AppendChange(tx, a, model.Change{Name: "event.created", Perm: model.PermEventsRead, Data: json.RawMessage(`{}`), At: model.At(now)}); err != nil {
			return err
		}
		return tx.PutEventReply(a, "old", &model.IdempotencyRecord{Reply: model.Reply{Status: 201, Body: []byte(`{"old":true}`)}, CreatedAt: model.At(now)})
	})

	held, release := make(chan struct{}), make(chan struct{})
	var released sync.Once
	t.Cleanup(func() { released.Do(func() { close(release) }) })
	first := make(chan error, 1)
	go func() {
		first <- db.Batch(ctx, b, func(model.Tx) error {
			select {
			case <-held:
			default:
				close(held)
			}
			<-release
			return nil
		})
	}()
	<-held

	const n = 16
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("k-%d", i)
	}
	keys[n-2], keys[n-1] = "old", "k-3"
	type result struct {
		err     error
		replay  []byte
		written bool
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i, key := range keys {
		wg.Go(func() {
			r := &results[i]
			r.err = db.Batch(model.WithBatchReads(ctx, model.BatchReads{EventReplyKey: key}), a, func(tx model.Tx) error {
				r.replay, r.written = nil, false
				got, err := tx.EventReply(a, key)
				if err != nil || got != nil {
					if got != nil {
						r.replay = got.Body
					}
					return err
				}
				ev := &model.Event{ID: model.NewIDAt(now), Type: "fire", Priority: model.PriorityLow, Vertical: "emergency",
					Payload: json.RawMessage(`{}`), Status: model.EventPending, ChannelsAttempted: []string{},
					Source: "api", IdempotencyKey: key, CreatedAt: model.At(now), UpdatedAt: model.At(now)}
				if err := tx.PutEvent(a, ev); err != nil {
					return err
				}
				r.written = true
				if err := db.AppendChange(tx, a, model.Change{Name: "event.created", Perm: model.PermEventsRead,
					Data: json.RawMessage(`{"key":"` + key + `"}`), At: model.At(now)}); err != nil {
					return err
				}
				return tx.PutEventReply(a, key, &model.IdempotencyRecord{Reply: model.Reply{Status: 201, Body: []byte(`{"key":"` + key + `"}`)}, CreatedAt: model.At(now)})
			})
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for db.QueuedBatches() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls queued, want %d", db.QueuedBatches(), n)
		}
		time.Sleep(time.Millisecond)
	}
	recorded := rec.record(func() {
		released.Do(func() { close(release) })
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	})
	rec.mu.Lock()
	stmts, trips := len(recorded), rec.trips
	rec.mu.Unlock()

	shared := 0
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("call %d (%s): %v", i, keys[i], r.err)
		}
		switch {
		case keys[i] == "old":
			if string(r.replay) != `{"old":true}` || r.written {
				t.Errorf("the call of a key with a stored reply read %q (wrote: %v), want the stored reply", r.replay, r.written)
			}
		case keys[i] == "k-3":
			if r.written {
				shared++
			} else if string(r.replay) != `{"key":"k-3"}` {
				t.Errorf("a call of key k-3 read %q, want the reply the other call of the group wrote", r.replay)
			}
		case !r.written:
			t.Errorf("the call of the new key %s read %q instead of writing", keys[i], r.replay)
		}
	}
	if shared != 1 {
		t.Errorf("%d calls of key k-3 wrote, want 1", shared)
	}
	// The replies, written in multi-row statements (docs/decisions/0233-multi-row-writes.md),
	// are each stored.
	if err := db.View(ctx, func(tx model.Tx) error {
		for _, key := range keys[:n-2] {
			r, err := tx.EventReply(a, key)
			if err != nil {
				return err
			}
			if r == nil || string(r.Body) != `{"key":"`+key+`"}` {
				t.Errorf("the reply of %s reads %v", key, r)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	changes, _, err := db.ChangesAfter(ctx, a, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != n-1 {
		t.Errorf("%d stream changes, want %d (the first, then one a new key)", len(changes), n-1)
	}
	for i, c := range changes {
		if c.Seq != uint64(i+1) {
			t.Errorf("stream change %d has seq %d, want %d", i, c.Seq, i+1)
		}
	}
	// The held call's commit, then the group: the BEGIN with the lock and the reads, the
	// queued writes with the COMMIT.
	t.Logf("a group of %d ingests: %d round trips, %d statements", n, trips, stmts)
	if trips > 3 {
		t.Errorf("a group of %d ingests took %d round trips, want at most 3 (one round trip a call: the replies were read one by one)", n, trips)
	}
}

// TestTransactionRoundTrips: a transaction's BEGIN goes out with its first statement and
// its COMMIT with its last writes, not in round trips of their own: a write transaction
// that reads once (its tenant's lock) and then writes takes two round trips, a read-only
// one that reads once two (the read, the commit).
func TestTransactionRoundTrips(t *testing.T) {
	ctx := context.Background()
	db, rec := openRecorded(t)
	tn := model.NewID()
	update(t, db, func(tx model.Tx) error {
		return tx.PutTenant(&model.Tenant{ID: tn, Name: "Acme", Slug: "trips-" + tn[:8], Status: "active"})
	})
	now := time.Now()
	ev := &model.Event{ID: model.NewIDAt(now), Type: "fire", Priority: model.PriorityLow, Vertical: "emergency",
		Payload: json.RawMessage(`{}`), Status: model.EventPending, ChannelsAttempted: []string{},
		Source: "api", CreatedAt: model.At(now), UpdatedAt: model.At(now)}
	rec.record(func() {
		update(t, db, func(tx model.Tx) error {
			if err := tx.PutEvent(tn, ev); err != nil { // the tenant's lock first, then queued
				return err
			}
			return tx.PutEventReply(tn, "k", &model.IdempotencyRecord{Reply: model.Reply{Status: 201, Body: []byte(`{}`)}, CreatedAt: model.At(now)})
		})
	})
	if rec.trips != 2 {
		t.Errorf("a write transaction of a read and two writes took %d round trips, want 2", rec.trips)
	}
	rec.record(func() {
		if err := db.View(ctx, func(tx model.Tx) error {
			_, err := tx.Event(tn, ev.ID)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	})
	if rec.trips != 2 {
		t.Errorf("a read-only transaction of one read took %d round trips, want 2", rec.trips)
	}
}

// openRecorded opens a store of two connections on a fresh database whose round trips and
// statements rec records.
func openRecorded(t *testing.T) (*postgres.DB, *recorder) {
	t.Helper()
	rec := &recorder{}
	db, err := postgres.Open(context.Background(), pgtest.URL(t), postgres.Options{MaxConns: 2, SecretKey: pgtest.SecretKey(), Tracer: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db, rec
}
