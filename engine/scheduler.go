package engine

import (
	"context"
	"sync"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/delivery"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/usage"
)

// The node's background work: the outbox scheduler (engine/delivery), the upstream
// pusher (engine/upstream), the sweeps and the usage flush, started and stopped together.

// DefaultRetrySchedule is the delay before each retry of a message after its first try
// (docs/rules.md, Webhooks).
var DefaultRetrySchedule = delivery.DefaultRetrySchedule

// DefaultWorkers is how many outbox calls the scheduler makes at once by default
// (delivery.DefaultWorkers).
const DefaultWorkers = delivery.DefaultWorkers

// DefaultAttemptLease is how long an attempt in flight keeps its message from being due
// again (Options.AttemptLease; delivery.DefaultAttemptLease).
const DefaultAttemptLease = delivery.DefaultAttemptLease

// background holds the loops started with the scheduler besides its own.
type background struct {
	stop context.CancelFunc
	wg   sync.WaitGroup
}

// StartScheduler rebuilds the delivery timers from the outbox and starts delivering, and
// starts the upstream pusher, the sweeps and the usage flush.
func (e *Engine) StartScheduler(ctx context.Context) error {
	if err := e.sched.Start(ctx); err != nil {
		return err
	}
	ctx, e.bg.stop = context.WithCancel(ctx)
	for _, loop := range []func(context.Context){e.sweepLoop, e.watchLoop, e.up.Loop, usage.Loop(e.Counter)} {
		e.bg.wg.Add(1)
		go func() {
			defer e.bg.wg.Done()
			loop(ctx)
		}()
	}
	return nil
}

// StopScheduler stops delivering and pushing upstream and waits for the attempts in
// flight; unfinished entries stay due in the outbox, unacknowledged changes in the
// change log.
func (e *Engine) StopScheduler() {
	if e.bg.stop != nil {
		e.sched.Stop()
		e.bg.stop()
		e.bg.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		e.releaseLeases(ctx)
		cancel()
	}
}

// SchedulerRunning reports whether the scheduler is started and not stopped (/readyz).
func (e *Engine) SchedulerRunning() bool { return e.sched.Running() }

// LoadSchedule rebuilds the delivery timers from the outbox without starting the loop,
// for RunDue.
func (e *Engine) LoadSchedule(ctx context.Context) error { return e.sched.Load(ctx) }

// RunDue makes, in the caller's goroutine, every attempt due at the clock's monotonic
// reading (and those their outcomes make due at once), and returns how many it made.
// Tests drive the scheduler with it and a FakeClock instead of the loop.
func (e *Engine) RunDue(ctx context.Context) int { return e.sched.RunDue(ctx) }

// ScheduledCount returns how many outbox entries the scheduler holds.
func (e *Engine) ScheduledCount() int { return e.sched.Len() }

// enqueue writes o into the outbox and hands it to the scheduler once tx commits.
func (e *Engine) enqueue(tx model.Tx, o *model.OutboxEntry) error { return e.sched.Enqueue(tx, o) }

// sweepEvery is how often expired idempotency keys are deleted.
const sweepEvery = time.Hour

// sweepLoop deletes expired idempotency keys and runs the retention sweep at start and
// then every sweepEvery; on a shared store, once per period across the processes.
func (e *Engine) sweepLoop(ctx context.Context) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		if ran, n, err := e.sweep(ctx); err != nil && ctx.Err() == nil {
			e.log.Error("idempotency sweep", "err", err)
		} else if ran && n > 0 {
			e.log.Info("idempotency sweep", "deleted", n)
		}
		if ran, rep, err := e.retentionSweep(ctx); err != nil && ctx.Err() == nil {
			e.log.Error("retention sweep", "err", err)
		} else if ran && rep.SyncBatches+rep.DeliveryAttempts+rep.Events+rep.Missions+rep.Deferred > 0 {
			e.log.Info("retention sweep", "sync_batches", rep.SyncBatches, "delivery_attempts", rep.DeliveryAttempts,
				"events", rep.Events, "missions", rep.Missions, "deferred_tenants", rep.Deferred, "transactions", rep.Transactions,
				"longest_tx", rep.LongestTx.String())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweep runs the idempotency sweep when this process claims its period (claimPeriod), and
// returns whether it ran and how many keys it deleted.
func (e *Engine) sweep(ctx context.Context) (bool, int, error) {
	ok, err := e.claimPeriod(ctx, "idempotency_sweep", sweepEvery)
	if !ok || err != nil {
		return false, 0, err
	}
	n, err := e.SweepIdempotency(ctx)
	return true, n, err
}

// retentionSweep runs the retention sweep when this process claims its period.
func (e *Engine) retentionSweep(ctx context.Context) (bool, RetentionReport, error) {
	ok, err := e.claimPeriod(ctx, "retention_sweep", sweepEvery)
	if !ok || err != nil {
		return false, RetentionReport{}, err
	}
	rep, err := e.SweepRetention(ctx)
	return true, rep, err
}
