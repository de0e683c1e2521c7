package auth

import (
	"sync"
	"time"
)

// maxDeadlines bounds the deadlines a run keeps in memory. Past it (a flood of locked
// emails), the ones ended on both clocks are dropped, and a new one that still does not
// fit is judged by its stored wall time alone.
const maxDeadlines = 10000

// deadlines holds the monotonic ends of the stored wall-clock deadlines this run set: a
// login lock-out's locked_until, a rotated key's expires_at. While the node runs, such a
// deadline ends when its duration has elapsed on the clock's monotonic reading, however
// the wall clock steps; after a restart, or in another process of a shared store, the
// stored wall time is all there is and rules
// (docs/decisions/0128-timers-clock-steps.md). It is safe for concurrent use.
type deadlines struct {
	mu sync.Mutex
	m  map[string]deadline
}

// deadline is one stored wall time and its end on the monotonic reading.
type deadline struct {
	wall time.Time
	mono time.Duration
}

func newDeadlines() *deadlines { return &deadlines{m: map[string]deadline{}} }

// set records that the deadline key, stored as wall, ends at mono (monotonic reading).
// An ended deadline is kept while the wall clock has not passed its stored time too:
// dropped, it would be judged by the wall clock again, and a step back would revive it.
func (d *deadlines) set(key string, wall time.Time, mono time.Duration, wallNow time.Time, monoNow time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.m[key]; !ok && len(d.m) >= maxDeadlines {
		for k, v := range d.m {
			if v.mono <= monoNow && !v.wall.After(wallNow) {
				delete(d.m, k)
			}
		}
		if len(d.m) >= maxDeadlines {
			return
		}
	}
	d.m[key] = deadline{wall: wall, mono: mono}
}

// left returns how long the deadline key stored as wall still runs: on the monotonic
// reading when this run set that very deadline, on the wall clock otherwise (0 when it
// has ended).
func (d *deadlines) left(key string, wall, wallNow time.Time, monoNow time.Duration) time.Duration {
	d.mu.Lock()
	v, ok := d.m[key]
	if ok && !v.wall.Equal(wall) {
		// The stored deadline changed behind this run (another process, a restore).
		delete(d.m, key)
		ok = false
	}
	d.mu.Unlock()
	if ok {
		return max(v.mono-monoNow, 0)
	}
	return max(wall.Sub(wallNow), 0)
}

// setDeadline records that the stored deadline key (wall) ends at mono on the monotonic
// reading; it is called once the write of wall committed.
func (e *Service) setDeadline(key string, wall time.Time, mono time.Duration) {
	e.deadlines.set(key, wall, mono, e.clock.Now(), e.clock.Mono())
}

// timeLeft returns how long the stored deadline key (wall) still runs (deadlines.left).
func (e *Service) timeLeft(key string, wall time.Time) time.Duration {
	return e.deadlines.left(key, wall, e.clock.Now(), e.clock.Mono())
}
