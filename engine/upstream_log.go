package engine

import (
	"context"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// The change log of upstream sync is written by a wrapper of the engine's Store: every
// read-write transaction hands the use cases a Tx whose PutEvent, PutMission and
// PutDispatch also append to the tenant's change log, in the same transaction, when the
// tenant has an upstream. No use case has to remember it. The same wrapper gathers the
// usage counters a use case adds (count) and writes each one once when the use case
// returns, still inside its transaction: a sync batch of 1,000 events writes a handful of
// counters, not two per event.

// logStore is the Store the engine uses: the store it was given, with the change log
// written beside every change of an event, dispatch or mission.
type logStore struct {
	model.Store
	up *upstreamRunner
}

// Update implements Store.
func (s *logStore) Update(ctx context.Context, fn func(model.Tx) error) error {
	return s.Store.Update(ctx, s.wrap(fn))
}

// Batch implements Store.
func (s *logStore) Batch(ctx context.Context, fn func(model.Tx) error) error {
	return s.Store.Batch(ctx, s.wrap(fn))
}

// wrap runs fn with a logTx and then writes the usage it gathered.
func (s *logStore) wrap(fn func(model.Tx) error) func(model.Tx) error {
	return func(tx model.Tx) error {
		lt := &logTx{Tx: tx, up: s.up}
		if err := fn(lt); err != nil {
			return err
		}
		return lt.flushUsage()
	}
}

// logTx is a read-write Tx that appends to the change log and gathers usage counters.
type logTx struct {
	model.Tx
	up    *upstreamRunner
	usage []usageAdd
	// links holds the upstream settings of the tenants this transaction read (nil for
	// none).
	links map[string]*model.UpstreamConfig
}

// usageAdd is a usage counter to add when the use case returns.
type usageAdd struct {
	tenantID, day, metric string
	n                     uint64
}

// addUsage gathers n for a counter (a few distinct counters per transaction: a list).
func (t *logTx) addUsage(tenantID, day, metric string, n uint64) {
	for i := range t.usage {
		if u := &t.usage[i]; u.metric == metric && u.day == day && u.tenantID == tenantID {
			u.n += n
			return
		}
	}
	t.usage = append(t.usage, usageAdd{tenantID: tenantID, day: day, metric: metric, n: n})
}

// flushUsage writes the gathered counters.
func (t *logTx) flushUsage() error {
	for _, u := range t.usage {
		if err := t.Tx.AddUsage(u.tenantID, u.day, u.metric, u.n); err != nil {
			return err
		}
	}
	t.usage = nil
	return nil
}

// PutEvent implements Tx.
func (t *logTx) PutEvent(tenantID string, ev *model.Event) error {
	if err := t.Tx.PutEvent(tenantID, ev); err != nil {
		return err
	}
	return t.logChange(tenantID, model.ChangeEvent, ev.ID)
}

// PutMission implements Tx.
func (t *logTx) PutMission(tenantID string, m *model.Mission) error {
	if err := t.Tx.PutMission(tenantID, m); err != nil {
		return err
	}
	return t.logChange(tenantID, model.ChangeMission, m.ID)
}

// PutDispatch implements Tx.
func (t *logTx) PutDispatch(tenantID string, d *model.Dispatch) error {
	if err := t.Tx.PutDispatch(tenantID, d); err != nil {
		return err
	}
	return t.logChange(tenantID, model.ChangeDispatch, d.ID)
}

// logChange appends a change to the tenant's log when the tenant has an upstream, and
// wakes the pusher once the transaction commits. While the tenant's history is being put
// in the log (a backfill), a record the walk has not reached yet gets no entry of its
// own: the walk logs it later, as it stands then, so that every record enters the log
// after what it refers to (upstream_backfill.go).
func (t *logTx) logChange(tenantID, kind, id string) error {
	u := t.up
	st, err := u.configured(t, tenantID)
	if err != nil || st == linkNone {
		return err
	}
	if st == linkWalking {
		b, err := t.walk(tenantID)
		if err != nil {
			return err
		}
		if !b.Covers(kind, id) {
			t.OnCommit(u.signal) // the walk goes on, even while the link waits for a retry
			return nil
		}
	}
	if _, err := t.AppendChange(tenantID, model.LogChange{Kind: kind, ID: id, At: model.At(u.e.clock.Now())}); err != nil {
		return err
	}
	t.OnCommit(u.signal)
	return nil
}

// walk returns where the backfill of a tenant's link stands, read once per transaction
// (a sync batch of a thousand events reads the settings once).
func (t *logTx) walk(tenantID string) (*model.UpstreamBackfill, error) {
	c, err := t.settings(tenantID)
	if err != nil || c == nil {
		return nil, err
	}
	return c.Backfill, nil
}

// settings returns a tenant's upstream settings (nil when it has none), read once per
// transaction: what committed elsewhere is not seen within it, and PutUpstream, the one
// change made through it, drops what was read.
func (t *logTx) settings(tenantID string) (*model.UpstreamConfig, error) {
	if c, ok := t.links[tenantID]; ok {
		return c, nil
	}
	c, err := t.Tx.Upstream(tenantID)
	if model.IsKind(err, model.KindNotFound) {
		err, c = nil, nil
	}
	if err != nil {
		return nil, err
	}
	if t.links == nil {
		t.links = map[string]*model.UpstreamConfig{}
	}
	t.links[tenantID] = c
	return c, nil
}

// PutUpstream implements Tx: the settings read by settings are read again.
func (t *logTx) PutUpstream(c *model.UpstreamConfig) error {
	delete(t.links, c.TenantID)
	return t.Tx.PutUpstream(c)
}

// What configured knows of a tenant's link.
const (
	linkNone    uint8 = iota // no upstream: nothing is logged
	linkLogging              // every change is logged
	linkWalking              // a backfill walks the history: changes it covers are logged
)

// configured says whether a tenant has an upstream and whether its history is being
// walked. The set of such tenants is cached; a change of settings, or the end of a walk,
// drops the cache inside its own transaction, and write transactions are serialized, so
// the next one reads the set again from what committed.
func (u *upstreamRunner) configured(t *logTx, tenantID string) (uint8, error) {
	tx := t.Tx
	if u.e.sched.shared {
		// Another process may set or remove the upstream, or end a walk, at any time, in a
		// transaction this one does not see: the tenant's settings are read in tx, once.
		c, err := t.settings(tenantID)
		if err != nil || c == nil {
			return linkNone, err
		}
		if c.Backfill.Walking() {
			return linkWalking, nil
		}
		return linkLogging, nil
	}
	set := u.tenants.Load()
	if set == nil {
		ids, err := tx.UpstreamTenants()
		if err != nil {
			return linkNone, err
		}
		m := make(map[string]uint8, len(ids))
		for _, id := range ids {
			c, err := tx.Upstream(id)
			if err != nil {
				return linkNone, err
			}
			m[id] = linkLogging
			if c.Backfill.Walking() {
				m[id] = linkWalking
			}
		}
		set = &m
		u.tenants.Store(set)
	}
	return (*set)[tenantID], nil
}

// settingsChanged is called within the transaction that changes a tenant's upstream
// settings: the cached set of tenants is dropped now (no other write can run until this
// one ends) and again after commit, and the pusher looks at the settings again.
func (u *upstreamRunner) settingsChanged(tx model.Tx) {
	u.tenants.Store(nil)
	tx.OnCommit(func() {
		u.tenants.Store(nil)
		u.dirty.Store(true)
		u.signal()
	})
}

// signal wakes the pusher without blocking.
func (u *upstreamRunner) signal() {
	select {
	case u.wake <- struct{}{}:
	default:
	}
}
