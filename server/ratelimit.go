package server

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// rateLimiter counts each tenant's requests in fixed one-minute windows.
type rateLimiter struct {
	clock model.Clock
	mu    sync.Mutex
	wins  map[string]*window
}

type window struct {
	start time.Time
	count int
}

func newRateLimiter(c model.Clock) *rateLimiter {
	return &rateLimiter{clock: c, wins: map[string]*window{}}
}

// allow counts a request of the principal's tenant, sets the x-ratelimit-* headers and
// answers rate_limited when the plan's limit is spent.
func (l *rateLimiter) allow(w http.ResponseWriter, p model.Principal) error {
	return l.take(w, p, 1)
}

// peek sets the x-ratelimit-* headers of the principal's tenant without counting a
// request: the answer of a public route (health, login) to a caller that sent credentials.
func (l *rateLimiter) peek(w http.ResponseWriter, p model.Principal) {
	_ = l.take(w, p, 0)
}

// take counts n requests of the principal's tenant in its window and sets the headers.
func (l *rateLimiter) take(w http.ResponseWriter, p model.Principal, n int) error {
	now := l.clock.Now()
	start := now.Truncate(time.Minute)
	reset := start.Add(time.Minute)
	h := w.Header()
	h.Set("x-ratelimit-reset", strconv.FormatInt(reset.Unix(), 10))
	limit := engine.PlanRateLimit(p.Plan)
	if limit == 0 {
		h.Set("x-ratelimit-limit", "unlimited")
		h.Set("x-ratelimit-remaining", "unlimited")
		return nil
	}
	l.mu.Lock()
	win := l.wins[p.TenantID]
	if win == nil {
		win = &window{}
		l.wins[p.TenantID] = win
	}
	if !win.start.Equal(start) {
		win.start, win.count = start, 0
		l.sweep(start)
	}
	win.count += n
	count := win.count
	l.mu.Unlock()
	h.Set("x-ratelimit-limit", strconv.Itoa(limit))
	h.Set("x-ratelimit-remaining", strconv.Itoa(max(0, limit-count)))
	if n > 0 && count > limit {
		return &model.Error{Kind: model.KindRateLimited, RetryAfter: reset.Sub(now),
			Msg: "rate limit of " + strconv.Itoa(limit) + " requests per minute exceeded"}
	}
	return nil
}

// sweep drops windows older than start, so idle tenants cost nothing. Called with mu held,
// at most once per tenant per minute.
func (l *rateLimiter) sweep(start time.Time) {
	if len(l.wins) < 1024 {
		return
	}
	for id, w := range l.wins {
		if w.start.Before(start) {
			delete(l.wins, id)
		}
	}
}
