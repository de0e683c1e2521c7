// Package usage counts what the node's tenants use: the usage counters the use cases add
// within their transactions (gathered and written once before the commit through
// engine/writes), the API requests counted in memory, the statistics of /metrics, the
// usage report (GET /v1/usage) and the billing (GET /v1/tenant/billing). It never sees
// the engine: engine/layering_test.go holds it.
package usage

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/writes"
)

// Counter counts the usage of the node's tenants: the counters a use case adds within its
// transaction (Count, written once before the commit by writes.FlushUsage), the API
// requests counted in memory and flushed every few seconds (CountRequest, Loop), and the
// node's statistics since start for /metrics (Counts).
type Counter struct {
	store model.Store
	clock model.Clock
	log   *slog.Logger
	plans model.PlanTable
	// stats count the node's work for /metrics; requests count API requests until
	// they are flushed into the usage counters.
	stats    *stats
	requests requestCounts
	lastDay  atomic.Pointer[usageDay]
}

// What the engine needs of a Counter beside the use cases. Functions, not methods, so
// that the Engine that embeds a Counter does not show them.

// Count adds d to the usage of tenantID on the day of at, within tx.
func Count(c *Counter, tx model.TxCommit, tenantID string, at time.Time, d model.UsageDelta) error {
	return c.count(tx, tenantID, at, d)
}

// Held returns what runs after the commit of an SMS held back by its recipient's rate
// limit.
func Held(c *Counter) func() { return c.held }

// CountsOf returns the node's counters since start, for /metrics.
func CountsOf(c *Counter) Counts { return c.counts() }

// Loop flushes the counted API requests every few seconds, and once more when ctx ends.
func Loop(c *Counter) func(ctx context.Context) { return c.loop }

// New returns the Counter of a node over store (the engine's, with its pre-commit hooks);
// plans is the price list of the billing (DefaultPlans when nil).
func New(store model.Store, clock model.Clock, log *slog.Logger, plans model.PlanTable) *Counter {
	if plans == nil {
		plans = DefaultPlans()
	}
	return &Counter{store: store, clock: clock, log: log, plans: plans, stats: newStats()}
}

// held is to run after the commit of an SMS held back by its recipient's rate limit.
func (e *Counter) held() { e.stats.hooks[statSMSHeld]() }

// Counts are the node's counters since start, for /metrics.
type Counts struct {
	EventsAccepted, EventsSettled, MissionMoves []model.LabeledCount
	WebhookFailures, SMSSent, SMSHeld           uint64
}

// counts returns the node's counters since start.
func (e *Counter) counts() Counts {
	s := e.stats
	var out Counts
	for i, ch := range model.StatChannels {
		out.EventsAccepted = append(out.EventsAccepted, model.LabeledCount{Label1: ch, N: s.n[statAccepted+i].Load()})
	}
	for i, st := range model.StatSettledStatus {
		out.EventsSettled = append(out.EventsSettled, model.LabeledCount{Label1: st, N: s.n[statSettled+i].Load()})
	}
	for i, st := range model.MissionStates {
		out.MissionMoves = append(out.MissionMoves, model.LabeledCount{Label1: st, N: s.n[statMoves+i].Load()})
	}
	out.WebhookFailures = s.n[statWebhookFailed].Load()
	out.SMSSent = s.n[statSMS].Load()
	out.SMSHeld = s.n[statSMSHeld].Load()
	return out
}

// usageDay is the day (YYYY-MM-DD) of a time, cached for the current day.
type usageDay struct {
	start, end time.Time
	name       string
}

// dayOf names the UTC day of at; the name of the latest day is kept, so counting does
// not format a date each time.
func (e *Counter) dayOf(at time.Time) string {
	if d := e.lastDay.Load(); d != nil && !at.Before(d.start) && at.Before(d.end) {
		return d.name
	}
	start := model.PeriodStart(model.PeriodDay, at)
	d := &usageDay{start: start, end: start.AddDate(0, 0, 1), name: start.Format(model.DayLayout)}
	e.lastDay.Store(d)
	return d.name
}

// count adds d to the usage of tenantID on the day of at, within tx: the counters commit
// (or roll back) with the work they count. Once tx commits, the node's in-memory
// statistics (/metrics) follow; those updates are prepared at start, so counting an
// event allocates nothing for them.
func (e *Counter) count(tx model.TxCommit, tenantID string, at time.Time, d model.UsageDelta) error {
	day := e.dayOf(at)
	// Gathered in tx and written once, before the commit (writes.FlushUsage).
	d.Each(func(metric string, n uint64) { writes.Count(tx, tenantID, day, metric, n) })
	e.stats.onCommit(tx, &d)
	return nil
}

