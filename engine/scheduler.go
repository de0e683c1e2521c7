package engine

import (
	"container/heap"
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/smscodec"
)

// DefaultRetrySchedule is the delay before each retry of a message after its first try
// (docs/rules.md, Webhooks).
var DefaultRetrySchedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute,
	2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// DefaultWorkers is how many outbox calls the scheduler makes at once by default. An
// attempt waits for commits besides its call, so the delivery rate was workers ÷ commit
// latency: with 16 one HTTPS subscriber received 1,200-1,400 messages/s on the 2-core
// machine while ingest took 3,400-4,000 events/s (docs/decisions.md, "Delivery keeping up
// with ingest").
const DefaultWorkers = 64

// DefaultAttemptLease is how long an attempt in flight keeps its message from being due
// again (Options.AttemptLease): the call's own timeout and a margin. On a store shared by
// several processes, another process takes over a message whose lease ended: its process
// died mid-call.
const DefaultAttemptLease = 45 * time.Second

// On a store shared by several processes (model.SharedStore), each process polls the
// outbox for the entries the others left due: written by a process that died right after
// its commit, or leased by one that died mid-call (docs/decisions.md, "The outbox on a
// shared store").
const (
	// pollEvery is how often a process polls.
	pollEvery = time.Second
	// pollGrace is how long an entry is overdue before a poll takes it: the process that
	// wrote or settled an entry attempts it when due, so the others leave it that long
	// rather than race for every fresh message.
	pollGrace = time.Second
	// pollLimit bounds the entries one poll reads, however large the outbox.
	pollLimit = 500
)

// scheduler owns the timers of the outbox: a heap of due entries rebuilt from the store at
// start (on a shared store, fed by a poll every second), a loop that hands due entries to
// a bounded pool of workers, and the workers that make the calls and write their outcome
// back. The heap runs on the clock's monotonic reading: an entry's stored due time (wall
// clock) becomes a duration from now once, when the entry enters the heap, so a step of
// the node's wall clock neither fires an entry early nor holds it back (docs/decisions.md,
// "Timers when the node's clock steps").
type scheduler struct {
	e       *Engine
	workers int
	// shared says other processes share the store: entries leased by other runs are
	// theirs until the lease ends, and the outbox is polled (model.SharedStore).
	shared bool

	mu      sync.Mutex
	h       refHeap
	pending map[string]*heapItem // tenant/id → item in the heap
	busy    map[string]bool      // entries whose attempt is running
	// leases holds the end of the leases this run holds in a shared store (holdLease).
	leases map[string]time.Time
	wake   chan struct{}

	stop    context.CancelFunc
	wg      sync.WaitGroup
	running atomic.Bool
}

func newScheduler(e *Engine, workers int) *scheduler {
	if workers <= 0 {
		workers = DefaultWorkers
	}
	return &scheduler{e: e, workers: workers, shared: model.IsShared(e.base), pending: map[string]*heapItem{},
		busy: map[string]bool{}, leases: map[string]time.Time{}, wake: make(chan struct{}, 1)}
}

type heapItem struct {
	ref model.OutboxRef
	// at is when the entry is due on the clock's monotonic reading.
	at    time.Duration
	index int
}

type refHeap []*heapItem

