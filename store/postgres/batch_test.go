package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
)

// The group commit of Batch (batch.go): the calls queued while the committer is busy
// commit in one transaction; a call that fails fails alone, a panic becomes its error,
// and every caller runs its own OnCommit hooks.
func TestBatchGroupCommit(t *testing.T) {
	// Hold the committer with a first call, queue the others.
	db := open(t, pgtest.URL(t))
	tn := model.NewID()
	update(t, db, func(tx model.Tx) error {
		return tx.PutTenant(&model.Tenant{ID: tn, Name: "Acme", Slug: "acme-" + tn[:8], Status: "active"})
	})

	held, release := make(chan struct{}), make(chan struct{})
	var released sync.Once
	// Before the store's Close (cleanups run last first), which waits for the committer.
	t.Cleanup(func() { released.Do(func() { close(release) }) })
	first := make(chan error, 1)
	go func() {
		first <- db.Batch(context.Background(), tn, func(tx model.Tx) error {
			select {
			case <-held:
			default:
				close(held)
			}
			<-release
			return tx.PutMeta("first", []byte("1"))
		})
	}()
	<-held

	const n = 12
	type result struct {
		err   error
		txid  int64
		hooks int
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &results[i]
			r.err = db.Batch(context.Background(), tn, func(tx model.Tx) error {
				r.hooks = 0
				tx.OnCommit(func() { r.hooks++ })
				id, err := postgres.TxID(tx)
				if err != nil {
					return err
				}
				r.txid = id
				if err := tx.PutMeta(fmt.Sprintf("k%d", i), []byte("v")); err != nil {
					return err
				}
				switch i {
				case 4: // fails after writing: its write is undone, the others commit
					return errors.New("call 4 refused")
				case 7:
					panic("call 7 broke")
				}
				return nil
			})
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for db.QueuedBatches() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls queued, want %d", db.QueuedBatches(), n)
		}
		time.Sleep(time.Millisecond)
	}
	released.Do(func() { close(release) })
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	groups := map[int64]int{}
	for i, r := range results {
		switch i {
		case 4:
			if r.err == nil || r.err.Error() != "call 4 refused" {
				t.Errorf("call 4 = %v, want its own error as it is", r.err)
			}
		case 7:
			if r.err == nil || !strings.Contains(r.err.Error(), "call 7 broke") {
				t.Errorf("call 7 = %v, want its panic as an error", r.err)
			}
		default:
			if r.err != nil {
				t.Errorf("call %d = %v", i, r.err)
			}
			if r.hooks != 1 {
				t.Errorf("call %d: its OnCommit hook ran %d times, want 1", i, r.hooks)
			}
			groups[r.txid]++
		}
	}
	if len(groups) != 1 {
		t.Errorf("the %d calls that succeeded committed in %d transactions, want 1: %v", n-2, len(groups), groups)
	}
	err := db.View(context.Background(), func(tx model.Tx) error {
		for i := range n {
			v, err := tx.Meta(fmt.Sprintf("k%d", i))
			if err != nil {
				return err
			}
			if want := i != 4 && i != 7; (v != nil) != want {
				t.Errorf("k%d stored = %q, want stored: %v", i, v, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestBatchGroupsByTenant: a group holds the calls of one tenant. While a group of one
// tenant is held, the call of another tenant commits in a transaction of its own, and
// the calls of the held tenant wait for it and then commit together.
func TestBatchGroupsByTenant(t *testing.T) {
	db := open(t, pgtest.URL(t))
	a, b := model.NewID(), model.NewID()
	for _, tn := range []string{a, b} {
		update(t, db, func(tx model.Tx) error {
			return tx.PutTenant(&model.Tenant{ID: tn, Name: "T", Slug: "t-" + tn[len(tn)-12:], Status: "active"})
		})
	}
	held, release := make(chan struct{}), make(chan struct{})
	var released sync.Once
	t.Cleanup(func() { released.Do(func() { close(release) }) })
	txids := make(chan int64, 8)
	call := func(tn, key string, hold bool) chan error {
		done := make(chan error, 1)
		go func() {
			done <- db.Batch(context.Background(), tn, func(tx model.Tx) error {
				if _, err := tx.Zones(tn); err != nil { // a read of the tenant: its lock
					return err
				}
				id, err := postgres.TxID(tx)
				if err != nil {
					return err
				}
				if hold {
					select {
					case <-held:
					default:
						close(held)
					}
					<-release
				}
				txids <- id
				return tx.PutMeta(key, []byte("v"))
			})
		}()
		return done
	}
	first := call(a, "a0", true)
	<-held
	queued := []chan error{call(a, "a1", false), call(a, "a2", false)}
	deadline := time.Now().Add(10 * time.Second)
	for db.QueuedBatches() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls queued, want 2", db.QueuedBatches())
		}
		time.Sleep(time.Millisecond)
	}
	if err := <-call(b, "b0", false); err != nil {
		t.Fatalf("tenant b's call while tenant a's group is held: %v", err)
	}
	bID := <-txids
	released.Do(func() { close(release) })
	for _, c := range append([]chan error{first}, queued...) {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	aIDs := map[int64]int{}
	for range 3 {
		aIDs[<-txids]++
	}
	if aIDs[bID] != 0 {
		t.Errorf("tenant b's call shared a transaction with tenant a's: %v / %d", aIDs, bID)
	}
	if len(aIDs) != 2 {
		// The held call's group, then the two calls queued behind it together.
		t.Errorf("tenant a's three calls committed in %d transactions, want 2: %v", len(aIDs), aIDs)
	}
}
