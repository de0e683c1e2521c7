package engine

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// periodKeyPrefix prefixes the meta keys that hold when a periodic job last ran on a
// shared store (claimPeriod).
const periodKeyPrefix = "period/"

// claimPeriod reports whether this process runs the periodic job name now. A node alone
// on its store (bbolt) always does. On a store shared by several processes, the job runs
// once per period across them: the first process whose timer fires at least 9/10 of
// every after the last run claims the period by writing its time under the job's meta key,
// in a transaction the store serializes against the others' claims
// (docs/decisions/0107-periodic-work-once.md). The margin absorbs the drift between the
// processes' timers; a claim in the far future (a clock set wrong) is ignored.
func (e *Engine) claimPeriod(ctx context.Context, name string, every time.Duration) (bool, error) {
	if !e.shared {
		return true, nil
	}
	key := periodKeyPrefix + name
	var claimed bool
	err := e.store.Update(ctx, func(tx model.Tx) error {
		claimed = false
		now := e.clock.Now()
		v, err := tx.Meta(key)
		if err != nil {
			return err
		}
		if last, perr := time.Parse(time.RFC3339Nano, string(v)); v != nil && perr == nil &&
			now.Sub(last) < every*9/10 && last.Before(now.Add(every)) {
			return nil
		}
		claimed = true
		return tx.PutMeta(key, []byte(now.UTC().Format(time.RFC3339Nano)))
	})
	return claimed && err == nil, err
}

// leaseKeyPrefix prefixes the meta keys of the leases of work that one process of a
// shared store does at a time (holdLease).
const leaseKeyPrefix = "lease/"

// runLeases holds the end of the leases this run holds in a shared store (holdLease).
type runLeases struct {
	mu sync.Mutex
	m  map[string]time.Time
}

// runLease is the meta value of a lease: the run that holds it, until when.
type runLease struct {
	Run   string    `json:"run"`
	Until time.Time `json:"until"`
}

// holdLease reports whether this run holds the lease name, for at least d/2 more when it
// does: work that one process of a shared store does at a time (the upstream pusher). A
// free or ended lease is taken, and the lease is renewed in the store once less than d/2
// of it is left, so that the holder writes it about twice per d. A node alone on its
// store (bbolt) always holds it. Should the holder die, another process takes the lease
// once it ends; a holder that stops releases it (releaseLeases).
func (e *Engine) holdLease(ctx context.Context, name string, d time.Duration) (bool, error) {
	if !e.shared {
		return true, nil
	}
	s := &e.leases
	now := e.clock.Now()
	s.mu.Lock()
	until, ok := s.m[name]
	s.mu.Unlock()
	if ok && until.Sub(now) > d/2 {
		return true, nil
	}
	var held bool
	err := e.store.Update(ctx, func(tx model.Tx) error {
		held = false
		v, err := tx.Meta(leaseKeyPrefix + name)
		if err != nil {
			return err
		}
		var cur runLease
		if v != nil && json.Unmarshal(v, &cur) == nil && cur.Run != e.runID && cur.Until.After(now) &&
			cur.Until.Before(now.Add(2*d)) { // a lease past 2d comes from a clock set wrong
			return nil
		}
		held, until = true, now.Add(d)
		b, err := json.Marshal(runLease{Run: e.runID, Until: until.UTC()})
		if err != nil {
			return err
		}
		return tx.PutMeta(leaseKeyPrefix+name, b)
	})
	held = held && err == nil
	s.mu.Lock()
	if held {
		s.m[name] = until
	} else {
		delete(s.m, name)
	}
	s.mu.Unlock()
	return held, err
}

// releaseLeases ends the leases this run holds, so that another process takes the work
// over at once rather than when they end.
func (e *Engine) releaseLeases(ctx context.Context) {
	s := &e.leases
	s.mu.Lock()
	names := make([]string, 0, len(s.m))
	for name := range s.m {
		names = append(names, name)
	}
	clear(s.m)
	s.mu.Unlock()
	for _, name := range names {
		err := e.store.Update(ctx, func(tx model.Tx) error {
			v, err := tx.Meta(leaseKeyPrefix + name)
			var cur runLease
			if err != nil || v == nil || json.Unmarshal(v, &cur) != nil || cur.Run != e.runID {
				return err
			}
			b, err := json.Marshal(runLease{})
			if err != nil {
				return err
			}
			return tx.PutMeta(leaseKeyPrefix+name, b)
		})
		if err != nil {
			e.log.Error("releasing a lease", "lease", name, "err", err)
		}
	}
}