func (h refHeap) Len() int           { return len(h) }
func (h refHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h refHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].index = i; h[j].index = j }
func (h *refHeap) Push(x any)        { it := x.(*heapItem); it.index = len(*h); *h = append(*h, it) }
func (h *refHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

func refKey(r model.OutboxRef) string { return r.TenantID + "/" + r.ID }

// monoDue returns when a due time of the wall clock falls on the clock's monotonic
// reading: as far from the monotonic now as due is from the wall clock's now.
func (s *scheduler) monoDue(due time.Time) time.Duration {
	return s.e.clock.Mono() + due.Sub(s.e.clock.Now())
}

// add schedules (or moves) an entry, due r.DueAt.Sub(now) from now. It never blocks.
func (s *scheduler) add(r model.OutboxRef) { s.put(r, s.monoDue(r.DueAt), true) }

// addAt schedules (or moves) an entry due at at on the monotonic reading (monoDue, read
// when its due time was decided). It never blocks.
func (s *scheduler) addAt(r model.OutboxRef, at time.Duration) { s.put(r, at, true) }

// put schedules an entry due at at (monotonic reading); move says whether an entry
// already scheduled or running takes r's due time (false: it is left as it is).
func (s *scheduler) put(r model.OutboxRef, at time.Duration, move bool) {
	s.mu.Lock()
	if it, ok := s.pending[refKey(r)]; ok {
		if !move {
			s.mu.Unlock()
			return
		}
		it.ref.DueAt, it.at = r.DueAt, at
		heap.Fix(&s.h, it.index)
	} else {
		if !move && s.busy[refKey(r)] {
			s.mu.Unlock()
			return
		}
		it := &heapItem{ref: r, at: at}
		heap.Push(&s.h, it)
		s.pending[refKey(r)] = it
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// load rebuilds the heap from the outbox. On a shared store it is a poll: the entries
// the other processes owe are theirs until they are overdue.
func (s *scheduler) load(ctx context.Context) error {
	if s.shared {
		return s.poll(ctx)
	}
	var refs []model.OutboxRef
	err := s.e.store.View(ctx, func(tx model.Tx) (err error) {
		refs, err = tx.DueOutbox()
		return err
	})
	// At start the stored due times (wall clock) are all there is: each becomes a
	// duration from now once.
	now := s.e.clock.Now()
	for _, r := range refs {
		if r.Leased {
			// Leased by an earlier run that died mid-call: no attempt of ours is in flight.
			r.DueAt = now
		}
		s.add(r)
	}
	return err
}

// poll schedules the entries of the shared store overdue by pollGrace that this process
// does not hold yet, at most pollLimit of them, soonest first. An entry whose lease ended
// is among them: its run died mid-call, or is too slow, and the attempt takes it over.
func (s *scheduler) poll(ctx context.Context) error {
	var refs []model.OutboxRef
	until := s.e.clock.Now().Add(-pollGrace)
	err := s.e.store.View(ctx, func(tx model.Tx) (err error) {
		refs, err = tx.DueOutboxBefore(until, pollLimit)
		return err
	})
	for _, r := range refs {
		s.put(r, s.monoDue(r.DueAt), false)
	}
	return err
}

// pollLoop polls the shared store every pollEvery until ctx ends.
func (s *scheduler) pollLoop(ctx context.Context) {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.poll(ctx); err != nil && ctx.Err() == nil {
				s.e.log.Error("outbox: polling the shared store", "err", err)
			}
		}
	}
}

// dueRef is an entry the heap found due, and how late: how long ago it fell due on the
// monotonic reading.
type dueRef struct {
	model.OutboxRef
	late time.Duration
}

// popDue removes and returns the entries due at now (the clock's monotonic reading) that
// are not already running, and when the next one is due (ok false when none).
func (s *scheduler) popDue(now time.Duration, max int) (due []dueRef, next time.Duration, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []dueRef
	var skipped []*heapItem
	for s.h.Len() > 0 && len(out) < max {
		it := s.h[0]
		if it.at > now {
			break
		}
		heap.Pop(&s.h)
		k := refKey(it.ref)
		if s.busy[k] {
			skipped = append(skipped, it)
			continue
		}
		delete(s.pending, k)
		s.busy[k] = true
		out = append(out, dueRef{it.ref, now - it.at})
		s.e.stats.lagNanos.Store(int64(now - it.at))
	}
	for _, it := range skipped {
		heap.Push(&s.h, it)
	}
	if s.h.Len() > 0 {
		return out, s.h[0].at, true
	}
	return out, 0, false
}

func (s *scheduler) done(r model.OutboxRef) {
	s.mu.Lock()
	delete(s.busy, refKey(r))
	s.mu.Unlock()
}

// oldest returns the number of scheduled entries and how long the soonest is overdue
// (zero when none is).
func (s *scheduler) oldest() (int, time.Duration) {
	now := s.e.clock.Mono()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h.Len() == 0 {
		return 0, 0
	}
	return s.h.Len(), max(now-s.h[0].at, 0)
}

// Len returns the number of scheduled entries.
func (s *scheduler) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.h.Len()
}

