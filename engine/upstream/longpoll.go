package upstream

import (
	"context"
	"sync"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/writes"
)

// The long poll of the downstream (docs/decisions/0211-downstream-long-poll.md): a site at
// the end of its central node's log asks to wait (`wait`, seconds); the central node holds
// the pull until the log has news for the tenant, or the wait ends, and answers as a pull
// answers. A commit of this process wakes the waiting pulls at once (WakeDown); on a store
// shared by several processes, one goroutine a process reads the ends of the waited logs
// every downWatchEvery, as the stream's change feed reads its rows, and wakes them too.

// MaxDownWait is the longest wait a pull may ask for, in seconds: below the upstream
// client's timeout (30 s) and the server's write timeout (60 s).
const MaxDownWait = 20

// downWatchEvery is how often a process of a shared store reads the ends of the logs its
// pulls wait on: what another process appended reaches them within it.
const downWatchEvery = 100 * time.Millisecond

// downHub holds the pulls that wait, by tenant.
type downHub struct {
	mu       sync.Mutex
	waits    map[string]*downWait
	watching bool // the shared store's watch runs
}

// downWait is the wake of a tenant's waiting pulls: closed at the log's next news.
type downWait struct {
	ch chan struct{}
	// after is the lowest cursor waited on: the watch wakes them when the end passes it.
	after int64
	n     int
}

// waitDown registers a pull of tenantID at cursor after; the channel closes at the log's next
// news, and release ends the registration.
func (u *Runner) waitDown(tenantID string, after int64) (<-chan struct{}, func()) {
	h := &u.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waits == nil {
		h.waits = map[string]*downWait{}
	}
	w := h.waits[tenantID]
	if w == nil {
		w = &downWait{ch: make(chan struct{}), after: after}
		h.waits[tenantID] = w
	}
	w.n++
	w.after = min(w.after, after)
	if u.shared && !h.watching {
		h.watching = true
		go u.watchDown()
	}
	return w.ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if w.n--; w.n == 0 && h.waits[tenantID] == w {
			delete(h.waits, tenantID)
		}
	}
}

// notifyDown wakes the pulls waiting on a tenant's log.
func (u *Runner) notifyDown(tenantID string) {
	h := &u.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if w := h.waits[tenantID]; w != nil {
		delete(h.waits, tenantID)
		close(w.ch)
	}
}

// WakeDown is the pre-commit hook that wakes, once tx commits, the pulls waiting on the
// downstream logs it appends to (LogDown appends them).
func (u *Runner) WakeDown(tx model.Tx) error {
	seen := map[string]bool{}
	for _, c := range writes.Changes(tx) {
		if model.DownKinds[c.Kind] && !seen[c.TenantID] {
			seen[c.TenantID] = true
			id := c.TenantID
			tx.OnCommit(func() { u.notifyDown(id) })
		}
	}
	return nil
}

// watchDown reads, while pulls wait, the ends of their tenants' logs every
// downWatchEvery and wakes those whose log passed their cursor: what the other processes
// of a shared store appended.
func (u *Runner) watchDown() {
	t := time.NewTicker(downWatchEvery)
	defer t.Stop()
	for range t.C {
		h := &u.hub
		h.mu.Lock()
		if len(h.waits) == 0 {
			h.watching = false
			h.mu.Unlock()
			return
		}
		after := make(map[string]int64, len(h.waits))
		for id, w := range h.waits {
			after[id] = w.after
		}
		h.mu.Unlock()
		var news []string
		err := u.store.View(context.Background(), func(tx model.Tx) error {
			for id, a := range after {
				_, end, err := tx.DownBounds(id)
				if err != nil {
					return err
				}
				if end != a {
					news = append(news, id)
				}
			}
			return nil
		})
		if err != nil {
			u.log.Warn("downstream: reading the logs' ends for the waiting pulls", "err", err)
		}
		for _, id := range news {
			u.notifyDown(id)
		}
	}
}

// PullWait answers a pull as Pull does; a pull at the log's end that asks to wait
// (in.Wait seconds, at most MaxDownWait) is held until the log has news for the tenant,
// the wait ends or ctx ends, and answered then.
func (u *Runner) PullWait(ctx context.Context, p model.Principal, in model.DownPullInput) (*model.DownPull, error) {
	if in.Wait < 0 || in.Wait > MaxDownWait {
		return nil, model.Invalid("wait", "wait must be between 0 and %d seconds", MaxDownWait)
	}
	if in.Wait == 0 {
		return u.Pull(ctx, p, in)
	}
	timer := time.NewTimer(time.Duration(in.Wait) * time.Second)
	defer timer.Stop()
	for {
		wake, release := u.waitDown(p.TenantID, in.After)
		ans, err := u.Pull(ctx, p, in)
		if err != nil || ans.Snapshot || ans.End != in.After {
			release()
			return ans, err
		}
		select {
		case <-wake:
			release()
		case <-timer.C:
			release()
			return ans, nil
		case <-ctx.Done():
			release()
			return ans, nil
		}
	}
}
