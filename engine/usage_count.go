package engine

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/writes"
)

// usageDay is the day (YYYY-MM-DD) of a time, cached for the current day.
type usageDay struct {
	start, end time.Time
	name       string
}

// dayOf names the UTC day of at; the name of the latest day is kept, so counting does
// not format a date each time.
func (e *Engine) dayOf(at time.Time) string {
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
func (e *Engine) count(tx model.TxCommit, tenantID string, at time.Time, d model.UsageDelta) error {
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

// Stats is a snapshot of the node's statistics for /metrics. Counters count since the
// process started; nothing in it names a tenant.
type Stats struct {
	// EventsAccepted counts events accepted, by channel_selected (Label1); each event
	// counts once, whatever it becomes.
	EventsAccepted []model.LabeledCount
	// EventsSettled counts events that reached a delivery outcome, by that status
	// (Label1: delivered, failed); each event counts at most once.
	EventsSettled []model.LabeledCount
	// MissionMoves counts missions moved into each state (Label1), CREATED by dispatch.
	MissionMoves []model.LabeledCount
	// Attempts counts delivery calls by kind (webhook, sms) and outcome.
	Attempts []model.LabeledCount
	// WebhookFailures counts webhook messages that ended without success.
	WebhookFailures uint64
	// SMSSent counts the segments of the SMS the gateway accepted.
	SMSSent uint64
	// SMSHeld counts SMS held back by their recipient's rate limit.
	SMSHeld uint64
	// SMSGateway is the SMS gateway's reachability (up, down, unknown); empty without one.
	SMSGateway string
	// OutboxDepth is the number of outbox entries waiting; OutboxOldestDue how long the
	// most overdue one has been due (0 when none is due).
	OutboxDepth     int
	OutboxOldestDue time.Duration
	// SchedulerLag is how late the scheduler started its latest attempt.
	SchedulerLag     time.Duration
	SchedulerRunning bool
	// Store describes the store, when it can (StatsStore).
	Store *model.StoreStats
	// Space is the free space of the store's disk, when it watches it (SpaceStore).
	Space *model.Space
	// Upstream describes the upstream links.
	Upstream *model.UpstreamStats
}

// Stats returns a snapshot of the node's statistics.
func (e *Engine) Stats() Stats {
	s := e.stats
	var out Stats
	for i, ch := range model.StatChannels {
		out.EventsAccepted = append(out.EventsAccepted, model.LabeledCount{Label1: ch, N: s.n[statAccepted+i].Load()})
	}
	for i, st := range model.StatSettledStatus {
		out.EventsSettled = append(out.EventsSettled, model.LabeledCount{Label1: st, N: s.n[statSettled+i].Load()})
	}
	for i, st := range model.MissionStates {
		out.MissionMoves = append(out.MissionMoves, model.LabeledCount{Label1: st, N: s.n[statMoves+i].Load()})
	}
	out.Attempts = e.sched.Attempts()
	out.WebhookFailures = s.n[statWebhookFailed].Load()
	out.SMSSent = s.n[statSMS].Load()
	out.SMSHeld = s.n[statSMSHeld].Load()
	out.SMSGateway = e.SMSGatewayState()
	out.OutboxDepth, out.OutboxOldestDue = e.sched.Oldest()
	out.SchedulerLag = e.sched.Lag()
	out.SchedulerRunning = e.SchedulerRunning()
	out.Upstream = e.up.Stats()
	if ss, ok := e.base.(model.StatsStore); ok {
		st := ss.Stats()
		out.Store = &st
	}
	if sp, ok := e.Space(); ok {
		out.Space = &sp
	}
	return out
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
func (e *Engine) CountRequest(tenantID string) {
	c, ok := e.requests.counts.Load(tenantID)
	if !ok {
		c, _ = e.requests.counts.LoadOrStore(tenantID, new(atomic.Uint64))
	}
	c.(*atomic.Uint64).Add(1)
}

// pendingRequests returns the requests of a tenant counted since the last flush.
func (e *Engine) pendingRequests(tenantID string) uint64 {
	if c, ok := e.requests.counts.Load(tenantID); ok {
		return c.(*atomic.Uint64).Load()
	}
	return 0
}

// FlushUsage writes the API requests counted in memory to their tenants' usage of
// today, in one transaction. On failure the counts are kept for the next flush.
func (e *Engine) FlushUsage(ctx context.Context) error {
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

// usageLoop flushes the counted API requests every usageFlushEvery, and once more when
// ctx ends (shutdown), before the store closes.
func (e *Engine) usageLoop(ctx context.Context) {
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
