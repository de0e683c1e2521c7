package delivery

import (
	"container/heap"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// DefaultWorkers is how many outbox calls the scheduler makes at once by default: every
// connection of four receivers (4 × outbound.MaxConnsPerReceiver), so that delivery to
// four subscribers takes the share of the cores it needs to keep up with ingest and the
// outbox stays bounded (docs/decisions/0254-delivery-workers.md; first 16, then 64 in
// docs/decisions/0129-delivery-rate.md).
const DefaultWorkers = 128

// outcomesPerWorker is how many outcomes of calls made may wait for their commit at once,
// per worker (Start): with the default 128 workers, 512, two group commits of the bbolt
// store, so that the outcomes of a burst share transactions and their fsyncs while the
// workers make the next calls.
const outcomesPerWorker = 4

// DefaultAttemptLease is how long an attempt in flight keeps its message from being due
// again (Options.AttemptLease): the call's own timeout and a margin. On a store shared by
// several processes, another process takes over a message whose lease ended: its process
// died mid-call.
const DefaultAttemptLease = 45 * time.Second

// On a store shared by several processes (model.SharedStore), each process polls the
// outbox for the entries the others left due: written by a process that died right after
// its commit, or leased by one that died mid-call (docs/decisions/0106-shared-outbox.md).
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
// the node's wall clock neither fires an entry early nor
// holds it back (docs/decisions/0128-timers-clock-steps.md).
type Scheduler struct {
	Parts
	workers int
	// attempts counts delivery calls made, by kind and outcome (no transaction).
	attempts [statAttempts]atomic.Uint64
	// lagNanos is how late the scheduler started its latest attempt.
	lagNanos atomic.Int64

	mu      sync.Mutex
	h       refHeap
	pending map[string]*heapItem // tenant/id → item in the heap
	busy    map[string]bool      // entries whose attempt is running
	wake    chan struct{}

	stop    context.CancelFunc
	wg      sync.WaitGroup
	running atomic.Bool
}

// New returns the Scheduler of an engine, not started.
func New(p Parts) *Scheduler {
	workers := p.Workers
	if workers <= 0 {
		workers = DefaultWorkers
	}
	if len(p.Retry) == 0 {
		p.Retry = DefaultRetrySchedule
	}
	if p.Lease == 0 {
		p.Lease = DefaultAttemptLease
	}
	return &Scheduler{Parts: p, workers: workers, pending: map[string]*heapItem{},
		busy: map[string]bool{}, wake: make(chan struct{}, 1)}
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
func (s *Scheduler) monoDue(due time.Time) time.Duration {
	return s.Clock.Mono() + due.Sub(s.Clock.Now())
}

// add schedules (or moves) an entry, due r.DueAt.Sub(now) from now. It never blocks.
func (s *Scheduler) add(r model.OutboxRef) { s.put(r, s.monoDue(r.DueAt), true) }

// addAt schedules (or moves) an entry due at at on the monotonic reading (monoDue, read
// when its due time was decided). It never blocks.
func (s *Scheduler) addAt(r model.OutboxRef, at time.Duration) { s.put(r, at, true) }

// put schedules an entry due at at (monotonic reading); move says whether an entry
// already scheduled or running takes r's due time (false: it is left as it is).
func (s *Scheduler) put(r model.OutboxRef, at time.Duration, move bool) {
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

// Load rebuilds the heap from the outbox. On a shared store it is a poll: the entries
// the other processes owe are theirs until they are overdue.
func (s *Scheduler) Load(ctx context.Context) error {
	if s.Shared {
		return s.poll(ctx)
	}
	var refs []model.OutboxRef
	err := s.Store.View(ctx, func(tx model.Tx) (err error) {
		refs, err = tx.DueOutbox()
		return err
	})
	// At start the stored due times (wall clock) are all there is: each becomes a
	// duration from now once.
	now := s.Clock.Now()
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
func (s *Scheduler) poll(ctx context.Context) error {
	var refs []model.OutboxRef
	until := s.Clock.Now().Add(-pollGrace)
	err := s.Store.View(ctx, func(tx model.Tx) (err error) {
		refs, err = tx.DueOutboxBefore(until, pollLimit)
		return err
	})
	for _, r := range refs {
		s.put(r, s.monoDue(r.DueAt), false)
	}
	return err
}

// pollLoop polls the shared store every pollEvery until ctx ends.
func (s *Scheduler) pollLoop(ctx context.Context) {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.poll(ctx); err != nil && ctx.Err() == nil {
				s.Log.Error("outbox: polling the shared store", "err", err)
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
func (s *Scheduler) popDue(now time.Duration, max int) (due []dueRef, next time.Duration, ok bool) {
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
		s.lagNanos.Store(int64(now - it.at))
	}
	for _, it := range skipped {
		heap.Push(&s.h, it)
	}
	if s.h.Len() > 0 {
		return out, s.h[0].at, true
	}
	return out, 0, false
}

func (s *Scheduler) done(r model.OutboxRef) {
	s.mu.Lock()
	delete(s.busy, refKey(r))
	s.mu.Unlock()
}

// Oldest returns the number of scheduled entries and how long the soonest is overdue
// (zero when none is).
func (s *Scheduler) Oldest() (int, time.Duration) {
	now := s.Clock.Mono()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h.Len() == 0 {
		return 0, 0
	}
	return s.h.Len(), max(now-s.h[0].at, 0)
}

// Len returns the number of scheduled entries.
func (s *Scheduler) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.h.Len()
}

// Start rebuilds the timers from the outbox and runs the loop and its workers until
// Stop.
func (s *Scheduler) Start(ctx context.Context) error {
	if err := s.Load(ctx); err != nil {
		return err
	}
	ctx, s.stop = context.WithCancel(ctx)
	jobs := make(chan dueRef)
	// A worker hands the outcome of its call to a goroutine of its own, which waits for
	// the outcome's commit, and takes its next message at once: a worker's rate is that of
	// its calls, not of the group commit's fsyncs. writing bounds the outcomes waiting
	// for their commit; the entry of each stays busy (never attempted again) until it is
	// written (docs/decisions/0250-outcomes-written-behind.md).
	writing := make(chan struct{}, outcomesPerWorker*s.workers)
	for range s.workers {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for r := range jobs {
				oc := s.attempt(ctx, r)
				if oc == nil {
					s.done(r.OutboxRef)
					continue
				}
				writing <- struct{}{}
				s.wg.Add(1)
				go func() {
					defer s.wg.Done()
					s.writeOutcome(ctx, oc)
					<-writing
					s.done(r.OutboxRef)
				}()
			}
		}()
	}
	if s.Shared {
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
			due, next, more := s.popDue(s.Clock.Mono(), s.workers)
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
				wait = max(next-s.Clock.Mono(), time.Millisecond)
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

// Stop stops delivering and waits for the attempts in flight; unfinished entries stay due
// in the outbox.
func (s *Scheduler) Stop() {
	if s.stop != nil {
		s.running.Store(false)
		s.stop()
		s.wg.Wait()
	}
}

// Running reports whether the scheduler is started and not stopped.
func (s *Scheduler) Running() bool { return s.running.Load() }

// RunDue makes, in the caller's goroutine, every attempt due at the clock's monotonic
// reading (and those their outcomes make due at once), and returns how many it made.
// Tests drive the scheduler with it and a FakeClock instead of the loop.
func (s *Scheduler) RunDue(ctx context.Context) int {
	n := 0
	for {
		due, _, _ := s.popDue(s.Clock.Mono(), 1<<30)
		if len(due) == 0 {
			return n
		}
		for _, r := range due {
			if oc := s.attempt(ctx, r); oc != nil {
				s.writeOutcome(ctx, oc)
			}
			s.done(r.OutboxRef)
			n++
		}
	}
}
