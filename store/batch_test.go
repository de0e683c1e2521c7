package store

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"

	bolt "go.etcd.io/bbolt"

	bolterrors "go.etcd.io/bbolt/errors"
)

// holdLoop makes the commit loop run a call that waits until the returned function is
// called, so that the calls made meanwhile queue up and form the next group.
func holdLoop(tb testing.TB, db *DB) (release func()) {
	tb.Helper()
	started, gate, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- db.Batch(context.Background(), "", func(model.Tx) error {
			close(started)
			<-gate
			return nil
		})
	}()
	<-started
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(gate)
			if err := <-done; err != nil {
				tb.Errorf("the holding call: %v", err)
			}
		})
	}
	tb.Cleanup(release)
	return release
}

// waitQueued waits until n calls are in the loop's queue.
func waitQueued(tb testing.TB, db *DB, n int) {
	tb.Helper()
	for deadline := time.Now().Add(5 * time.Second); len(db.loop.queue) < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("%d calls queued, want %d", len(db.loop.queue), n)
		}
	}
}

// batchAsync starts db.Batch(ctx, "", fn) and returns the channel of its result.
func batchAsync(db *DB, ctx context.Context, fn func(model.Tx) error) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- db.Batch(ctx, "", fn) }()
	return errc
}

// meta reads an installation-wide value.
func meta(tb testing.TB, db *DB, key string) []byte {
	tb.Helper()
	var v []byte
	if err := db.View(context.Background(), func(tx model.Tx) (err error) {
		v, err = tx.Meta(key)
		return err
	}); err != nil {
		tb.Fatal(err)
	}
	return v
}

// loopRunning reports whether a commit loop goroutine of any DB is alive.
func loopRunning() bool {
	buf := make([]byte, 1<<20)
	return strings.Contains(string(buf[:runtime.Stack(buf, true)]), "(*commitLoop).run")
}

