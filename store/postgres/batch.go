package postgres

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/fieldrelay/fieldrelay/engine/model"

	"github.com/jackc/pgx/v5"
)

// Group commit of Batch calls (docs/decisions/0111-postgres-group-commit.md,
// docs/decisions/0237-group-commit-by-tenant.md): hot writes (event ingest, sync batches,
// device sync, the outbox's updates) queue their functions under their tenant, and a
// committer runs the calls queued for one tenant in one transaction, committed with one
// WAL flush. An event then costs about one round trip of its own instead of a
// transaction: its writes go out pipelined with the next call's first read (tx.write), and
// begin and commit are shared.
//
// A transaction touches one tenant: on Citus it is a transaction of one shard, and on any
// PostgreSQL the tenant's lock (lockTenant) makes the tenant's writers wait for each
// other anyway. So the groups of different tenants commit at once, one committer each, up
// to committers(); one tenant has one group at a time.

// groupMax is the most calls one transaction commits. A group never waits to fill up: it
// is whatever was queued for its tenant when a committer was free, so the cap only bounds
// the size (and the latency) of one transaction under a flood of writers.
const groupMax = 64

// groupAttempts is how many times a group that collided with another transaction is run
// again whole before each of its calls is run alone.
const groupAttempts = 8

// ErrClosed is returned by Batch once the store is closed.
var ErrClosed = errors.New("postgres: the store is closed")

// batchCall is one Batch call.
type batchCall struct {
	ctx      context.Context
	tenant   string
	fn       func(model.Tx) error
	reads    model.BatchReads // what fn declared it reads (batch_reads.go)
	done     chan error       // buffered: the committer never waits for the caller
	onCommit []func()         // hooks of the run that committed
}

// committer holds the queued Batch calls by tenant and the goroutines that commit them.
type committer struct {
	mu   sync.Mutex
	cond *sync.Cond // signalled when a tenant becomes ready, or on close
	// queued holds the calls of each tenant, oldest first; ready lists, in the order they
	// became so, the tenants with calls queued and no group running; running marks the
	// tenants whose group runs.
	queued  map[string][]*batchCall
	ready   []string
	running map[string]bool
	closed  bool
	wg      sync.WaitGroup
}

// committers is how many groups of different tenants commit at once
// (docs/decisions/0253-committers-by-cores.md).
func (db *DB) committers() int {
	return committerCount(int(db.pool.Config().MaxConns), runtime.GOMAXPROCS(0))
}

// committerCount is one committer a core of the node, at least two and at most half the
// pool's connections (Update and View keep the others), and at least one: more groups at
// once than cores made each group smaller and the database's work an event larger, for
// fewer events a second.
func committerCount(poolMax, procs int) int {
	return max(1, min(poolMax/2, max(2, procs)))
}

// startCommitter starts db's committers.
func (db *DB) startCommitter() {
	c := &db.batch
	c.cond = sync.NewCond(&c.mu)
	c.queued, c.running = map[string][]*batchCall{}, map[string]bool{}
	for range db.committers() {
		c.wg.Add(1)
		go db.commitGroups()
	}
}

// stopCommitter refuses new calls, lets the committers run those already queued and
// waits for them to return. It is safe to call more than once.
func (db *DB) stopCommitter() {
	c := &db.batch
	c.mu.Lock()
	c.closed = true
	c.cond.Broadcast()
	c.mu.Unlock()
	c.wg.Wait()
}

// Batch runs fn in a transaction shared with the other Batch calls of tenantID queued at
// the same time, and returns once fn's writes are committed, with nil, or with fn's error
// as it is. fn may run more than once: when a group collides with another transaction it
// runs again whole; when a call of a group fails (an error, or a panic, which becomes an
// error) the transaction is rolled back, the failing call is run alone, in a transaction
// of its own, for its own error (or commit), and the others are run again together. When
// a statement fails in a way that cannot be pinned on one call, every call is run alone.
// So fn must have no effect outside the transaction; the hooks it registers with OnCommit
// run once, for the run that committed, in the caller's goroutine before Batch returns,
// as with Update.
//
// Cancelling ctx stops a call that a committer has not taken yet (Batch returns ctx's
// error and fn never runs). Once taken, the call runs to its end and Batch waits for the
// outcome, whatever ctx says: a caller never hears "cancelled" about a write that was
// committed.
func (db *DB) Batch(ctx context.Context, tenantID string, fn func(model.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return unavailable(err)
	}
	c := &batchCall{ctx: ctx, tenant: canonicalTenant(tenantID), fn: fn, reads: model.BatchReadsOf(ctx), done: make(chan error, 1)}
	if err := db.enqueue(c); err != nil {
		return err
	}
	err := <-c.done
	if err == nil {
		for _, f := range c.onCommit {
			f()
		}
	}
	return err
}

