// Package retention is the retention sweep of a node: in every tenant, the sync batch
// records, webhook attempt records, settled events and (when the tenant asks) ended
// missions older than the tenant's retention are deleted, a batch per transaction
// (docs/decisions/0114-retention.md).
//
// A Sweeper is built from the store, the clock, the node's defaults, and, as a function,
// what it needs of the use cases: releasing the code of a mission it deletes. It uses
// engine/upstream (the changes a tenant still owes its upstream hold its events back) and
// never the engine.
package retention

import (
	"context"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/upstream"
)

// DefaultBatch is the most records one transaction of the sweep deletes: many short
// transactions, so that the sweep never holds the write lock long.
const DefaultBatch = 500

// Report tells what a retention sweep deleted, and in how many transactions.
type Report struct {
	SyncBatches      int `json:"sync_batches"`
	DeliveryAttempts int `json:"delivery_attempts"`
	Events           int `json:"events"`
	Missions         int `json:"missions"`
	// Deferred counts the tenants whose events were left for a later sweep because they
	// owe their upstream changes.
	Deferred     int `json:"deferred"`
	Transactions int `json:"transactions"`
	// MostPerTx is the most records one transaction deleted (at most the batch size).
	MostPerTx int `json:"most_per_tx"`
	// LongestTx is the longest transaction, measured (not by the engine's clock).
	LongestTx time.Duration `json:"longest_tx"`
}

// Tx is what the sweep reads and deletes of a transaction.
type Tx interface {
	model.RetentionTx
	Tenants() ([]model.Tenant, error)
	MissionsOfEvent(tenantID, eventID string) ([]model.Mission, error)
	Upstream(tenantID string) (*model.UpstreamConfig, error)
	ChangeLogEnd(tenantID string) (int64, error)
}

var _ Tx = model.Tx(nil)

// Sweeper runs the retention sweep.
type Sweeper struct {
	store model.Store
	clock model.Clock
	// Defaults is the node's retention (zero: everything kept for ever), under each
	// tenant's own settings.
	Defaults model.Retention
	batch    int
	// releaseCode frees the SMS code a deleted mission may still hold.
	releaseCode func(tx model.Tx, tenantID string, m *model.Mission) error
}

// New returns a Sweeper over store; batch is the most records a transaction deletes
// (DefaultBatch when zero), releaseCode frees the code of a mission the sweep deletes.
func New(store model.Store, clock model.Clock, defaults model.Retention, batch int,
	releaseCode func(tx model.Tx, tenantID string, m *model.Mission) error) *Sweeper {
	if batch <= 0 {
		batch = DefaultBatch
	}
	return &Sweeper{store: store, clock: clock, Defaults: defaults, batch: batch, releaseCode: releaseCode}
}

// Sweep deletes, in every tenant, the sync batch records, webhook attempt records
// and settled events older than the tenant's retention (its own settings over the node's
// defaults; docs/decisions/0114-retention.md). Each transaction deletes at most the batch
// size. An event is kept while anything may still need it: not settled, a mission of
// its own, or changes the tenant owes its upstream. Completed and failed missions go
// only when the tenant set missions_days. Devices' records, usage counters and the
// ledger are never touched.
func (s *Sweeper) Sweep(ctx context.Context) (Report, error) {
	var rep Report
	var tenants []model.Tenant
	if err := s.store.View(ctx, func(tx model.Tx) (err error) {
		tenants, err = tx.Tenants()
		return err
	}); err != nil {
		return rep, err
	}
	now := s.clock.Now()
	for _, t := range tenants {
		r := s.Defaults.Over(t.Retention)
		if r.SyncBatchesDays > 0 {
			cut := now.Add(-time.Duration(r.SyncBatchesDays) * 24 * time.Hour)
			n, err := s.pruneAll(ctx, &rep, func(tx model.Tx, limit int) (int, error) { return tx.PruneSyncBatches(t.ID, cut, limit) })
			rep.SyncBatches += n
			if err != nil && !model.IsKind(err, model.KindNotFound) { // a tenant deleted meanwhile
				return rep, err
			}
		}
		if r.DeliveryLogDays > 0 {
			cut := now.Add(-time.Duration(r.DeliveryLogDays) * 24 * time.Hour)
			n, err := s.pruneAll(ctx, &rep, func(tx model.Tx, limit int) (int, error) { return tx.PruneDeliveryAttempts(t.ID, cut, limit) })
			rep.DeliveryAttempts += n
			if err != nil && !model.IsKind(err, model.KindNotFound) {
				return rep, err
			}
		}
		// Missions first: the events of those pruned may then go too.
		if r.MissionsDays > 0 {
			cut := now.Add(-time.Duration(r.MissionsDays) * 24 * time.Hour)
			n, err := s.pruneMissions(ctx, &rep, t.ID, cut)
			rep.Missions += n
			if err != nil && !model.IsKind(err, model.KindNotFound) {
				return rep, err
			}
		}
		if r.EventsDays > 0 {
			cut := now.Add(-time.Duration(r.EventsDays) * 24 * time.Hour)
			n, err := s.pruneEvents(ctx, &rep, t.ID, cut)
			rep.Events += n
			if err != nil && !model.IsKind(err, model.KindNotFound) {
				return rep, err
			}
		}
	}
	return rep, nil
}

