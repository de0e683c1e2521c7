package engine

import (
	"context"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// DefaultRetentionBatch is the most records one transaction of the retention sweep
// deletes: many short transactions, so that the sweep never holds the write lock long.
const DefaultRetentionBatch = 500

// RetentionReport tells what a retention sweep deleted, and in how many transactions.
type RetentionReport struct {
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

// SweepRetention deletes, in every tenant, the sync batch records, webhook attempt records
// and settled events older than the tenant's retention (its own settings over the node's
// defaults; docs/decisions/0114-retention.md). Each transaction deletes at most the batch
// size. An event is kept while anything may still need it: not settled, a mission of
// its own, or changes the tenant owes its upstream. Completed and failed missions go
// only when the tenant set missions_days. Devices' records, usage counters and the
// ledger are never touched.
func (e *Engine) SweepRetention(ctx context.Context) (RetentionReport, error) {
	var rep RetentionReport
	var tenants []model.Tenant
	if err := e.store.View(ctx, func(tx model.Tx) (err error) {
		tenants, err = tx.Tenants()
		return err
	}); err != nil {
		return rep, err
	}
	now := e.clock.Now()
	for _, t := range tenants {
		r := e.retention.Over(t.Retention)
		if r.SyncBatchesDays > 0 {
			cut := now.Add(-time.Duration(r.SyncBatchesDays) * 24 * time.Hour)
			n, err := e.pruneAll(ctx, &rep, func(tx model.Tx, limit int) (int, error) { return tx.PruneSyncBatches(t.ID, cut, limit) })
			rep.SyncBatches += n
			if err != nil && !model.IsKind(err, model.KindNotFound) { // a tenant deleted meanwhile
				return rep, err
			}
		}
		if r.DeliveryLogDays > 0 {
			cut := now.Add(-time.Duration(r.DeliveryLogDays) * 24 * time.Hour)
			n, err := e.pruneAll(ctx, &rep, func(tx model.Tx, limit int) (int, error) { return tx.PruneDeliveryAttempts(t.ID, cut, limit) })
			rep.DeliveryAttempts += n
			if err != nil && !model.IsKind(err, model.KindNotFound) {
				return rep, err
			}
		}
		// Missions first: the events of those pruned may then go too.
		if r.MissionsDays > 0 {
			cut := now.Add(-time.Duration(r.MissionsDays) * 24 * time.Hour)
			n, err := e.pruneMissions(ctx, &rep, t.ID, cut)
			rep.Missions += n
			if err != nil && !model.IsKind(err, model.KindNotFound) {
				return rep, err
			}
		}
		if r.EventsDays > 0 {
			cut := now.Add(-time.Duration(r.EventsDays) * 24 * time.Hour)
			n, err := e.pruneEvents(ctx, &rep, t.ID, cut)
			rep.Events += n
			if err != nil && !model.IsKind(err, model.KindNotFound) {
				return rep, err
			}
		}
	}
	return rep, nil
}

// pruneEvents deletes a tenant's settled events older than cut that nothing needs.
func (e *Engine) pruneEvents(ctx context.Context, rep *RetentionReport, tenantID string, cut time.Time) (int, error) {
	return e.pruneWalk(ctx, rep, tenantID, func(tx model.Tx, after string) (int, string, error) {
		return tx.PruneEvents(tenantID, after, cut, e.retentionBatch, func(ev *model.Event) (bool, error) {
			return keepEvent(tx, tenantID, ev)
		})
	})
}

// pruneMissions deletes a tenant's completed and failed missions older than cut, and
// releases a code one may still hold.
func (e *Engine) pruneMissions(ctx context.Context, rep *RetentionReport, tenantID string, cut time.Time) (int, error) {
	return e.pruneWalk(ctx, rep, tenantID, func(tx model.Tx, after string) (int, string, error) {
		var gone []*model.Mission
		n, next, err := tx.PruneMissions(tenantID, after, cut, e.retentionBatch, func(m *model.Mission) (bool, error) {
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
			if err := releaseMissionCode(tx, tenantID, m); err != nil {
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
func (e *Engine) pruneWalk(ctx context.Context, rep *RetentionReport, tenantID string,
	step func(tx model.Tx, after string) (int, string, error)) (int, error) {
	total, after := 0, ""
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var n int
		owed := false
		start := time.Now()
		err := e.store.Update(ctx, func(tx model.Tx) (err error) {
			n = 0
			if owed, err = owesUpstream(tx, tenantID); owed || err != nil {
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

// keepEvent reports whether an old event must stay: it is not settled (pending, queued
// offline), a delivery message of it is outstanding, or it has a mission (missions are the
// audit trail, and they name their event).
func keepEvent(tx model.Tx, tenantID string, ev *model.Event) (bool, error) {
	switch ev.Status {
	case model.EventDelivered, model.EventFailed, model.EventClosed:
	default:
		return true, nil
	}
	if ev.Delivery.Outstanding > 0 {
		return true, nil
	}
	missions, err := tx.MissionsOfEvent(tenantID, ev.ID)
	return len(missions) > 0, err
}

// owesUpstream reports whether a tenant with an upstream has changes it has not had
// acknowledged, or history its backfill has not yet put in the change log.
func owesUpstream(tx model.Tx, tenantID string) (bool, error) {
	cfg, err := tx.Upstream(tenantID)
	if model.IsKind(err, model.KindNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if cfg.Backfill != nil && cfg.Backfill.Walking() {
		return true, nil
	}
	end, err := tx.ChangeLogEnd(tenantID)
	return end > cfg.AckedThrough, err
}

// pruneAll runs prune in transactions of at most the batch size until one deletes fewer,
// and returns how many it deleted.
func (e *Engine) pruneAll(ctx context.Context, rep *RetentionReport, prune func(tx model.Tx, limit int) (int, error)) (int, error) {
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var n int
		start := time.Now()
		err := e.store.Update(ctx, func(tx model.Tx) (err error) {
			n, err = prune(tx, e.retentionBatch)
			return err
		})
		if err != nil {
			return total, err
		}
		rep.Transactions++
		rep.MostPerTx = max(rep.MostPerTx, n)
		rep.LongestTx = max(rep.LongestTx, time.Since(start))
		total += n
		if n < e.retentionBatch {
			return total, nil
		}
	}
}

// Retention returns a tenant's retention settings and what is in force.
func (e *Engine) Retention(ctx context.Context, p model.Principal) (*model.RetentionSettings, error) {
	if err := p.Require(model.PermTenantAdmin); err != nil {
		return nil, err
	}
	var out *model.RetentionSettings
	err := e.store.View(ctx, func(tx model.Tx) error {
		t, err := tx.Tenant(p.TenantID)
		if err != nil {
			return err
		}
		out = e.retentionOf(t)
		return nil
	})
	return out, err
}

// UpdateRetention sets a tenant's retention settings (PATCH /v1/tenant/retention).
func (e *Engine) UpdateRetention(ctx context.Context, p model.Principal, in model.RetentionInput, w *model.Write) (*model.RetentionSettings, error) {
	return write(ctx, e, p.TenantID, w, func(tx model.Tx) (*model.RetentionSettings, error) {
		if err := p.Require(model.PermTenantAdmin); err != nil {
			return nil, err
		}
		if err := in.Validate(); err != nil {
			return nil, err
		}
		t, err := tx.Tenant(p.TenantID)
		if err != nil {
			return nil, err
		}
		r := model.Retention{}
		if t.Retention != nil {
			r = *t.Retention
		}
		if in.SyncBatchesDays != nil {
			r.SyncBatchesDays = *in.SyncBatchesDays
		}
		if in.DeliveryLogDays != nil {
			r.DeliveryLogDays = *in.DeliveryLogDays
		}
		if in.EventsDays != nil {
			r.EventsDays = *in.EventsDays
		}
		if in.MissionsDays != nil {
			r.MissionsDays = *in.MissionsDays
		}
		t.Retention = &r
		if r == (model.Retention{}) {
			t.Retention = nil
		}
		t.UpdatedAt = model.At(e.clock.Now())
		if err := tx.PutTenant(t); err != nil {
			return nil, err
		}
		return e.retentionOf(t), nil
	})
}

// retentionOf is the answer of the retention endpoints for t.
func (e *Engine) retentionOf(t *model.Tenant) *model.RetentionSettings {
	out := &model.RetentionSettings{Effective: e.retention.Over(t.Retention)}
	if t.Retention != nil {
		out.Tenant = *t.Retention
	}
	return out
}
