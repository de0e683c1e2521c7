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
	Transactions     int `json:"transactions"`
	// MostPerTx is the most records one transaction deleted (at most the batch size).
	MostPerTx int `json:"most_per_tx"`
	// LongestTx is the longest transaction, measured (not by the engine's clock).
	LongestTx time.Duration `json:"longest_tx"`
}

// SweepRetention deletes, in every tenant, the sync batch records and webhook attempt
// records older than the tenant's retention (its own settings over the node's defaults;
// docs/decisions.md, "Retention"). Each transaction deletes at most the batch size.
// Events, missions, devices' records, usage counters and the ledger are never touched.
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
	}
	return rep, nil
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
