package upstream

import (
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/writes"
)

// The change log of upstream sync is written by a pre-commit hook (LogChanges, given to
// the engine's writes.Store at its construction): a use case that writes an event,
// dispatch or mission says so with writes.Changed, and before its transaction commits the
// hook appends each such record to the tenant's change log when the tenant has an
// upstream.

// LogChanges is the pre-commit hook of the change log: it appends the changes recorded
// in tx (writes.Changed) to their tenants' logs.
func (u *Runner) LogChanges(tx model.Tx) error {
	changes := writes.Changes(tx)
	if len(changes) == 0 {
		return nil
	}
	l := &logging{tx: tx}
	for _, c := range changes {
		if c.Kind == model.DownZone {
			// A zone of this node's own goes up too, under the key of its code
			// (docs/decisions/0204-site-zone-collisions.md).
			if err := u.logChange(l, c.TenantID, model.ChangeSiteZone, model.SiteZoneKey(c.ID)); err != nil {
				return err
			}
		}
		if model.DownKinds[c.Kind] {
			continue // the downstream log's (LogDown)
		}
		if err := u.logChange(l, c.TenantID, c.Kind, c.ID); err != nil {
			return err
		}
	}
	return nil
}

// logging is the state of one run of logChanges: the upstream settings of the tenants it
// read (nil for none), read once (a sync batch of a thousand events reads them once).
type logging struct {
	tx    Tx
	links map[string]*model.UpstreamConfig
}

// logChange appends a change to the tenant's log when the tenant has an upstream, and
// wakes the pusher once the transaction commits. While the tenant's history is being put
// in the log (a backfill), a record the walk has not reached yet gets no entry of its
// own: the walk logs it later, as it stands then, so that every record enters the log
// after what it refers to (backfill.go).
func (u *Runner) logChange(l *logging, tenantID, kind, id string) error {
	t := l.tx
	st, err := u.configured(l, tenantID)
	if err != nil || st == linkNone {
		return err
	}
	if st == linkWalking {
		b, err := l.walk(tenantID)
		if err != nil {
			return err
		}
		if !b.Covers(kind, id) {
			t.OnCommit(u.signal) // the walk goes on, even while the link waits for a retry
			return nil
		}
	}
	if _, err := t.AppendChange(tenantID, model.LogChange{Kind: kind, ID: id, At: model.At(u.clock.Now())}); err != nil {
		return err
	}
	t.OnCommit(u.signal)
	return nil
}

// walk returns where the backfill of a tenant's link stands.
func (l *logging) walk(tenantID string) (*model.UpstreamBackfill, error) {
	c, err := l.settings(tenantID)
	if err != nil || c == nil {
		return nil, err
	}
	return c.Backfill, nil
}

// settings returns a tenant's upstream settings (nil when it has none), read once per
// run of the hook: what committed elsewhere is not seen within the transaction.
func (l *logging) settings(tenantID string) (*model.UpstreamConfig, error) {
	if c, ok := l.links[tenantID]; ok {
		return c, nil
	}
	c, err := l.tx.Upstream(tenantID)
	if model.IsKind(err, model.KindNotFound) {
		err, c = nil, nil
	}
	if err != nil {
		return nil, err
	}
	if l.links == nil {
		l.links = map[string]*model.UpstreamConfig{}
	}
	l.links[tenantID] = c
	return c, nil
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
func (u *Runner) configured(l *logging, tenantID string) (uint8, error) {
	tx := l.tx
	if u.shared {
		// Another process may set or remove the upstream, or end a walk, at any time, in a
		// transaction this one does not see: the tenant's settings are read in tx, once.
		c, err := l.settings(tenantID)
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
func (u *Runner) settingsChanged(tx Tx) {
	u.tenants.Store(nil)
	tx.OnCommit(func() {
		u.tenants.Store(nil)
		u.dirty.Store(true)
		u.signal()
	})
}

// signal wakes the pusher without blocking.
func (u *Runner) signal() {
	select {
	case u.wake <- struct{}{}:
	default:
	}
}