func TestDB_Batch(t *testing.T) {
	t.Run("Concurrent", func(t *testing.T) {
		db := openInternal(t, t.TempDir())
		const n = 3*maxGroup + 17
		var mu sync.Mutex
		perTx := map[*bolt.Tx]int{} // committed calls per transaction (keeps each Tx alive)
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				key := fmt.Sprintf("batch-%04d", i)
				errs <- db.Batch(context.Background(), "", func(tx model.Tx) error {
					btx := tx.(*batchTx).btx
					tx.OnCommit(func() { mu.Lock(); perTx[btx]++; mu.Unlock() })
					return tx.PutMeta(key, []byte(key))
				})
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("Batch = %v", err)
			}
		}
		for i := range n {
			if key := fmt.Sprintf("batch-%04d", i); string(meta(t, db, key)) != key {
				t.Fatalf("%s is not stored", key)
			}
		}
		total := 0
		for _, c := range perTx {
			if c > maxGroup {
				t.Fatalf("a group of %d calls, the cap is %d", c, maxGroup)
			}
			total += c
		}
		if total != n {
			t.Fatalf("%d calls committed, want %d", total, n)
		}
		t.Logf("%d calls in %d transactions", n, len(perTx))
	})

	t.Run("Group", func(t *testing.T) {
		db := openInternal(t, t.TempDir())
		release := holdLoop(t, db)
		const n = 20
		var mu sync.Mutex
		txs := map[*bolt.Tx]bool{}
		var results []<-chan error
		for i := range n {
			results = append(results, batchAsync(db, context.Background(), func(tx model.Tx) error {
				mu.Lock()
				txs[tx.(*batchTx).btx] = true
				mu.Unlock()
				return tx.PutMeta(fmt.Sprint("g", i), []byte("v"))
			}))
		}
		waitQueued(t, db, n)
		release()
		for _, r := range results {
			if err := <-r; err != nil {
				t.Fatal(err)
			}
		}
		if len(txs) != 1 {
			t.Fatalf("%d calls queued together ran in %d transactions, want 1", n, len(txs))
		}
	})

	t.Run("Failures", func(t *testing.T) {
		// Calls queued in a known order: ok0, fail1, ok2, panic3, ok4. The failing and the
		// panicking calls come after others' writes, so they are run again alone.
		db := openInternal(t, t.TempDir())
		release := holdLoop(t, db)
		boom := model.Invalid("x", "x is bad")
		var mu sync.Mutex
		runs, commits := map[string]int{}, map[string]int{}
		fn := func(name string, fail func() error) func(model.Tx) error {
			return func(tx model.Tx) error {
				mu.Lock()
				runs[name]++
				mu.Unlock()
				tx.OnCommit(func() { mu.Lock(); commits[name]++; mu.Unlock() })
				if err := tx.PutMeta(name, []byte(name)); err != nil {
					return err
				}
				if fail != nil {
					return fail()
				}
				return nil
			}
		}
		names := []string{"ok0", "fail1", "ok2", "panic3", "ok4"}
		fails := map[string]func() error{
			"fail1":  func() error { return boom },
			"panic3": func() error { panic(boom) },
		}
		results := map[string]<-chan error{}
		for i, name := range names {
			results[name] = batchAsync(db, context.Background(), fn(name, fails[name]))
			waitQueued(t, db, i+1)
		}
		release()
		for _, name := range names {
			err := <-results[name]
			switch name {
			case "fail1":
				if err != boom {
					t.Errorf("the failing call = %v, want its own error as it is", err)
				}
			case "panic3":
				if err == nil || !errors.Is(err, boom) || !strings.Contains(err.Error(), "panicked") {
					t.Errorf("the panicking call = %v, want a panic error wrapping %v", err, boom)
				}
			default:
				if err != nil {
					t.Errorf("%s = %v, failed with the others", name, err)
				}
			}
		}
		for _, name := range names {
			ok := strings.HasPrefix(name, "ok")
			if v := meta(t, db, name); (v != nil) != ok {
				t.Errorf("%s stored: %v", name, v != nil)
			}
			if want := map[bool]int{true: 1}[ok]; commits[name] != want {
				t.Errorf("OnCommit of %s ran %d times, want %d", name, commits[name], want)
			}
		}
		if runs["ok0"] != 3 || runs["fail1"] != 2 || runs["panic3"] != 2 {
			t.Errorf("runs = %v, want ok0 ×3, fail1 ×2 (group, alone), panic3 ×2", runs)
		}
		// The loop survived the panic.
		if err := db.Batch(context.Background(), "", func(tx model.Tx) error { return tx.PutMeta("after", nil) }); err != nil {
			t.Fatalf("Batch after a panic = %v", err)
		}
	})

	t.Run("FirstFails", func(t *testing.T) {
		// The first call of a transaction fails: that run was already alone, it is not
		// run again.
		db := openInternal(t, t.TempDir())
		release := holdLoop(t, db)
		boom := errors.New("boom")
		runs := 0
		failing := batchAsync(db, context.Background(), func(tx model.Tx) error {
			runs++
			_ = tx.PutMeta("failed", []byte("x"))
			return boom
		})
		waitQueued(t, db, 1)
		ok := batchAsync(db, context.Background(), func(tx model.Tx) error { return tx.PutMeta("ok", []byte("x")) })
		waitQueued(t, db, 2)
		release()
		if err := <-failing; err != boom {
			t.Fatalf("failing call = %v", err)
		}
		if err := <-ok; err != nil {
			t.Fatalf("ok call = %v", err)
		}
		if runs != 1 {
			t.Fatalf("the failing call ran %d times, want 1", runs)
		}
		if meta(t, db, "failed") != nil || meta(t, db, "ok") == nil {
			t.Fatal("wrong writes committed")
		}
	})

	t.Run("FailsOnlyInGroup", func(t *testing.T) {
		// A call that fails because of another call's write succeeds alone; OnCommit of its
		// rolled back run does not run, that of its committed run runs once.
		db := openInternal(t, t.TempDir())
		release := holdLoop(t, db)
		writer := batchAsync(db, context.Background(), func(tx model.Tx) error { return tx.PutMeta("x", []byte("1")) })
		waitQueued(t, db, 1)
		commits := 0
		reader := batchAsync(db, context.Background(), func(tx model.Tx) error {
			tx.OnCommit(func() { commits++ })
			if v, _ := tx.Meta("x"); v != nil {
				return errors.New("x is already there")
			}
			return tx.PutMeta("y", []byte("1"))
		})
		waitQueued(t, db, 2)
		release()
		if err := <-writer; err != nil {
			t.Fatal(err)
		}
		if err := <-reader; err != nil {
			t.Fatalf("the call run alone = %v", err)
		}
		if commits != 1 {
			t.Fatalf("OnCommit ran %d times, want 1", commits)
		}
		if meta(t, db, "x") == nil || meta(t, db, "y") == nil {
			t.Fatal("a write is missing")
		}
	})

	t.Run("OnCommit", func(t *testing.T) {
		// Callbacks run after the commit, before Batch returns, in the caller's goroutine:
		// one may use the store again (on the loop's goroutine that would deadlock).
		db := openInternal(t, t.TempDir())
		var order []string
		err := db.Batch(context.Background(), "", func(tx model.Tx) error {
			tx.OnCommit(func() {
				if meta(t, db, "k") == nil {
					t.Error("OnCommit ran before the commit")
				}
				order = append(order, "first")
				if err := db.Batch(context.Background(), "", func(tx model.Tx) error { return tx.PutMeta("k2", nil) }); err != nil {
					t.Errorf("Batch in OnCommit = %v", err)
				}
			})
			tx.OnCommit(func() { order = append(order, "second") })
			return tx.PutMeta("k", []byte("v"))
		})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(order, ",") != "first,second" {
			t.Fatalf("OnCommit calls = %v", order)
		}
		if err := db.Batch(context.Background(), "", func(tx model.Tx) error {
			tx.OnCommit(func() { order = append(order, "rolled back") })
			return errors.New("fail")
		}); err == nil {
			t.Fatal("a failing call succeeded")
		}
		if len(order) != 2 {
			t.Fatalf("OnCommit of a failed call ran: %v", order)
		}
	})

	t.Run("Context", func(t *testing.T) {
		db := openInternal(t, t.TempDir())
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		ran := false
		if err := db.Batch(ctx, "", func(model.Tx) error { ran = true; return nil }); !errors.Is(err, context.Canceled) {
			t.Fatalf("Batch with a cancelled context = %v", err)
		}

		// Cancelled while queued: dropped.
		release := holdLoop(t, db)
		ctx, cancel = context.WithCancel(context.Background())
		queued := batchAsync(db, ctx, func(model.Tx) error { ran = true; return nil })
		waitQueued(t, db, 1)
		cancel()
		release()
		if err := <-queued; !errors.Is(err, context.Canceled) {
			t.Fatalf("Batch cancelled in the queue = %v", err)
		}
		if ran {
			t.Fatal("a call cancelled before it ran, ran")
		}

		// Cancelled once taken: it commits and says so.
		ctx, cancel = context.WithCancel(context.Background())
		defer cancel()
		if err := db.Batch(ctx, "", func(tx model.Tx) error {
			cancel()
			return tx.PutMeta("taken", []byte("v"))
		}); err != nil {
			t.Fatalf("Batch cancelled while running = %v", err)
		}
		if meta(t, db, "taken") == nil {
			t.Fatal("the write of a taken call is missing")
		}
	})

	t.Run("Close", func(t *testing.T) {
		dir := t.TempDir()
		db := openInternal(t, dir)
		release := holdLoop(t, db)
		const n = 10
		var results []<-chan error
		for i := range n {
			results = append(results, batchAsync(db, context.Background(), func(tx model.Tx) error {
				return tx.PutMeta(fmt.Sprint("q", i), []byte("v"))
			}))
		}
		waitQueued(t, db, n)
		closed := make(chan error, 1)
		go func() { closed <- db.Close() }()
		// Close waits for the queued calls; new ones are refused.
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			db.loop.mu.RLock()
			c := db.loop.closed
			db.loop.mu.RUnlock()
			if c {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("Close did not start")
			}
		}
		if err := db.Batch(context.Background(), "", func(model.Tx) error { return nil }); !errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
			t.Fatalf("Batch while closing = %v", err)
		}
		release()
		for _, r := range results {
			if err := <-r; err != nil {
				t.Fatalf("a call queued before Close = %v", err)
			}
		}
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		select {
		case <-db.loop.done:
		default:
			t.Fatal("the commit loop is still running after Close")
		}
		if err := db.Batch(context.Background(), "", func(model.Tx) error { return nil }); !errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
			t.Fatalf("Batch after Close = %v", err)
		}
		if err := db.Close(); err != nil {
			t.Fatalf("second Close = %v", err)
		}
		db = openInternal(t, dir)
		for i := range n {
			if meta(t, db, fmt.Sprint("q", i)) == nil {
				t.Fatalf("q%d, queued before Close, is not stored", i)
			}
		}
	})

	t.Run("ReadOnly", func(t *testing.T) {
		dir := t.TempDir()
		if err := openInternal(t, dir).Close(); err != nil {
			t.Fatal(err)
		}
		db, err := Open(dir, Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if db.loop != nil {
			t.Fatal("a read-only store has a commit loop")
		}
		if err := db.Batch(context.Background(), "", func(model.Tx) error { return nil }); !errors.Is(err, bolterrors.ErrDatabaseReadOnly) {
			t.Fatalf("Batch on a read-only store = %v", err)
		}
	})

	t.Run("NoLeak", func(t *testing.T) {
		// Every store of the tests above is closed by now (their Cleanup ran).
		for deadline := time.Now().Add(5 * time.Second); loopRunning(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("a commit loop outlived its store")
			}
		}
	})
}