func (db *DB) enqueue(call *batchCall) error {
	c := &db.batch
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	q := c.queued[call.tenant]
	if len(q) == 0 && !c.running[call.tenant] {
		c.ready = append(c.ready, call.tenant)
		c.cond.Signal()
	}
	c.queued[call.tenant] = append(q, call)
	return nil
}

// commitGroups is a committer: it takes the tenant that has been ready longest, up to
// groupMax of its calls, and commits them together, until the store closes and nothing
// is queued.
func (db *DB) commitGroups() {
	c := &db.batch
	defer c.wg.Done()
	group := make([]*batchCall, 0, groupMax)
	c.mu.Lock()
	for {
		for len(c.ready) == 0 && !c.closed {
			c.cond.Wait()
		}
		if len(c.ready) == 0 {
			c.mu.Unlock()
			return // closed, and nothing queued
		}
		tenant := c.ready[0]
		c.ready = slices.Delete(c.ready, 0, 1)
		q := c.queued[tenant]
		n := min(len(q), groupMax)
		group = group[:0]
		for _, call := range q[:n] {
			group = takeCall(group, call)
		}
		if n == len(q) {
			delete(c.queued, tenant)
		} else {
			c.queued[tenant] = slices.Delete(q, 0, n)
		}
		c.running[tenant] = true
		c.mu.Unlock()

		db.commitGroup(group)
		clear(group[:cap(group)])

		c.mu.Lock()
		delete(c.running, tenant)
		if len(c.queued[tenant]) > 0 {
			c.ready = append(c.ready, tenant)
			c.cond.Signal()
		}
	}
}

// takeCall adds c to group, unless its context ended while it waited in the queue.
func takeCall(group []*batchCall, c *batchCall) []*batchCall {
	if err := c.ctx.Err(); err != nil {
		c.done <- unavailable(err)
		return group
	}
	return append(group, c)
}

// commitGroup runs calls in one transaction and answers each of them.
func (db *DB) commitGroup(calls []*batchCall) {
	ctx, cancel := context.WithTimeout(context.Background(), db.txTimeout)
	defer cancel()
	for attempt := 1; len(calls) > 0; attempt++ {
		if len(calls) == 1 {
			calls[0].done <- db.runAlone(calls[0])
			return
		}
		failed := -1
		t, err := db.attempt(ctx, pgx.ReadWrite, func(t *tx) error {
			if err := t.readGroup(calls); err != nil {
				return err
			}
			for i, c := range calls {
				// The hooks and the directory notices are the call's: each caller runs
				// its own hooks once the group committed.
				t.onCommit, t.notified = c.onCommit[:0], nil
				err := callFn(c.fn, t)
				c.onCommit = t.onCommit
				if err == nil && t.failed != nil {
					err = t.failed // fn went on after a failed statement
				}
				if err != nil {
					if t.failed == nil {
						failed = i // fn's own error: the transaction is sound
					}
					return err
				}
			}
			return nil
		})
		switch {
		case err == nil:
			for _, c := range calls {
				c.done <- nil
			}
			return
		case failed >= 0:
			c := calls[failed]
			if failed == 0 {
				c.done <- err // it ran first: its transaction held nothing else
			} else {
				c.done <- db.runAlone(c)
			}
			calls = slices.Delete(calls, failed, failed+1)
		case t != nil && t.committing && unreachable(err):
			// The commit was sent and its outcome is unknown: running again could
			// write twice.
			for _, c := range calls {
				c.done <- unavailable(err)
			}
			return
		case t != nil && t.retry && attempt < groupAttempts && pause(ctx, attempt) == nil:
			// Collided with another transaction: run the group again.
		default:
			// A statement failed and which call sent it is not known (its write may have
			// been pipelined with the next call's): each call runs alone, for its own
			// outcome.
			for _, c := range calls {
				c.done <- db.runAlone(c)
			}
			return
		}
	}
}

// runAlone runs c in a transaction of its own, with Update's retries.
func (db *DB) runAlone(c *batchCall) error {
	hooks, err := db.runTx(context.WithoutCancel(c.ctx), pgx.ReadWrite, func(mt model.Tx) error {
		if err := mt.(*tx).readGroup([]*batchCall{c}); err != nil {
			return err
		}
		return callFn(c.fn, mt)
	})
	c.onCommit = hooks
	return err
}

// callFn calls fn, a panic becoming an error: the committer's goroutine must not die of a
// caller's bug.
func callFn(fn func(model.Tx) error, t model.Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = fmt.Errorf("postgres: a Batch function panicked: %w\n%s", e, debug.Stack())
			} else {
				err = fmt.Errorf("postgres: a Batch function panicked: %v\n%s", r, debug.Stack())
			}
		}
	}()
	return fn(t)
}
