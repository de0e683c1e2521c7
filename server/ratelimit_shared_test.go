package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// sharedWindows is a model.RateWindows in memory: the database that the processes of a
// test share.
type sharedWindows struct {
	mu    sync.Mutex
	taken map[string]int
	takes int
	down  bool
}

func (s *sharedWindows) TakeRate(_ context.Context, tenantID string, start time.Time, n int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return 0, &model.Error{Kind: model.KindUnavailable, Msg: "down", Err: errors.New("connection refused")}
	}
	if s.taken == nil {
		s.taken = map[string]int{}
	}
	s.takes++
	k := tenantID + "|" + start.Format(time.RFC3339)
	s.taken[k] += n
	return s.taken[k], nil
}

// rateProcesses returns n limiters on one shared store, all on clock.
func rateProcesses(n int, clock model.Clock, shared *sharedWindows) []*rateLimiter {
	var out []*rateLimiter
	for range n {
		out = append(out, newRateLimiter(clock, shared, slog.New(slog.DiscardHandler)))
	}
	return out
}

// rateCall counts one request on l and returns whether it was allowed and its
// x-ratelimit-remaining.
func rateCall(t *testing.T, l *rateLimiter, p model.Principal) (bool, int) {
	t.Helper()
	w := httptest.NewRecorder()
	err := l.allow(context.Background(), w, p)
	if err != nil && !model.IsKind(err, model.KindRateLimited) {
		t.Fatal(err)
	}
	rem, cerr := strconv.Atoi(w.Header().Get("x-ratelimit-remaining"))
	if cerr != nil {
		t.Fatalf("x-ratelimit-remaining %q", w.Header().Get("x-ratelimit-remaining"))
	}
	return err == nil, rem
}

// TestRateLimitSharedWindow: requests spread over 2 to 5 processes sharing a window are
// first refused within 10 % of the plan's limit, never beyond it; the processes together
// never allow more than the limit; a take from the store serves a block of requests; the
// next window starts afresh.
func TestRateLimitSharedWindow(t *testing.T) {
	for _, plan := range []struct {
		name  string
		limit int
	}{{"starter", 500}, {"core", 1000}} {
		for procs := 2; procs <= 5; procs++ {
			t.Run(plan.name+"/"+strconv.Itoa(procs), func(t *testing.T) {
				clock := model.NewFakeClock(time.Date(2026, 6, 9, 10, 0, 10, 0, time.UTC))
				shared := &sharedWindows{}
				ls := rateProcesses(procs, clock, shared)
				p := model.Principal{TenantID: model.NewID(), Plan: plan.name}
				allowed, firstRefusal := 0, -1
				for i := range plan.limit * 3 / 2 {
					ok, rem := rateCall(t, ls[i%procs], p)
					if i == 0 && rem != plan.limit-1 {
						t.Fatalf("first request: remaining %d, want %d", rem, plan.limit-1)
					}
					if ok {
						allowed++
					} else if firstRefusal < 0 {
						firstRefusal = allowed
						if rem != 0 {
							t.Fatalf("refused with remaining %d", rem)
						}
					}
				}
				if firstRefusal < plan.limit*9/10 || allowed > plan.limit {
					t.Fatalf("first refusal after %d allowed, %d allowed in all; limit %d", firstRefusal, allowed, plan.limit)
				}
				if allowed != plan.limit {
					// Every process kept serving its block to the end of the budget.
					t.Fatalf("%d allowed in all, want the limit %d", allowed, plan.limit)
				}
				if max := plan.limit/(plan.limit/rateBlockDivisor) + procs + 1; shared.takes > max {
					t.Fatalf("%d takes from the store for %d requests, want at most %d", shared.takes, plan.limit, max)
				}
				clock.Advance(50 * time.Second)
				if ok, rem := rateCall(t, ls[0], p); !ok || rem != plan.limit-1 {
					t.Fatalf("next window: allowed %v, remaining %d", ok, rem)
				}
			})
		}
	}
}

// TestRateLimitSharedUnreachable: while the store cannot be reached a process fails open,
// counting alone against what was left at its last take, and tries the store again at
// most once per rateRetry; once the store answers, what it served alone is taken from
// the shared window.
func TestRateLimitSharedUnreachable(t *testing.T) {
	clock := model.NewFakeClock(time.Date(2026, 6, 9, 10, 0, 0, 0, time.UTC))
	shared := &sharedWindows{}
	ls := rateProcesses(2, clock, shared)
	a, b := ls[0], ls[1]
	p := model.Principal{TenantID: model.NewID(), Plan: "starter"}
	for range 100 {
		if ok, _ := rateCall(t, b, p); !ok {
			t.Fatal("refused under the limit")
		}
	}
	// b took 9 blocks of 12 (108); a's first request takes the 10th and learns of them.
	if ok, rem := rateCall(t, a, p); !ok || rem != 500-108-1 {
		t.Fatalf("a's first request: allowed %v, remaining %d", ok, rem)
	}
	shared.mu.Lock()
	shared.down = true
	takes := shared.takes
	shared.mu.Unlock()
	for i := 2; i <= 500-108; i++ {
		if ok, rem := rateCall(t, a, p); !ok || rem != 500-108-i {
			t.Fatalf("a's request %d while the store is down: allowed %v, remaining %d", i, ok, rem)
		}
	}
	if ok, rem := rateCall(t, a, p); ok || rem != 0 {
		t.Fatalf("past the limit counted alone: allowed %v, remaining %d", ok, rem)
	}
	if shared.takes != takes {
		t.Fatalf("%d takes while down", shared.takes-takes)
	}
	clock.Advance(rateRetry)
	shared.mu.Lock()
	shared.down = false
	shared.mu.Unlock()
	// a served 391 alone: they are taken from the window at its next take, which spends it.
	if ok, _ := rateCall(t, a, p); ok {
		t.Fatal("allowed after the window was spent")
	}
	// b still holds the 8 requests left of its block: 108 + 392 = the limit, no more.
	for i := range 9 {
		if ok, _ := rateCall(t, b, p); ok != (i < 8) {
			t.Fatalf("b's request %d after the repayment: allowed %v", i, ok)
		}
	}
	if got := shared.taken[p.TenantID+"|"+time.Date(2026, 6, 9, 10, 0, 0, 0, time.UTC).Format(time.RFC3339)]; got < 500 {
		t.Fatalf("shared window holds %d after the repayment", got)
	}
}

// TestRateLimitSharedConcurrent: concurrent requests of one tenant over three processes
// are allowed exactly up to the limit.
func TestRateLimitSharedConcurrent(t *testing.T) {
	clock := model.NewFakeClock(time.Date(2026, 6, 9, 10, 0, 0, 0, time.UTC))
	ls := rateProcesses(3, clock, &sharedWindows{})
	p := model.Principal{TenantID: model.NewID(), Plan: "starter"}
	var mu sync.Mutex
	allowed := 0
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				w := httptest.NewRecorder()
				if ls[(g+i)%3].allow(context.Background(), w, p) == nil {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if allowed != 500 {
		t.Fatalf("%d of 800 concurrent requests allowed, want 500", allowed)
	}
}
