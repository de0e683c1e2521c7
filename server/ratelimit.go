package server

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// rateLimiter counts each tenant's requests in fixed one-minute windows. Alone (bbolt),
// it counts in memory. With a store that shares the windows between processes
// (model.RateWindows, PostgreSQL), it takes blocks of each window's budget from the
// store and serves requests from its block in memory
// (docs/decisions/0100-rate-limit-processes.md).
type rateLimiter struct {
	clock  model.Clock
	shared model.RateWindows // nil: this process counts alone
	log    *slog.Logger
	mu     sync.Mutex
	wins   map[string]*window
	// reset and limits hold the header values every answer shares (resetValue,
	// limitValue).
	reset  atomic.Pointer[rateText]
	limits sync.Map // limit → []string
}

type window struct {
	start time.Time
	count int

	// Shared windows only: mu guards the fields below and start and count, and is held
	// across a take from the store, so that one request of a tenant takes a block while
	// the others wait for it.
	mu sync.Mutex
	// granted is what this process took from the shared window and may serve; others
	// what the other processes had taken at this process's last take.
	granted, others int
	// spent: the shared window has nothing left, so no request takes from it again.
	spent bool
	// retryAt: a take failed (the database is unreachable); until then the process
	// counts alone, against what was left at its last take.
	retryAt time.Time
	// dropped: sweep removed the window from the map; a request that holds it looks
	// the tenant's window up again.
	dropped bool
}

// rateBlockDivisor sizes the blocks of a shared window: limit/40 (12 requests of a
// starter plan's 500), so that what the other processes hold unused when one is refused,
// at most a block each, stays within 10 % of the limit up to five processes.
const rateBlockDivisor = 40

// rateRetry is how long a process counts alone after a take from the shared window
// failed, before it tries the store again.
const rateRetry = time.Second

func newRateLimiter(c model.Clock, shared model.RateWindows, log *slog.Logger) *rateLimiter {
	return &rateLimiter{clock: c, shared: shared, log: log, wins: map[string]*window{}}
}

// allow counts a request of the principal's tenant, sets the x-ratelimit-* headers and
// answers rate_limited when the plan's limit is spent.
func (l *rateLimiter) allow(ctx context.Context, w http.ResponseWriter, p model.Principal) error {
	return l.take(ctx, w, p, 1)
}

// peek sets the x-ratelimit-* headers of the principal's tenant without counting a
// request: the answer of a public route (health, login) to a caller that sent credentials.
func (l *rateLimiter) peek(ctx context.Context, w http.ResponseWriter, p model.Principal) {
	_ = l.take(ctx, w, p, 0)
}

// take counts n requests of the principal's tenant in its window and sets the headers.
func (l *rateLimiter) take(ctx context.Context, w http.ResponseWriter, p model.Principal, n int) error {
	now := l.clock.Now()
	start := now.Truncate(time.Minute)
	reset := start.Add(time.Minute)
	h := w.Header()
	h[hdrRateReset] = l.resetValue(reset)
	limit := engine.PlanRateLimit(p.Plan)
	if limit == 0 {
		h[hdrRateLimit], h[hdrRateRemaining] = valUnlimited, valUnlimited
		return nil
	}
	var allowed bool
	var remaining int
	if l.shared != nil {
		allowed, remaining = l.takeShared(ctx, p.TenantID, now, start, limit, n)
	} else {
		l.mu.Lock()
		win := l.window(p.TenantID, start)
		win.count += n
		count := win.count
		l.mu.Unlock()
		allowed, remaining = count <= limit, max(0, limit-count)
	}
	h[hdrRateLimit] = l.limitValue(limit)
	h[hdrRateRemaining] = []string{strconv.Itoa(remaining)}
	if n > 0 && !allowed {
		return &model.Error{Kind: model.KindRateLimited, RetryAfter: reset.Sub(now),
			Msg: "rate limit of " + strconv.Itoa(limit) + " requests per minute exceeded"}
	}
	return nil
}