// start rebuilds the timers and runs the loop and its workers until stop.
func (s *scheduler) start(ctx context.Context) error {
	if err := s.load(ctx); err != nil {
		return err
	}
	ctx, s.stop = context.WithCancel(ctx)
	jobs := make(chan dueRef)
	for range s.workers {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for r := range jobs {
				s.e.attempt(ctx, r)
				s.done(r.OutboxRef)
			}
		}()
	}
	s.wg.Add(3)
	go func() {
		defer s.wg.Done()
		s.sweepLoop(ctx)
	}()
	go func() {
		defer s.wg.Done()
		s.e.up.Loop(ctx)
	}()
	go func() {
		defer s.wg.Done()
		s.usageLoop(ctx)
	}()
	if s.shared {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.pollLoop(ctx)
		}()
	}
	s.running.Store(true)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(jobs)
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		for {
			due, next, more := s.popDue(s.e.clock.Mono(), s.workers)
			for _, r := range due {
				select {
				case jobs <- r:
				case <-ctx.Done():
					return
				}
			}
			if len(due) > 0 {
				continue
			}
			wait := time.Hour
			if more {
				wait = max(next-s.e.clock.Mono(), time.Millisecond)
			}
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-s.wake:
			case <-timer.C:
			}
		}
	}()
	return nil
}

// sweepEvery is how often expired idempotency keys are deleted.
const sweepEvery = time.Hour

