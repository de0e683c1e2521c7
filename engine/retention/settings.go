package retention

import (
	"context"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/writes"
)

// Settings runs the use cases of retention as the server and the command line call them:
// a tenant's retention settings, and the sweep run by hand. The engine embeds it, so that
// they are the Engine's.
type Settings struct {
	s     *Sweeper
	store model.Store
	clock model.Clock
	frame writes.Frame
}

// NewSettings returns the use cases of s over store; frame is the engine's write frame.
func NewSettings(s *Sweeper, store model.Store, clock model.Clock, frame writes.Frame) *Settings {
	return &Settings{s: s, store: store, clock: clock, frame: frame}
}

// SweepRetention deletes, in every tenant, the records older than the tenant's retention
// (engine/retention).
func (e *Settings) SweepRetention(ctx context.Context) (Report, error) {
	return e.s.Sweep(ctx)
}

// Retention returns a tenant's retention settings and what is in force.
func (e *Settings) Retention(ctx context.Context, p model.Principal) (*model.RetentionSettings, error) {
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
func (e *Settings) UpdateRetention(ctx context.Context, p model.Principal, in model.RetentionInput, w *model.Write) (*model.RetentionSettings, error) {
	return writes.Do(ctx, e.frame, p.TenantID, w, func(tx model.Tx) (*model.RetentionSettings, error) {
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
		if err := t.SettingsConflict(); err != nil {
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
		writes.Changed(tx, t.ID, model.DownSettings, t.ID)
		return e.retentionOf(t), nil
	})
}

// retentionOf is the answer of the retention endpoints for t.
func (e *Settings) retentionOf(t *model.Tenant) *model.RetentionSettings {
	out := &model.RetentionSettings{Effective: e.s.Defaults.Over(t.Retention)}
	if t.Retention != nil {
		out.Tenant = *t.Retention
	}
	return out
}
