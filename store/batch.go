package store

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/fieldrelay/fieldrelay/engine/model"

	bolt "go.etcd.io/bbolt"

	bolterrors "go.etcd.io/bbolt/errors"
)

// maxGroup is the most calls one group commits in one transaction. A group never waits
// to fill up: it is whatever was queued when the previous commit ended, so the cap only
// bounds the size (and the latency) of one transaction under a flood of writers.
const maxGroup = 256

// Batch runs fn in a read-write transaction shared with the other Batch calls queued at
// the same time: one commit loop takes every call queued while the previous group was
// committing (no timer, no wait for company), runs them one after the other in one
// transaction and commits them with one fsync. Batch returns once fn's writes are
// committed and fsynced, with nil, or with fn's error as it is.
//
// fn may run more than once: when a call of a group fails (an error or a panic, which
// becomes an error) the whole transaction is rolled back, the failing call is run again
// alone, in its own transaction, for its own error (or commit), and the others are run
// again in a new shared transaction. So fn must have no effect outside the transaction.
// OnCommit callbacks of a rolled back run are dropped; those of the run that commits run
// once, after the commit, in the caller's goroutine before Batch returns, as with Update.
//
// Cancelling ctx stops a call that the loop has not taken yet (Batch returns ctx.Err()
// and fn never runs). Once taken, the call runs to its end and Batch waits for the
// outcome, whatever ctx says: at most one group's transaction, and a caller never hears
// "cancelled" about a write that was committed.
//
// While the disk is full Batch returns model.DiskFull at once, as Update does; a commit
// that fails for want of space answers DiskFull to every call of its group.
//
// After Close, Batch returns bbolt's ErrDatabaseNotOpen, as Update does. On a read-only
// store Batch is Update.
func (db *DB) Batch(ctx context.Context, _ string, fn func(model.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l := db.loop
	if l == nil {
		return db.Update(ctx, fn)
	}
	if err := db.space.check(); err != nil {
		return err
	}
	c := callPool.Get().(*batchCall)
	c.ctx, c.fn = ctx, fn
	if err := l.enqueue(ctx, c); err != nil {
		c.release()
		return err
	}
	err := <-c.done
	if err == nil {
		for _, f := range c.onCommit {
			f()
		}
	}
	c.release()
	return err
}

// commitLoop is the goroutine that commits Batch calls in groups.
type commitLoop struct {
	bolt *bolt.DB
	db   *DB
	// mu guards closed and the sends on queue: Batch sends under the read lock, so once
	// stop holds the write lock no send is in flight and queue can be closed.
	mu     sync.RWMutex
	closed bool
	queue  chan *batchCall
	done   chan struct{} // closed when the loop has returned
}

// startLoop starts the commit loop of a read-write database.
func startLoop(db *DB) *commitLoop {
	l := &commitLoop{bolt: db.bolt, db: db, queue: make(chan *batchCall, maxGroup), done: make(chan struct{})}
	go l.run()
	return l
}

// stop refuses new calls, lets the loop commit those already queued and waits for it
// to return. It is safe to call more than once, and on a nil loop.
func (l *commitLoop) stop() {
	if l == nil {
		return
	}
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.queue)
	}
	l.mu.Unlock()
	<-l.done
}

func (l *commitLoop) enqueue(ctx context.Context, c *batchCall) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return bolterrors.ErrDatabaseNotOpen
	}
	select {
	case l.queue <- c:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *commitLoop) run() {
	defer close(l.done)
	group := make([]*batchCall, 0, maxGroup)
	commits := 0
	for {
		// Block for the first call, then take whatever else is already queued.
		c, ok := <-l.queue
		if !ok {
			return
		}
		group = take(group[:0], c)
	drain:
		for len(group) < maxGroup {
			select {
			case c, ok := <-l.queue:
				if !ok {
					break drain // closed: commit this group; the next receive ends the loop
				}
				group = take(group, c)
			default:
				break drain
			}
		}
		l.commit(group)
		clear(group[:cap(group)]) // drop the references to calls now back in the pool
		if commits++; commits%packCheckEvery == 0 {
			l.packTenants()
		}
	}
}