// sweepLoop deletes expired idempotency keys and runs the retention sweep at start and
// then every sweepEvery; on a shared store, once per period across the processes.
func (s *scheduler) sweepLoop(ctx context.Context) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		if ran, n, err := s.sweep(ctx); err != nil && ctx.Err() == nil {
			s.e.log.Error("idempotency sweep", "err", err)
		} else if ran && n > 0 {
			s.e.log.Info("idempotency sweep", "deleted", n)
		}
		if ran, rep, err := s.retentionSweep(ctx); err != nil && ctx.Err() == nil {
			s.e.log.Error("retention sweep", "err", err)
		} else if ran && rep.SyncBatches+rep.DeliveryAttempts+rep.Events+rep.Missions+rep.Deferred > 0 {
			s.e.log.Info("retention sweep", "sync_batches", rep.SyncBatches, "delivery_attempts", rep.DeliveryAttempts,
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
func (s *scheduler) sweep(ctx context.Context) (bool, int, error) {
	ok, err := s.e.claimPeriod(ctx, "idempotency_sweep", sweepEvery)
	if !ok || err != nil {
		return false, 0, err
	}
	n, err := s.e.SweepIdempotency(ctx)
	return true, n, err
}

// retentionSweep runs the retention sweep when this process claims its period.
func (s *scheduler) retentionSweep(ctx context.Context) (bool, RetentionReport, error) {
	ok, err := s.e.claimPeriod(ctx, "retention_sweep", sweepEvery)
	if !ok || err != nil {
		return false, RetentionReport{}, err
	}
	rep, err := s.e.SweepRetention(ctx)
	return true, rep, err
}

// StartScheduler rebuilds the delivery timers from the outbox and starts delivering, and
// starts the upstream pusher.
func (e *Engine) StartScheduler(ctx context.Context) error { return e.sched.start(ctx) }

// StopScheduler stops delivering and pushing upstream and waits for the attempts in
// flight; unfinished entries stay due in the outbox, unacknowledged changes in the
// change log.
func (e *Engine) StopScheduler() {
	if e.sched.stop != nil {
		e.sched.running.Store(false)
		e.sched.stop()
		e.sched.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		e.releaseLeases(ctx)
		cancel()
	}
}

// SchedulerRunning reports whether the scheduler is started and not stopped (/readyz).
func (e *Engine) SchedulerRunning() bool { return e.sched.running.Load() }

// LoadSchedule rebuilds the delivery timers from the outbox without starting the loop,
// for RunDue.
func (e *Engine) LoadSchedule(ctx context.Context) error { return e.sched.load(ctx) }

// RunDue makes, in the caller's goroutine, every attempt due at the clock's monotonic
// reading (and
// those their outcomes make due at once), and returns how many it made. Tests drive the
// scheduler with it and a FakeClock instead of the loop.
func (e *Engine) RunDue(ctx context.Context) int {
	n := 0
	for {
		due, _, _ := e.sched.popDue(e.clock.Mono(), 1<<30)
		if len(due) == 0 {
			return n
		}
		for _, r := range due {
			e.attempt(ctx, r)
			e.sched.done(r.OutboxRef)
			n++
		}
	}
}

// ScheduledCount returns how many outbox entries the scheduler holds.
func (e *Engine) ScheduledCount() int { return e.sched.Len() }

// attempt makes one attempt of an outbox entry: it records the attempt (and a lease that
// makes it due again should the node die mid-call; a webhook call on a store the node has
// alone only reads the entry), makes the call outside any transaction, and writes the
// outcome back. The writes go through the group commit, so the attempts of many workers
// share fsyncs; their functions may run more than once.
func (e *Engine) attempt(ctx context.Context, r dueRef) {
	var o *model.OutboxEntry
	var msg model.WebhookMessage
	var mail *model.IssuedToken // in memory only: never stored, never logged
	// prepare reads the entry and decides the attempt within tx. With record false it
	// writes nothing and answers errNeedsWrite when the attempt needs a write before its
	// call.
	prepare := func(tx model.Tx, record bool) error {
		o, mail = nil, nil
		entry, err := tx.OutboxEntry(r.TenantID, r.ID)
		if model.IsKind(err, model.KindNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		now := e.clock.Now()
		// The heap said the entry is due, on the monotonic reading: the wall clock's now
		// may have stepped back since and read the entry's stored due time as ahead. Only
		// an entry whose stored due time moved from the one the heap waited for (leased or
		// rescheduled meanwhile) is judged by the wall clock.
		moved := !entry.DueAt.Equal(r.DueAt)
		if entry.DueAt.After(now) && (moved || e.sched.shared && entry.LeasedBy != "" && entry.LeasedBy != e.runID) {
			if entry.LeasedBy == "" || entry.LeasedBy == e.runID {
				if !record {
					return errNeedsWrite
				}
				ref := model.OutboxRef{TenantID: entry.TenantID, ID: entry.ID, DueAt: entry.DueAt.Time}
				tx.OnCommit(func() { e.sched.add(ref) })
				return nil
			}
			if e.sched.shared {
				// Leased by another process's run until DueAt: its attempt is in flight.
				// Should that process die, a poll finds the entry once the lease ends.
				return nil
			}
			// Leased by an earlier run of this node, which died mid-call: retried now.
		}
		if !record && (entry.Kind != model.OutboxWebhook || entry.LeasedBy != "") {
			return errNeedsWrite
		}
		if entry.Kind == OutboxReinforce {
			// A check, not a call: it runs here, and its entry ends.
			// The check judges the mission at the wall time the scheduler's elapsed time
			// says it is: the due time it waited for and how late it runs.
			at := now
			if !moved {
				at = r.DueAt.Add(r.late)
			}
			if err := e.reinforce(tx, entry.TenantID, entry.MissionID, at); err != nil {
				return err
			}
			return tx.DeleteOutboxEntry(entry.TenantID, entry.ID)
		}
		if entry.Kind == model.OutboxWebhook {
			wh, err := tx.Webhook(entry.TenantID, entry.WebhookID)
			if err != nil && !model.IsKind(err, model.KindNotFound) {
				return err
			}
			if wh == nil || wh.Status != WebhookActive && entry.Name != HookWebhookTest {
				// The subscription is gone or disabled: the message fails now. A test
				// message still goes to a disabled one: checking it is its purpose.
				if !record {
					return errNeedsWrite
				}
				entry.Attempts++
				return e.settle(tx, entry, model.SendResult{Err: errors.New("the subscription is deleted or disabled")}, 0, true)
			}
			msg = model.WebhookMessage{URL: wh.URL, ID: entry.ID, Timestamp: now, Secret: wh.Secret, Body: entry.Body}
		}
		if entry.Kind == model.OutboxSMS {
			held, err := smsHold(tx, entry, now)
			if err != nil {
				return err
			}
			if held != nil {
				// The recipient's rate limit: the message ends now, without a call.
				entry.Attempts++
				tx.OnCommit(e.stats.hooks[statSMSHeld])
				return e.settle(tx, entry, model.SendResult{Err: held}, 0, true)
			}
		}
		if entry.Kind == model.OutboxMail {
			if mail, err = e.mailAttempt(tx, entry); err != nil {
				return err
			}
			if mail == nil { // the user is gone: nothing to send
				return tx.DeleteOutboxEntry(entry.TenantID, entry.ID)
			}
		}
		entry.Attempts++
		entry.DueAt = model.At(now.Add(e.lease))
		o = entry
		if !record {
			return nil
		}
		entry.LeasedBy = e.runID
		return tx.PutOutboxEntry(entry)
	}
	// On a store the node has alone, a webhook call needs no record before it: should the
	// node die mid-call, the entry is still due in the store and its next run makes the
	// call again at once, as a lease would have it (docs/decisions.md, "Delivery keeping up
	// with ingest"). A read then spares the call a commit. While the store refuses writes
	// (a full disk), the record is tried first, so that no call is made whose outcome
	// cannot be written.
	err := errNeedsWrite
	if sp, _ := e.Space(); !e.sched.shared && !sp.Full {
		err = e.store.View(ctx, func(tx model.Tx) error { return prepare(tx, false) })
	}
	if errors.Is(err, errNeedsWrite) {
		err = e.store.Batch(ctx, func(tx model.Tx) error { return prepare(tx, true) })
	}
	if err != nil {
		e.log.Error("outbox: recording an attempt", "tenant", r.TenantID, "entry", r.ID, "err", err)
		e.sched.add(model.OutboxRef{TenantID: r.TenantID, ID: r.ID, DueAt: e.clock.Now().Add(e.lease)})
		return
	}
	if o == nil {
		return
	}
	// The call is timed through the engine's clock: the system clock's monotonic reading
	// in a node, a fake clock that the test's sender moves in tests.
	var res model.SendResult
	start := e.clock.Now()
	switch o.Kind {
	case model.OutboxWebhook:
		res = e.sender.SendWebhook(ctx, msg)
	case model.OutboxSMS:
		res = e.sender.SendSMS(ctx, model.OutboundSMS{TenantID: o.TenantID, ID: o.ID, To: o.To, Body: o.Text})
	case model.OutboxMail:
		res = e.sendMail(ctx, mail)
	}
	took := e.clock.Now().Sub(start)
	if ctx.Err() != nil && !succeeded(o, res) {
		return // shutting down: the lease makes it due again after restart
	}
	e.stats.attempt(o.Kind, succeeded(o, res))
	if o.Kind == model.OutboxSMS && res.MessageID != "" {
		e.log.Info("outbox: the SMS gateway accepted a message", "tenant", o.TenantID, "entry", o.ID,
			"attempt", o.Attempts, "gateway_message_id", res.MessageID)
	}
	stale := false
	err = e.recordOutcome(ctx, func(tx model.Tx) error {
		stale = false
		entry, err := tx.OutboxEntry(o.TenantID, o.ID)
		if model.IsKind(err, model.KindNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		recorded := o.Attempts // the attempt's record, or the entry as read when none was written
		if o.LeasedBy == "" {
			recorded--
		}
		if entry.LeasedBy != o.LeasedBy || entry.Attempts != recorded {
			// The lease ended before the call did and another run took the message
			// over: the outcome is that run's to write.
			stale = true
			return nil
		}
		entry.Attempts = o.Attempts
		return e.settle(tx, entry, res, took, false)
	})
	if stale {
		e.log.Warn("outbox: an attempt outlived its lease; another run took the message over",
			"tenant", o.TenantID, "entry", o.ID, "attempt", o.Attempts)
	}
	if err != nil {
		// The attempt stays leased in the store: the call is made again when the lease
		// ends, with the same webhook-id.
		e.log.Error("outbox: recording an outcome", "tenant", r.TenantID, "entry", r.ID, "err", err)
		e.sched.add(model.OutboxRef{TenantID: o.TenantID, ID: o.ID, DueAt: o.DueAt.Time})
	}
}

// errNeedsWrite says an attempt needs a write before its call (attempt).
var errNeedsWrite = errors.New("the attempt needs a write before its call")

// outcomePauses are the pauses between the tries of writing an attempt's outcome. A call
// made is not made again for a transaction that failed: on a shared store, transactions
// that touch the same rows (a webhook's health, a day's usage) fail under contention
// after the store's own retries, and a later try usually succeeds.
var outcomePauses = []time.Duration{50 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond, time.Second}

// recordOutcome runs fn through the group commit, tried again after each of
// outcomePauses while it fails (without pauses once ctx ends: the node is stopping).
func (e *Engine) recordOutcome(ctx context.Context, fn func(model.Tx) error) error {
	for i := 0; ; i++ {
		err := e.store.Batch(context.WithoutCancel(ctx), fn)
		if err == nil || i == len(outcomePauses) {
			return err
		}
		e.log.Warn("outbox: recording an outcome, trying again", "err", err)
		t := time.NewTimer(outcomePauses[i])
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// settle writes the outcome of an attempt: the attempt log of a webhook, the next due
// time or the end of the message, the subscription's health and the event's delivery.
// took is how long the call took (0 when none was made); final forces the message to end
// (its subscription is gone).
func (e *Engine) settle(tx model.Tx, o *model.OutboxEntry, res model.SendResult, took time.Duration, final bool) error {
	now := e.clock.Now()
	ok := succeeded(o, res)
	o.LeasedBy = ""
	o.LastStatus = res.StatusCode
	o.LastError = ""
	if !ok {
		o.LastError = failureText(res)
	}
	settled := ok || final
	// A test message is a probe: one attempt, and no effect on the subscription's health
	// but the 410 that disables any subscription (docs/rules.md, Webhooks).
	probe := o.Name == HookWebhookTest
	var wh *model.Webhook
	if o.Kind == model.OutboxWebhook && !final {
		var err error
		if wh, err = tx.Webhook(o.TenantID, o.WebhookID); model.IsKind(err, model.KindNotFound) {
			wh, settled = nil, true
		} else if err != nil {
			return err
		}
	}
	if wh != nil && res.Gone() {
		wh.Status, wh.DisabledReason = WebhookDisabled, "the receiver answered 410 Gone"
		settled = true
	}
	if !settled && (probe || res.Permanent || o.Attempts > len(e.retry)) {
		settled = true
	}
	var next *model.Time
	if !settled {
		delay := e.retry[o.Attempts-1]
		if res.RetryAfter > delay {
			delay = res.RetryAfter
		}
		n := model.At(now.Add(delay))
		o.DueAt, next = n, &n
	}
	if wh != nil {
		at := model.At(now)
		write := (!probe || res.Gone()) && !e.quietHealth(wh, ok, settled, res, now)
		if !probe {
			if ok {
				wh.LastSuccessAt, wh.FailedMessages = &at, 0
			} else if settled {
				wh.FailedMessages++
				if wh.Status == WebhookActive && wh.FailedMessages >= webhookDisableMessages && now.Sub(wh.FailingSince()) >= webhookDisableAfter {
					wh.Status, wh.DisabledReason = WebhookDisabled, "no success for 5 days"
				}
			}
		}
		if write {
			wh.UpdatedAt = at
			if err := tx.PutWebhook(o.TenantID, wh); err != nil {
				return err
			}
		}
		status := "failed"
		if ok {
			status = "succeeded"
		}
		if err := tx.PutDeliveryAttempt(o.TenantID, &model.DeliveryAttempt{ID: e.ids.at(at.Time), WebhookID: o.WebhookID,
			MessageID: o.ID, Event: o.Name, Attempt: o.Attempts, Status: status, StatusCode: res.StatusCode,
			Error: o.LastError, DurationMs: durationMs(took), At: at, NextAttemptAt: next}); err != nil {
			return err
		}
	}
	if settled {
		if err := tx.DeleteOutboxEntry(o.TenantID, o.ID); err != nil {
			return err
		}
	} else if err := e.enqueue(tx, o); err != nil {
		return err
	}
	if o.Kind == model.OutboxSMS {
		if err := settleSMSRecord(tx, o, res, ok, settled, model.At(now)); err != nil {
			return err
		}
	}
	if err := e.count(tx, o.TenantID, now, settledUsage(o, ok, settled)); err != nil {
		return err
	}
	if ok && o.MissionID != "" {
		// The team's notification arrived: the mission is SENT.
		if err := e.markMissionSent(tx, o.TenantID, o.MissionID, missionChannel(o)); err != nil {
			return err
		}
	}
	if o.Delivers() {
		return e.settleDelivery(tx, o, ok, settled)
	}
	return nil
}

// webhookWriteEvery is how often, at most, the deliveries of one subscription rewrite it
// when only its times move (docs/decisions.md, "The outbox on a shared store" and
// "Delivery keeping up with ingest").
const webhookWriteEvery = time.Second

// quietHealth reports whether an attempt's outcome leaves the subscription's record wh
// (read before settle changes it) as it is: an outcome that changes neither its status
// nor its failed messages (a success after a success, a failure that will be retried),
// within webhookWriteEvery of the time it would move (last_success_at for a success,
// updated_at for a failure). Every delivery to one subscription would otherwise write the
// same record: on a shared store the deliveries of all processes would wait on each
// other, and on any store each write costs the commit loop and makes every ingest reload
// the tenant's directory. A time ahead of now (the wall clock stepped back) is rewritten.
func (e *Engine) quietHealth(wh *model.Webhook, ok, settled bool, res model.SendResult, now time.Time) bool {
	recent := func(t time.Time) bool { d := now.Sub(t); return d >= 0 && d < webhookWriteEvery }
	switch {
	case res.Gone():
		return false
	case ok:
		return wh.FailedMessages == 0 && wh.LastSuccessAt != nil && recent(wh.LastSuccessAt.Time)
	default:
		return !settled && recent(wh.UpdatedAt.Time)
	}
}

// succeeded reports whether an attempt's call succeeded: a 2xx answer, or a mail the
// Mailer took (a mail has no HTTP status).
func succeeded(o *model.OutboxEntry, res model.SendResult) bool {
	if o.Kind == model.OutboxMail {
		return res.Err == nil
	}
	return res.OK()
}

// settledUsage is what an attempt's outcome adds to usage: the segments of an SMS the
// gateway accepted, a webhook message that ended without success.
func settledUsage(o *model.OutboxEntry, ok, settled bool) model.UsageDelta {
	var d model.UsageDelta
	if ok && o.Kind == model.OutboxSMS {
		// Gateways bill per segment: a text longer than one SMS counts each part.
		_, n := smscodec.Segments(o.Text)
		d.SMS = uint64(n)
	}
	if !ok && settled && o.Kind == model.OutboxWebhook {
		d.WebhookFailed = 1
	}
	return d
}

// durationMs is a call's duration in whole milliseconds, rounded up: a call that took any
// time reads at least 1 ms, so a fast receiver is not shown as no call at all.
func durationMs(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// failureText describes a failed attempt for the logs and the attempt log.
func failureText(res model.SendResult) string {
	if res.Err != nil {
		return res.Err.Error()
	}
	msg := "the receiver answered HTTP " + strconv.Itoa(res.StatusCode)
	if res.Detail != "" {
		msg += ": " + res.Detail
	}
	if res.Permanent {
		msg += " (not retried: the gateway will never accept this message)"
	}
	return msg
}