const (
	statAccepted      = 0                     // events accepted, by channel_selected (3)
	statSettled       = statAccepted + 3      // events settled, by final status (delivered, failed)
	statMoves         = statSettled + 2       // mission state (the 7 of MissionStates)
	statSMS           = statMoves + 7         // SMS accepted
	statWebhookFailed = statSMS + 1           // webhook messages failed
	statSMSHeld       = statWebhookFailed + 1 // SMS held back by a recipient's rate limit
	statCount         = statSMSHeld + 1
)

// stats are the node's counters since start, for /metrics. They move only after the
// transaction of the work they count commits.
type stats struct {
	n     [statCount]atomic.Uint64
	hooks [statCount]func()
}

func newStats() *stats {
	s := &stats{}
	for i := range s.hooks {
		c := &s.n[i]
		s.hooks[i] = func() { c.Add(1) }
	}
	return s
}

// onCommit schedules the in-memory side of d after tx commits.
func (s *stats) onCommit(tx model.TxCommit, d *model.UsageDelta) {
	// An event counts once when accepted (its delta has a Priority) and once more when it
	// settles (delivered or failed), in two families that never overlap.
	if d.Priority != "" {
		if ch := slices.Index(model.StatChannels, d.Channel); ch >= 0 {
			tx.OnCommit(s.hooks[statAccepted+ch])
		}
	} else if st := slices.Index(model.StatSettledStatus, d.EventStatus); st >= 0 {
		tx.OnCommit(s.hooks[statSettled+st])
	}
	if i := slices.Index(model.MissionStates, d.MissionState); i >= 0 {
		tx.OnCommit(s.hooks[statMoves+i])
	}
	for _, c := range [...]struct {
		n   uint64
		idx int
	}{{d.SMS, statSMS}, {d.WebhookFailed, statWebhookFailed}} {
		switch {
		case c.n == 1:
			tx.OnCommit(s.hooks[c.idx])
		case c.n > 1:
			n, ctr := c.n, &s.n[c.idx]
			tx.OnCommit(func() { ctr.Add(n) })
		}
	}
}

// usageFlushEvery is how often the API requests counted in memory are written.
const usageFlushEvery = 5 * time.Second

// requestCounts counts API requests per tenant in memory until the next flush: a request
// is no transaction of its own, and a write per request would cost a commit.
type requestCounts struct {
	// mu orders a flush against a usage read, so that a read sees every request once.
	mu     sync.Mutex
	counts sync.Map // tenant id → *atomic.Uint64
}

// CountRequest counts one API request of a tenant (every authenticated request, errors
// included). It allocates only for a tenant's first request.
func (e *Counter) CountRequest(tenantID string) {
	c, ok := e.requests.counts.Load(tenantID)
	if !ok {
		c, _ = e.requests.counts.LoadOrStore(tenantID, new(atomic.Uint64))
	}
	c.(*atomic.Uint64).Add(1)
}

// pendingRequests returns the requests of a tenant counted since the last flush.
func (e *Counter) pendingRequests(tenantID string) uint64 {
	if c, ok := e.requests.counts.Load(tenantID); ok {
		return c.(*atomic.Uint64).Load()
	}
	return 0
}

// FlushUsage writes the API requests counted in memory to their tenants' usage of
// today, in one transaction. On failure the counts are kept for the next flush.
func (e *Counter) FlushUsage(ctx context.Context) error {
	e.requests.mu.Lock()
	defer e.requests.mu.Unlock()
	type pending struct {
		tenantID string
		c        *atomic.Uint64
		n        uint64
	}
	var all []pending
	e.requests.counts.Range(func(k, v any) bool {
		c := v.(*atomic.Uint64)
		if n := c.Swap(0); n > 0 {
			all = append(all, pending{k.(string), c, n})
		}
		return true
	})
	if len(all) == 0 {
		return nil
	}
	err := e.store.Update(ctx, func(tx model.Tx) error {
		now := e.clock.Now()
		for _, p := range all {
			err := e.count(tx, p.tenantID, now, model.UsageDelta{APIRequests: p.n})
			if model.IsKind(err, model.KindNotFound) {
				continue // a tenant that no longer exists
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		for _, p := range all {
			p.c.Add(p.n)
		}
	}
	return err
}

// loop flushes the counted API requests every usageFlushEvery, and once more when
// ctx ends (shutdown), before the store closes.
func (e *Counter) loop(ctx context.Context) {
	t := time.NewTicker(usageFlushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := e.FlushUsage(context.WithoutCancel(ctx)); err != nil {
				e.log.Error("usage flush at shutdown", "err", err)
			}
			return
		case <-t.C:
			if err := e.FlushUsage(ctx); err != nil && ctx.Err() == nil {
				e.log.Error("usage flush", "err", err)
			}
		}
	}
}