// The x-ratelimit-* headers, by their canonical names (an answer's header set without
// net/http's canonicalization, which allocates for a name in lower case).
const (
	hdrRateReset     = "X-Ratelimit-Reset"
	hdrRateLimit     = "X-Ratelimit-Limit"
	hdrRateRemaining = "X-Ratelimit-Remaining"
)

// rateText is the text of a value every answer of a window (its reset) or of a plan (its
// limit) shares.
type rateText struct {
	n   int64
	val []string
}

// resetValue is the x-ratelimit-reset of the window that ends at reset: written once per
// window, shared by its answers (sharedValue).
func (l *rateLimiter) resetValue(reset time.Time) []string {
	u := reset.Unix()
	if t := l.reset.Load(); t != nil && t.n == u {
		return t.val
	}
	t := &rateText{n: u, val: []string{strconv.FormatInt(u, 10)}}
	l.reset.Store(t)
	return t.val
}

// limitValue is the x-ratelimit-limit of a plan's limit, written once, shared by its
// answers (sharedValue).
func (l *rateLimiter) limitValue(limit int) []string {
	if v, ok := l.limits.Load(limit); ok {
		return v.([]string)
	}
	v, _ := l.limits.LoadOrStore(limit, []string{strconv.Itoa(limit)})
	return v.([]string)
}

// window returns the tenant's window, started afresh when it is not the one of start.
// Called with mu held.
func (l *rateLimiter) window(tenantID string, start time.Time) *window {
	win := l.wins[tenantID]
	if win == nil {
		win = &window{}
		l.wins[tenantID] = win
	}
	// A shared window's start is win.mu's (takeShared): not read here.
	if l.shared == nil && !win.start.Equal(start) {
		win.start, win.count = start, 0
		l.sweep(start)
	}
	return win
}

// takeShared counts n requests of a tenant against its shared window: from the block
// this process holds, taking another from the store when the block is used up. It
// reports whether the requests are allowed and what remains of the window as this
// process knows it. A request that is refused is not counted.
func (l *rateLimiter) takeShared(ctx context.Context, tenantID string, now, start time.Time, limit, n int) (bool, int) {
	var win *window
	for {
		l.mu.Lock()
		win = l.window(tenantID, start)
		l.mu.Unlock()
		win.mu.Lock()
		if !win.dropped {
			break
		}
		win.mu.Unlock()
	}
	defer win.mu.Unlock()
	if !win.start.Equal(start) {
		if win.start.Before(start) {
			l.mu.Lock()
			l.sweep(start)
			l.mu.Unlock()
		}
		win.start, win.count, win.granted, win.others, win.spent = start, 0, 0, 0, false
	}
	if n > 0 && win.count+n > win.granted && !win.spent && !now.Before(win.retryAt) {
		ask := max(1, limit/rateBlockDivisor, win.count+n-win.granted)
		total, err := l.shared.TakeRate(ctx, tenantID, start, ask)
		if err != nil {
			win.retryAt = now.Add(rateRetry)
			l.log.Warn("rate limit: the shared window cannot be reached; counting in this process alone",
				"tenant", tenantID, "err", err)
		} else {
			before := total - ask
			win.others = before - win.granted
			win.granted += min(ask, max(0, limit-before))
			win.spent = total >= limit
		}
	}
	allowed := win.count+n <= win.granted
	if !allowed && !win.spent && now.Before(win.retryAt) {
		// The store is unreachable: fail open, counting alone against what was left.
		allowed = win.others+win.count+n <= limit
	}
	if allowed {
		win.count += n
	}
	return allowed, min(limit, max(0, limit-win.others-win.count))
}

// sweep drops windows older than start, so idle tenants cost nothing. Called with mu held,
// at most once per tenant per minute.
func (l *rateLimiter) sweep(start time.Time) {
	if len(l.wins) < 1024 {
		return
	}
	for id, w := range l.wins {
		if l.shared == nil {
			if w.start.Before(start) {
				delete(l.wins, id)
			}
			continue
		}
		// A window in use is not idle: leave it (and never wait for it under mu).
		if w.mu.TryLock() {
			if w.start.Before(start) {
				w.dropped = true
				delete(l.wins, id)
			}
			w.mu.Unlock()
		}
	}
}