// packTenants rebuilds, between two groups, the tenant buckets split over more pages
// than they need (tenant_pack.go). The look is made in a write transaction (bbolt's
// Tx.Page, which says whether a root page is a branch, reads the freelist, which only the
// writer may do while others write) that is rolled back when it finds nothing to do, so
// such a look writes nothing. A failure is left for the next look: the buckets are only
// slower to write, never wrong.
func (l *commitLoop) packTenants() {
	if l.db.space.check() != nil {
		return
	}
	err := l.bolt.Update(func(btx *bolt.Tx) error {
		n, err := packTenants(btx)
		if err == nil && n == 0 {
			return errNothingToPack
		}
		return err
	})
	if errors.Is(err, errNothingToPack) {
		return
	}
	if err == nil {
		l.db.writeTx.Add(1)
	}
	_ = l.db.space.failedWrite(err)
}

// errNothingToPack rolls back a look at the tenants' buckets that found none to pack.
var errNothingToPack = errors.New("no tenant bucket to pack")

// take adds c to group, unless its context ended while it waited in the queue.
func take(group []*batchCall, c *batchCall) []*batchCall {
	if err := c.ctx.Err(); err != nil {
		c.done <- err
		return group
	}
	return append(group, c)
}

// commit runs calls in one transaction and answers each of them. A failing call is
// taken out and run alone, and the others are run again together, as bbolt's db.Batch
// does.
func (l *commitLoop) commit(calls []*batchCall) {
	for len(calls) > 0 {
		failed := -1
		err := l.bolt.Update(func(btx *bolt.Tx) error {
			for i, c := range calls {
				if err := c.run(l.db, btx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed < 0 {
			if err == nil {
				l.db.writeTx.Add(1)
			}
			// Committed, or a commit error (disk full, I/O) that is every call's.
			err = l.db.space.failedWrite(err)
			for _, c := range calls {
				c.done <- err
			}
			return
		}
		c := calls[failed]
		if failed > 0 {
			// It failed after other calls' writes: its own error and rollback come from
			// a transaction of its own. The first call of a transaction already had that.
			err = l.db.space.failedWrite(l.bolt.Update(func(btx *bolt.Tx) error { return c.run(l.db, btx) }))
		}
		c.done <- err
		calls = slices.Delete(calls, failed, failed+1)
	}
}

// batchCall is one Batch call; calls are pooled, with their result channel.
type batchCall struct {
	ctx      context.Context
	fn       func(model.Tx) error
	done     chan error // buffered: the loop never waits for the caller
	onCommit []func()   // callbacks of the latest run
	tx       batchTx
}

var callPool = sync.Pool{New: func() any { return &batchCall{done: make(chan error, 1)} }}

// run runs fn once in btx, a panic becoming an error.
func (c *batchCall) run(db *DB, btx *bolt.Tx) (err error) {
	clear(c.onCommit)
	c.onCommit = c.onCommit[:0]
	c.tx = batchTx{tx: tx{btx: btx, db: db}, call: c}
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = fmt.Errorf("store: a Batch function panicked: %w\n%s", e, debug.Stack())
			} else {
				err = fmt.Errorf("store: a Batch function panicked: %v\n%s", r, debug.Stack())
			}
		}
	}()
	return c.fn(&c.tx)
}

func (c *batchCall) release() {
	clear(c.onCommit)
	onCommit := c.onCommit[:0]
	*c = batchCall{done: c.done, onCommit: onCommit}
	callPool.Put(c)
}

// batchTx is the engine.Tx of a Batch call: a tx whose OnCommit callbacks belong to the
// call, not to the shared bbolt transaction, so that they run in the caller's goroutine
// (where a callback may use the store again) and only for the run that committed.
type batchTx struct {
	tx
	call *batchCall
}

func (t *batchTx) OnCommit(fn func()) { t.call.onCommit = append(t.call.onCommit, fn) }