// pruneEvents deletes a tenant's settled events older than cut that nothing needs.
func (s *Sweeper) pruneEvents(ctx context.Context, rep *Report, tenantID string, cut time.Time) (int, error) {
	return s.pruneWalk(ctx, rep, tenantID, func(tx model.Tx, after string) (int, string, error) {
		return tx.PruneEvents(tenantID, after, cut, s.batch, func(ev *model.Event) (bool, error) {
			return keepEvent(tx, tenantID, ev)
		})
	})
}

// pruneMissions deletes a tenant's completed and failed missions older than cut, and
// releases a code one may still hold.
func (s *Sweeper) pruneMissions(ctx context.Context, rep *Report, tenantID string, cut time.Time) (int, error) {
	return s.pruneWalk(ctx, rep, tenantID, func(tx model.Tx, after string) (int, string, error) {
		var gone []*model.Mission
		n, next, err := tx.PruneMissions(tenantID, after, cut, s.batch, func(m *model.Mission) (bool, error) {
			if m.Status != model.MissionCompleted && m.Status != model.MissionFailed {
				return true, nil
			}
			gone = append(gone, m)
			return false, nil
		})
		if err != nil {
			return 0, "", err
		}
		for _, m := range gone {
			if err := s.releaseCode(tx, tenantID, m); err != nil {
				return 0, "", err
			}
		}
		return n, next, nil
	})
}

// pruneWalk runs step, one transaction each, from the oldest record on, until it has
// walked them all, and returns how many it deleted. When the tenant owes its upstream
// changes (checked in every transaction) nothing is pruned until the upstream has
// acknowledged them: the walk ends, counted as deferred.
func (s *Sweeper) pruneWalk(ctx context.Context, rep *Report, tenantID string,
	step func(tx model.Tx, after string) (int, string, error)) (int, error) {
	total, after := 0, ""
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var n int
		owed := false
		start := time.Now()
		err := s.store.Update(ctx, func(tx model.Tx) (err error) {
			n = 0
			if owed, err = upstream.Owes(tx, tenantID); owed || err != nil {
				return err
			}
			n, after, err = step(tx, after)
			return err
		})
		if err != nil {
			return total, err
		}
		if owed {
			rep.Deferred++
			return total, nil
		}
		rep.Transactions++
		rep.MostPerTx = max(rep.MostPerTx, n)
		rep.LongestTx = max(rep.LongestTx, time.Since(start))
		total += n
		if after == "" {
			return total, nil
		}
	}
}

// keepEvent reports whether an old event must stay: it is open (not closed: an incident
// still waiting, whatever its age; docs/decisions/0170-open-events.md), a delivery message
// of it is outstanding, or it has a mission (missions are the audit trail, and they name
// their event).
func keepEvent(tx Tx, tenantID string, ev *model.Event) (bool, error) {
	if ev.Status != model.EventClosed {
		return true, nil
	}
	if ev.Delivery.Outstanding > 0 {
		return true, nil
	}
	missions, err := tx.MissionsOfEvent(tenantID, ev.ID)
	return len(missions) > 0, err
}

// pruneAll runs prune in transactions of at most the batch size until one deletes fewer,
// and returns how many it deleted.
func (s *Sweeper) pruneAll(ctx context.Context, rep *Report, prune func(tx model.Tx, limit int) (int, error)) (int, error) {
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var n int
		start := time.Now()
		err := s.store.Update(ctx, func(tx model.Tx) (err error) {
			n, err = prune(tx, s.batch)
			return err
		})
		if err != nil {
			return total, err
		}
		rep.Transactions++
		rep.MostPerTx = max(rep.MostPerTx, n)
		rep.LongestTx = max(rep.LongestTx, time.Since(start))
		total += n
		if n < s.batch {
			return total, nil
		}
	}
}
